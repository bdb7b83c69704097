package device

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// scheduleFake schedules tasks whose runs take the given per-core times (a task of
// n cores each taking its own time), returning the schedule and the run order.
func scheduleFake(t *testing.T, chip *Chip, tasks []DispatchTask, cores [][]int64, opts DispatchOptions) (*Schedule, []int) {
	t.Helper()
	var order []int
	s, err := ScheduleTasks(chip, tasks, opts, func(k int, slot TaskSlot) (*TaskStats, error) {
		order = append(order, k)
		st := &TaskStats{CoreCycles: cores[k]}
		st.setTime(chip, slices.Max(cores[k]))
		return st, nil
	})
	require.NoError(t, err)
	return s, order
}

func TestDispatcherOffIsTheSumOfTasks(t *testing.T) {
	chip := preset(t, "a2")
	tasks := []DispatchTask{{Kind: OnCube, Cores: 24}, {Kind: OnVector, Cores: 8}, {Deps: []int{0}, Kind: OnAICore, Cores: 3}}
	cores := [][]int64{slices.Repeat([]int64{9000}, 24), slices.Repeat([]int64{5000}, 8), {7000, 6000, 1000}}
	s, order := scheduleFake(t, chip, tasks, cores, DispatchOptions{})
	var sum int64
	for k := range tasks {
		st := &TaskStats{}
		st.setTime(chip, slices.Max(cores[k]))
		sum += st.Cycles
		if k > 0 {
			assert.Equal(t, s.Tasks[k-1].Complete, s.Tasks[k].Dispatch, "task %d starts when the one before completes", k)
		}
	}
	assert.Equal(t, sum, s.Cycles)
	assert.Equal(t, []int{0, 1, 2}, order)
}

func TestIndependentTasksRunOnDisjointCores(t *testing.T) {
	chip := preset(t, "a2")
	// Two independent cube tasks of 8 cores each, then one needing both.
	tasks := []DispatchTask{{Kind: OnCube, Cores: 8}, {Kind: OnCube, Cores: 8}, {Deps: []int{0, 1}, Kind: OnCube, Cores: 24}}
	cores := [][]int64{slices.Repeat([]int64{50000}, 8), slices.Repeat([]int64{50000}, 8), slices.Repeat([]int64{20000}, 24)}
	seq, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{})
	con, order := scheduleFake(t, chip, tasks, cores, DispatchOptions{Concurrent: true})
	assert.Less(t, con.Cycles, seq.Cycles)
	assert.Equal(t, []int{0, 1, 2}, order)
	a, b := con.Tasks[0], con.Tasks[1]
	assert.Less(t, b.CoreStart, a.End, "the second task runs while the first does")
	for _, c := range b.Cores {
		assert.NotContains(t, a.Cores, c, "on cores of its own")
	}
	assert.GreaterOrEqual(t, con.Tasks[2].CoreStart, max(a.Complete, b.Complete), "the dependent task waits for both")
	// A task that takes every core waits for them all.
	tasks[1].Cores, cores[1] = 24, slices.Repeat([]int64{50000}, 24)
	full, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{Concurrent: true})
	assert.GreaterOrEqual(t, full.Tasks[1].CoreStart, full.Tasks[0].End)
}

func TestOverlappedLaunchHidesTheDispatch(t *testing.T) {
	chip := preset(t, "a2")
	var tasks []DispatchTask
	var cores [][]int64
	for k := range 6 {
		dt := DispatchTask{Kind: OnVector, Cores: 48}
		if k > 0 {
			dt.Deps = []int{k - 1}
		}
		tasks = append(tasks, dt)
		cores = append(cores, slices.Repeat([]int64{40000}, 48))
	}
	seq, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{})
	ov, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{OverlapLaunch: true})
	// Each task after the first starts its cores when the one before completes,
	// without waiting for its own dispatch.
	assert.Equal(t, seq.Cycles-5*int64(chip.DispatchCycles), ov.Cycles)
	for k := 1; k < len(tasks); k++ {
		assert.Equal(t, ov.Tasks[k-1].Complete, ov.Tasks[k].CoreStart)
		assert.Less(t, ov.Tasks[k].Dispatch, ov.Tasks[k-1].End, "dispatched while the task before runs")
	}
	// Tasks shorter than a dispatch: the AI CPU is the bottleneck.
	for k := range cores {
		cores[k] = slices.Repeat([]int64{100}, 48)
	}
	short, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{OverlapLaunch: true})
	for k := 1; k < len(tasks); k++ {
		assert.GreaterOrEqual(t, short.Tasks[k].Dispatch-short.Tasks[k-1].Dispatch, int64(chip.DispatchCycles))
	}
}

func TestEarlyStartHidesThePrologue(t *testing.T) {
	chip := preset(t, "a2")
	var tasks []DispatchTask
	var cores [][]int64
	for k := range 6 {
		dt := DispatchTask{Kind: OnVector, Cores: 48}
		if k > 0 {
			dt.Deps = []int{k - 1}
		}
		tasks = append(tasks, dt)
		cores = append(cores, slices.Repeat([]int64{40000}, 48))
	}
	ov, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{OverlapLaunch: true})
	early, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{OverlapLaunch: true, EarlyStart: true})
	lead := int64(chip.CoreStartCycles + chip.PrologueCycles)
	// Each dependent task's first instruction comes as the one before completes: its
	// start and prologue ran during that task's final sync.
	assert.Equal(t, ov.Cycles-5*lead, early.Cycles)
	for k := 1; k < len(tasks); k++ {
		assert.Equal(t, early.Tasks[k-1].Complete, early.Tasks[k].CoreStart+lead)
		assert.GreaterOrEqual(t, early.Tasks[k].CoreStart, early.Tasks[k-1].End, "its cores are free")
	}
	// Without launch overlap the task is dispatched once the one before completes, so
	// its dispatch, not its inputs, comes last.
	plain, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{})
	alone, _ := scheduleFake(t, chip, tasks, cores, DispatchOptions{EarlyStart: true})
	assert.Equal(t, plain.Cycles, alone.Cycles)
}

func TestFirstTaskIsNotPrefetched(t *testing.T) {
	chip := preset(t, "a2")
	// Two independent tasks and one after them: the first task of the graph is
	// launched cold, the tasks queued behind it have a prefetch window, with or
	// without the other features (an early start leaves the dependent task none: its
	// first instruction comes as its inputs complete).
	tasks := []DispatchTask{{Kind: OnCube, Cores: 8}, {Kind: OnCube, Cores: 8}, {Deps: []int{0, 1}, Kind: OnVector, Cores: 48}}
	cores := [][]int64{slices.Repeat([]int64{30000}, 8), slices.Repeat([]int64{30000}, 8), slices.Repeat([]int64{10000}, 48)}
	for _, opts := range []DispatchOptions{{}, {Concurrent: true, OverlapLaunch: true, EarlyStart: true}} {
		s, _ := scheduleFake(t, chip, tasks, cores, opts)
		assert.Zero(t, s.Tasks[0].Prefetch, "%+v", opts)
		assert.Positive(t, s.Tasks[1].Prefetch, "%+v", opts)
		if !opts.EarlyStart {
			assert.Positive(t, s.Tasks[2].Prefetch, "%+v", opts)
		}
	}
}

func TestDispatcherRejectsBadTasks(t *testing.T) {
	chip := preset(t, "a2")
	run := func(int, TaskSlot) (*TaskStats, error) { return &TaskStats{}, nil }
	_, err := ScheduleTasks(chip, []DispatchTask{{Kind: OnCube, Cores: 1, Deps: []int{0}}}, DispatchOptions{Concurrent: true}, run)
	assert.ErrorContains(t, err, "not earlier")
	_, err = ScheduleTasks(chip, []DispatchTask{{Kind: OnCube, Cores: 25}}, DispatchOptions{}, run)
	assert.ErrorContains(t, err, "pool of 24")
}

// unevenBlocks are blocks of one vector task: block b loads row b of x (rows x 64
// float32), takes max(x, x) reps[b] times (its work), doubles it and stores it into
// row b of z.
func unevenBlocks(t *testing.T, chip *Chip, reps []int, x []float64) (*gmLayout, []Block) {
	t.Helper()
	const cols = 64
	rows := len(reps)
	l := layout(dtype.Encode(dtype.Float32, x), make([]byte, rows*cols*4))
	var blocks []Block
	for r, n := range reps {
		b := newProg("double", isa.Vector)
		px := b.param("x", dtype.Float32, rows*cols)
		pz := b.param("z", dtype.Float32, rows*cols)
		tx := b.tile("x", isa.Vec, dtype.Float32, 1, cols)
		b.op(isa.TLOAD, tl(tx), view(px, r*cols, 1, cols, cols))
		for range n {
			b.op(isa.TMAX, tl(tx), tl(tx), tl(tx))
		}
		b.op(isa.TADD, tl(tx), tl(tx), tl(tx))
		b.op(isa.TSTORE, view(pz, r*cols, 1, cols, cols), tl(tx))
		blocks = append(blocks, Block{Prog: compile(t, chip, b.p), ParamAddrs: l.addrs})
	}
	return l, blocks
}

func TestBalancedBlocksHelpAnUnevenTask(t *testing.T) {
	reps := []int{1500, 6, 6, 6, 6, 6}
	x := make([]float64, len(reps)*64)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	for _, name := range []string{"tiny", "a2"} { // without an L2, and with one
		chip := preset(t, name)
		chip.VectorCores = 2
		run := func(opts RunOptions) ([]float64, *TaskStats) {
			l, blocks := unevenBlocks(t, chip, reps, x)
			st, err := RunTask(chip, l.gm, isa.Vector, blocks, opts)
			require.NoError(t, err)
			return dtype.Decode(dtype.Float32, l.bytes(1, len(x)*4), len(x)), st
		}
		static, sst := run(RunOptions{})
		bal, bst := run(RunOptions{BalanceBlocks: true})
		for i, v := range static {
			require.Equal(t, 2*x[i], v, "%s element %d", name, i)
		}
		require.Equal(t, static, bal, name)
		// Static: core 0 runs blocks 0, 2, 4 (the long one and two short); balanced:
		// core 1 takes every short block while core 0 runs the long one.
		assert.Less(t, bst.Cycles, sst.Cycles, name)
		assert.Greater(t, bst.CoreCycles[1], sst.CoreCycles[1], name)
		assert.Less(t, bst.CoreCycles[0], sst.CoreCycles[0], name)
		_, tst := run(RunOptions{BalanceBlocks: true, Trace: true})
		for _, e := range tst.Trace {
			if e.Block > 0 {
				assert.Equal(t, 1, e.Core, "%s: block %d", name, e.Block)
			}
		}
	}
}

func TestPrefetchedFirstLoadsHit(t *testing.T) {
	s := biasReluSpec{rows: 256, cols: 512, tr: 64, tc: 256, dt: dtype.Float16}
	x, y, bias := s.inputs(3)
	chip := preset(t, "a2")
	cold, cst := s.run(t, chip, x, y, bias, RunOptions{})
	warm, wst := s.run(t, chip, x, y, bias, RunOptions{PrefetchBytes: 1 << 30})
	require.Equal(t, s.ref(x, y, bias), cold)
	require.Equal(t, cold, warm)
	assert.Zero(t, cst.PrefetchedBytes)
	assert.Positive(t, wst.PrefetchedBytes)
	assert.Less(t, wst.L2Misses, cst.L2Misses)
	assert.Less(t, wst.Cycles, cst.Cycles)
	// A small budget prefetches at most its bytes (a line per core rounds it up).
	_, small := s.run(t, chip, x, y, bias, RunOptions{PrefetchBytes: 8 * 1024})
	assert.LessOrEqual(t, small.PrefetchedBytes, int64(8*1024+small.ActiveCores*chip.L2LineBytes))
	assert.Greater(t, small.L2Misses, wst.L2Misses)
}

// scheduleTraffic schedules two independent 8-core cube tasks of 50000 cycles each,
// each moving the given fraction of the chip's HBM bandwidth over its time alone
// (L2 misses), concurrently or one after the other.
func scheduleTraffic(t *testing.T, chip *Chip, share float64, n int, opts DispatchOptions) *Schedule {
	t.Helper()
	const span = 50000
	lines := int64(share * float64(chip.HBMBytesPerCycle) * span / float64(chip.L2LineBytes))
	tasks := slices.Repeat([]DispatchTask{{Kind: OnCube, Cores: 8}}, n)
	s, err := ScheduleTasks(chip, tasks, opts, func(k int, slot TaskSlot) (*TaskStats, error) {
		st := &TaskStats{CoreCycles: slices.Repeat([]int64{span}, 8), L2Misses: lines, GMBytesRead: lines * int64(chip.L2LineBytes)}
		st.setTime(chip, span)
		return st, nil
	})
	require.NoError(t, err)
	return s
}

func TestConcurrentMemoryBoundTasksShareTheBandwidth(t *testing.T) {
	chip := preset(t, "a2")
	require.Positive(t, chip.L2Bytes)
	const span = 50000
	alone := scheduleTraffic(t, chip, 0.8, 1, DispatchOptions{Concurrent: true})
	a0 := alone.Tasks[0]
	assert.Equal(t, int64(span), a0.End-a0.CoreStart-int64(chip.CoreStartCycles), "a task alone keeps its standalone time")

	both := scheduleTraffic(t, chip, 0.8, 2, DispatchOptions{Concurrent: true})
	a, b := both.Tasks[0], both.Tasks[1]
	require.Less(t, b.CoreStart, a.End, "the two tasks overlap in time")
	assert.Equal(t, a0.End-a0.CoreStart, a.End-a.CoreStart, "the first keeps the bandwidth it was given")
	assert.Greater(t, both.Cycles, alone.Cycles, "two memory-bound tasks side by side take longer than one alone")
	// While the first runs, the second gets the 20% of the HBM it leaves: a quarter of
	// the 80% it moves alone, so it progresses at a quarter of its speed until then.
	beginB := b.CoreStart + int64(chip.CoreStartCycles)
	overlap := a.End - beginB
	want := a.End + span - overlap/4
	assert.InDelta(t, want, b.End, 2, "the second task's end under the shared bandwidth")
	// Their bytes together cannot cross the HBM faster than its peak.
	bytes := 2 * 0.8 * float64(chip.HBMBytesPerCycle) * span
	assert.GreaterOrEqual(t, float64(b.End-(a.CoreStart+int64(chip.CoreStartCycles))), bytes/float64(chip.HBMBytesPerCycle)-1)

	// Tasks that together stay within the bandwidth do not slow each other.
	light := scheduleTraffic(t, chip, 0.3, 2, DispatchOptions{Concurrent: true})
	for _, s := range light.Tasks {
		assert.Equal(t, a0.End-a0.CoreStart, s.End-s.CoreStart)
	}
	// One after the other they never overlap, and keep their times.
	seq := scheduleTraffic(t, chip, 0.8, 2, DispatchOptions{})
	for _, s := range seq.Tasks {
		assert.Equal(t, a0.End-a0.CoreStart, s.End-s.CoreStart)
	}
}
