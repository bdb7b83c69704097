package device

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// loadTwice loads the same 64 x 128 f32 window (32 KB) twice, then another window.
func loadTwice(off int) string {
	return fmt.Sprintf(`
kernel l2 vector
param %%x: f32[262144]
tile %%t: vec f32[64x128]
tile %%u: vec f32[64x128]
  tload %%t, %%x[%[1]d; 64x128; 128,1]
  tload %%u, %%x[%[1]d; 64x128; 128,1]
  tload %%t, %%x[%[2]d; 64x128; 128,1]
end
`, off, off+8192)
}

// l2Chip is the a2 without address translation (its page walks are tested apart,
// TestFirstTouchOfAPageWalksItsTable), so that a load's time is its latency and its
// bytes at the rates the memory system's tests are about.
func l2Chip(t *testing.T) *Chip {
	chip := preset(t, "a2")
	chip.TLBEntries = 0
	return chip
}

// loadDurations runs the blocks and returns each block's TLOAD durations.
func loadDurations(t *testing.T, chip *Chip, blocks int) ([][]int64, *TaskStats) {
	t.Helper()
	gm := make([]byte, 262144*4)
	var bs []Block
	for i := range blocks {
		bs = append(bs, Block{Prog: compile(t, chip, parse(t, loadTwice(i*16384))), ParamAddrs: []int{0}})
	}
	st, err := RunTask(chip, gm, isa.Vector, bs, RunOptions{Trace: true, NoValues: true})
	require.NoError(t, err)
	out := make([][]int64, blocks)
	for _, e := range st.Trace {
		if e.Op == isa.TLOAD {
			out[e.Block] = append(out[e.Block], e.End-e.Start)
		}
	}
	return out, st
}

func TestL2HitsAreFasterThanMisses(t *testing.T) {
	chip := l2Chip(t)
	const bytes = 64 * 128 * 4
	// Alone on the chip, a load that misses streams at the core's port (HBM's whole
	// rate exceeds it) after the miss latency; its second load (the same lines)
	// is issued while they are still being filled, so it completes after that fill,
	// and only then reads them at the port rate; the third misses again.
	d, st := loadDurations(t, chip, 1)
	miss := int64(chip.L2MissCycles) + ceilDiv(bytes, chip.L2ReadBytesPerCycle)
	assert.Equal(t, miss, d[0][0])
	assert.Equal(t, int64(bytes/chip.L2LineBytes), st.L2Hits)
	assert.Equal(t, int64(2*bytes/chip.L2LineBytes), st.L2Misses)
	assert.InDelta(t, 1.0/3, st.L2HitRate(), 1e-9)
	// With the fill complete (a barrier between the loads) the same lines hit.
	hit := loadsOf(t, chip, missThenHit)
	assert.Equal(t, []int64{miss, int64(chip.L2HitCycles) + ceilDiv(bytes, chip.L2ReadBytesPerCycle)}, hit)
}

// missThenHit loads a 32 KB window, waits for it, and loads it again.
const missThenHit = `
kernel hit vector
param %x: f32[262144]
tile %t: vec f32[64x128]
  tload %t, %x[0; 64x128; 128,1]
  tsync all
  tload %t, %x[0; 64x128; 128,1]
end
`

// loadsOf runs one vector block of src on chip and returns its TLOAD durations (issue
// to completion).
func loadsOf(t *testing.T, chip *Chip, src string) []int64 {
	t.Helper()
	st, err := RunTask(chip, make([]byte, 262144*4), isa.Vector, []Block{{Prog: compile(t, chip, parse(t, src)), ParamAddrs: []int{0}}}, RunOptions{Trace: true, NoValues: true})
	require.NoError(t, err)
	var out []int64
	for _, e := range st.Trace {
		if e.Op == isa.TLOAD {
			out = append(out, e.End-e.Start)
		}
	}
	return out
}

// twoColdLoads loads two distinct 32 KB windows back to back into two tiles.
const twoColdLoads = `
kernel two vector
param %x: f32[262144]
tile %t: vec f32[64x128]
tile %u: vec f32[64x128]
  tload %t, %x[0; 64x128; 128,1]
  tload %u, %x[8192; 64x128; 128,1]
end
`

// A load is a set of outstanding requests: the second load is issued while the
// first one's data still moves, and its latency overlaps that data, so the two take
// one latency plus both transfers; with one transfer in flight at a time (a queue
// depth of 1) they take two latencies.
func TestLoadLatencyOverlapsTheTransferBefore(t *testing.T) {
	chip := l2Chip(t)
	const bytes = 64 * 128 * 4
	xfer := ceilDiv(bytes, chip.L2ReadBytesPerCycle)
	st := runVec(t, chip, twoColdLoads)
	// MTE2 is busy while a transfer is in flight, from the first load's issue to the
	// second one's completion: the latency once, then both transfers.
	assert.Equal(t, int64(chip.L2MissCycles)+2*xfer, st.PipeBusy[isa.PipeMTE2])
	one := l2Chip(t)
	one.MemQueueDepth = 1
	st = runVec(t, one, twoColdLoads)
	assert.Equal(t, 2*(int64(chip.L2MissCycles)+xfer), st.PipeBusy[isa.PipeMTE2])
}

// MTE2's set-up is the first LoadSetupCycles of a read's wait for its data, which
// the presets' latencies count from the read's start: it moves no time (a read, and
// a second read overlapping the first one's data), and the trace's Latency of each
// is the rest, the memory's, so that the instruction's cycles less it are the set-up
// and the bytes at the port's rate.
func TestLoadSetupIsPartOfTheReadsWait(t *testing.T) {
	const bytes = 64 * 128 * 4
	run := func(setup int) []TraceEvent {
		chip := l2Chip(t)
		chip.LoadSetupCycles = setup
		st, err := RunTask(chip, make([]byte, 262144*4), isa.Vector, []Block{{Prog: compile(t, chip, parse(t, twoColdLoads)), ParamAddrs: []int{0}}},
			RunOptions{Trace: true, NoValues: true})
		require.NoError(t, err)
		loads := eventsOf(st, isa.TLOAD)
		require.Len(t, loads, 2)
		return loads
	}
	without, with := run(0), run(18)
	chip := l2Chip(t)
	for i := range with {
		assert.Equal(t, without[i].Start, with[i].Start)
		assert.Equal(t, without[i].Free, with[i].Free)
		assert.Equal(t, without[i].End, with[i].End)
		assert.Equal(t, without[i].Latency-18, with[i].Latency)
	}
	assert.Equal(t, int64(chip.L2MissCycles), without[0].Latency)
	assert.Equal(t, 18+ceilDiv(bytes, chip.L2ReadBytesPerCycle), with[0].Cycles()-with[0].Latency)
	// A set-up longer than the whole wait leaves the memory no latency, not a
	// negative one.
	assert.Zero(t, run(100000)[0].Latency)
}

func runVec(t *testing.T, chip *Chip, src string) *TaskStats {
	t.Helper()
	st, err := RunTask(chip, make([]byte, 262144*4), isa.Vector, []Block{{Prog: compile(t, chip, parse(t, src)), ParamAddrs: []int{0}}}, RunOptions{NoValues: true})
	require.NoError(t, err)
	return st
}

// Two cores load the same cold window at once: one fetches it from HBM, the other
// finds its lines in L2 while they are still being filled and waits for that fill
// (it is not served at the hit rate before the data is there), taking no HBM
// bandwidth for them.
func TestSecondReaderWaitsForTheFill(t *testing.T) {
	chip := l2Chip(t)
	src := `
kernel same vector
param %x: f32[262144]
tile %t: vec f32[64x128]
  tload %t, %x[0; 64x128; 128,1]
end
`
	m := compile(t, chip, parse(t, src))
	st, err := RunTask(chip, make([]byte, 262144*4), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0}}, {Prog: m, ParamAddrs: []int{0}}}, RunOptions{Trace: true, NoValues: true})
	require.NoError(t, err)
	const bytes = 64 * 128 * 4
	miss := int64(chip.L2MissCycles) + ceilDiv(bytes, chip.L2ReadBytesPerCycle)
	require.Len(t, st.Trace, 2)
	assert.Equal(t, miss, st.Trace[0].End-st.Trace[0].Start, "core 0 fetches the lines")
	assert.GreaterOrEqual(t, st.Trace[1].End, st.Trace[0].End, "core 1 waits for the fill")
	assert.Less(t, st.Trace[1].End-st.Trace[1].Start, miss+int64(chip.L2HitCycles))
	assert.Equal(t, int64(bytes/chip.L2LineBytes), st.L2Misses, "the lines are fetched once")
	assert.Equal(t, int64(bytes/chip.L2LineBytes), st.L2Hits)
}

func TestHBMIsSharedByTheCoresThatMiss(t *testing.T) {
	chip := l2Chip(t)
	chip.HBMBytesPerCycle = 32 // below one core's port: two missing cores halve it
	alone, _ := loadDurations(t, chip, 1)
	both, _ := loadDurations(t, chip, 2)
	const bytes = 64 * 128 * 4
	assert.Equal(t, int64(chip.L2MissCycles)+ceilDiv(bytes, 32), alone[0][0])
	// The cores' first loads move at once: each gets about half, so the later one
	// ends near twice the transfer (the calendar serves earlier requests first in each
	// of its buckets).
	last := max(both[0][0], both[1][0])
	assert.InDelta(t, float64(int64(chip.L2MissCycles)+ceilDiv(2*bytes, 32)), float64(last), bucketCycles)
	assert.Greater(t, both[1][0], alone[0][0])
}

// The L2's total bandwidth is shared by every core's hits: two cores reading hit
// lines at once through an L2 that moves one port's worth take twice as long.
func TestL2TotalBandwidthIsShared(t *testing.T) {
	chip := l2Chip(t)
	chip.L2TotalBytesPerCycle = chip.L2ReadBytesPerCycle
	m := compile(t, chip, parse(t, missThenHit))
	run := func(blocks int) []TraceEvent {
		var bs []Block
		for range blocks {
			bs = append(bs, Block{Prog: m, ParamAddrs: []int{0}})
		}
		st, err := RunTask(chip, make([]byte, 262144*4), isa.Vector, bs, RunOptions{Trace: true, NoValues: true})
		require.NoError(t, err)
		var hits []TraceEvent
		for _, e := range st.Trace {
			if e.Op == isa.TLOAD && e.PC > 0 {
				hits = append(hits, e)
			}
		}
		return hits
	}
	const bytes = 64 * 128 * 4
	alone := run(1)
	assert.Equal(t, int64(chip.L2HitCycles)+ceilDiv(bytes, chip.L2ReadBytesPerCycle), alone[0].End-alone[0].Start)
	both := run(2)
	require.Len(t, both, 2)
	last := max(both[0].End, both[1].End) - min(both[0].Start, both[1].Start)
	assert.InDelta(t, float64(int64(chip.L2HitCycles)+ceilDiv(2*bytes, chip.L2ReadBytesPerCycle)), float64(last), 2*bucketCycles)
}

func TestL2EvictsTheLeastRecentLine(t *testing.T) {
	chip := preset(t, "a2")
	chip.L2Bytes, chip.L2Ways = 32*1024, 64 // one fully associative set of 64 lines
	m := newMemSystem(chip, 1<<20, nil)
	assert.False(t, m.touch(0))
	assert.False(t, m.touch(1))
	assert.True(t, m.touch(0))
	for l := 2; l < 64; l++ {
		m.touch(l) // 64 lines fill the 32 KB L2 exactly
	}
	assert.True(t, m.touch(1), "64 distinct lines fit")
	assert.False(t, m.touch(64), "the 65th line evicts line 0, the least recent")
	assert.False(t, m.touch(0))
}

func TestL2StartsEmptyForEveryTask(t *testing.T) {
	// The tags of a finished task are reused by the next one: they must come back
	// empty, and a task's hits must not depend on what ran before it.
	chip := preset(t, "a2")
	for range 3 {
		m := newMemSystem(chip, 1<<20, nil)
		for l := range 200 {
			assert.False(t, m.touch(l), "line %d in a new task's L2", l)
		}
		assert.True(t, m.touch(7))
		m.release("", false)
	}
	_, first := loadDurations(t, chip, 2)
	_, again := loadDurations(t, chip, 2)
	assert.Equal(t, first.L2Hits, again.L2Hits)
	assert.Equal(t, first.L2Misses, again.L2Misses)
	assert.Equal(t, first.Cycles, again.Cycles)
}

func TestL2SetsConflict(t *testing.T) {
	chip := preset(t, "a2")
	chip.L2Bytes, chip.L2Ways = 32*1024, 2 // 32 sets of 2 ways
	m := newMemSystem(chip, 1<<20, nil)
	// Three lines of one set (the index is hashed): the third evicts the first.
	var same []int
	other := -1
	for l := 0; len(same) < 3 || other < 0; l++ {
		switch {
		case m.setOf(l) == m.setOf(0):
			if len(same) < 3 {
				same = append(same, l)
			}
		case other < 0:
			other = l
		}
	}
	for _, l := range same {
		assert.False(t, m.touch(l))
	}
	assert.False(t, m.touch(same[0]))
	assert.True(t, m.touch(same[2]))
	assert.False(t, m.touch(other), "other sets are untouched")
	sets := map[int]bool{}
	for l := range 1024 {
		sets[m.setOf(l)] = true
	}
	assert.Len(t, sets, 32, "consecutive lines spread over every set")
}

func TestSharedMemoryRunIsDeterministic(t *testing.T) {
	chip := preset(t, "a2")
	prev := runtime.GOMAXPROCS(1)
	d1, st1 := loadDurations(t, chip, 8)
	runtime.GOMAXPROCS(4)
	d4, st4 := loadDurations(t, chip, 8)
	runtime.GOMAXPROCS(prev)
	assert.Equal(t, d1, d4)
	assert.Equal(t, st1.Cycles, st4.Cycles)
	assert.Equal(t, st1.Trace, st4.Trace)
}

func TestChipWithoutL2KeepsPerCoreRates(t *testing.T) {
	chip := preset(t, "tiny")
	require.Zero(t, chip.L2Bytes)
	m := compile(t, chip, parse(t, `
kernel one vector
param %x: f32[1024]
tile %t: vec f32[8x128]
  tload %t, %x[0; 8x128; 128,1]
end
`))
	st, err := RunTask(chip, make([]byte, 4096), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0}}}, RunOptions{Trace: true})
	require.NoError(t, err)
	assert.Equal(t, int64(chip.PipeStartup[isa.PipeMTE2])+4096/int64(chip.GMReadBytesPerCycle), st.Trace[0].End-st.Trace[0].Start)
	assert.Zero(t, st.L2HitRate())
}

func TestValuesApartOnlyWithoutValueDependentControl(t *testing.T) {
	chip := preset(t, "a2")
	plain := compile(t, chip, parse(t, loadTwice(0)))
	sld := compile(t, chip, parse(t, `
kernel dyn vector
param %n: i32[1]
reg %r
  sld %r, %n[0; 1x1; 1,1]
end
`))
	assert.True(t, valuesApart([]Block{{Prog: plain}}))
	assert.False(t, valuesApart([]Block{{Prog: plain}, {Prog: sld}}))
}

// With an L2 the values of a timed run come from a functional run beside the timing
// loop: the bytes equal a chip without L2 (whose run computes them in the timing
// loop), and a race is still reported.
func TestTimedRunWithL2ComputesTheSameValues(t *testing.T) {
	s := gemmSpec{M: 256, N: 256, K: 128, TM: 128, TN: 128, TK: 64, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	rng := rand.New(rand.NewPCG(11, 12))
	a := randValues(rng, s.In, s.M*s.K, 1)
	b := randValues(rng, s.In, s.K*s.N, 1)
	withL2, st := s.run(t, preset(t, "a2"), a, b, RunOptions{})
	plain := preset(t, "a2")
	plain.L2Bytes = 0
	without, _ := s.run(t, plain, a, b, RunOptions{})
	assert.Equal(t, without, withL2)
	assert.Equal(t, s.refMirror(a, b), dtype.Decode(s.Out, withL2, s.M*s.N))
	assert.Positive(t, st.L2Hits+st.L2Misses)
}

// The timing loop of a chip with an L2 still reports a missing flag, while the
// values run beside it.
func TestRaceReportedWithL2(t *testing.T) {
	chip := preset(t, "a2")
	m := compile(t, chip, loadReluStore())
	dropFlags(m, isa.PipeMTE2, isa.PipeV)
	_, err := RunTask(chip, make([]byte, 512), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0, 256}}}, RunOptions{})
	require.ErrorContains(t, err, "race")
	require.ErrorContains(t, err, "set_flag mte2, v")
}

// A timed run whose values are computed beside the timing loop (a task too large to
// run in it) leaves the race check to that functional run: it reports the same race.
func TestRaceReportedWhenValuesRunApart(t *testing.T) {
	chip := preset(t, "a2")
	m := compile(t, chip, loadReluStore())
	dropFlags(m, isa.PipeMTE2, isa.PipeV)
	saved := smallTaskInstrs
	defer func() { smallTaskInstrs = saved }()
	var msgs []string
	for _, small := range []int{1 << 30, 0} {
		smallTaskInstrs = small
		_, err := RunTask(chip, make([]byte, 512), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0, 256}}}, RunOptions{})
		require.ErrorContains(t, err, "race")
		msgs = append(msgs, err.Error())
	}
	require.Equal(t, msgs[0], msgs[1], "in the timing loop and beside it")
}

// A transposed window (rows adjacent, columns strided) moves the bytes it holds: it
// costs what the same elements cost read as rows, not the span of the gaps between them.
func TestTransposedWindowMovesItsOwnBytes(t *testing.T) {
	chip, err := Preset("a2")
	require.NoError(t, err)
	count := func(v isa.GMView) (lines, bytes int) {
		m := newMemSystem(chip, 1<<22, nil)
		m.window(0, Operand{Kind: isa.KindGM, DType: dtype.Float16, GM: v}, func(lo, hi int) {
			lines += (hi-1)/chip.L2LineBytes - lo/chip.L2LineBytes + 1
			bytes += hi - lo
		})
		return
	}
	rowsL, rowsB := count(isa.GMView{Rows: 64, Cols: 128, RowStride: 1024, ColStride: 1})
	colsL, colsB := count(isa.GMView{Rows: 128, Cols: 64, RowStride: 1, ColStride: 1024})
	require.Equal(t, rowsB, colsB)
	require.Equal(t, rowsL, colsL)
	_, elemB := count(isa.GMView{Rows: 8, Cols: 8, RowStride: 2048, ColStride: 1024})
	require.Equal(t, 64*2, elemB, "neither axis contiguous: element by element")
	_, bcastB := count(isa.GMView{Rows: 8, Cols: 16, RowStride: 0, ColStride: 1})
	require.Equal(t, 8*16*2, bcastB, "a broadcast row is read once per row")
}

// rangeLines expands runs of lines.
func rangeLines(rs []lineRange) []int32 {
	var out []int32
	for _, r := range rs {
		for l := r.first; l <= r.last; l++ {
			out = append(out, l)
		}
	}
	return out
}

// A run of lines looked up at once (accessRun) leaves the directory as the same lines
// accessed one by one do, and reports the same misses and fills, through evictions;
// a missed line's fill is its load's end once that is set.
func TestAccessRunIsAccessLineByLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const sets, ways, n = 8, 4, 512
	dir := func() *l2Tags {
		return &l2Tags{used: make([]int64, n), fill: make([]int64, n), count: make([]uint8, sets), ways: ways, base: 1, setDiv: ^uint64(0)/sets + 1}
	}
	run, one := dir(), dir()
	for range 2000 {
		l0 := rng.IntN(n - 8)
		l1 := l0 + rng.IntN(8)
		write := rng.IntN(3) == 0
		var fill, idRun, idOne int64
		if !write {
			idRun, idOne = run.newLoad(), one.newLoad()
		}
		var missed []int32
		for l := l0; l <= l1; l++ {
			ms, f := one.accessRun(l, l, write, idOne, nil)
			fill = max(fill, f)
			missed = append(missed, rangeLines(ms)...)
		}
		got, gotFill := run.accessRun(l0, l1, write, idRun, nil)
		require.Equal(t, missed, rangeLines(got))
		require.Equal(t, fill, gotFill)
		if !write {
			end := rng.Int64N(1000) // the load's completion, as memSystem.load sets it
			run.setEnd(idRun, end)
			one.setEnd(idOne, end)
			for _, l := range missed {
				require.Equal(t, end, run.fillOf(run.fill[l]))
			}
		}
		require.Equal(t, one.used, run.used)
		require.Equal(t, one.fill, run.fill)
		require.Equal(t, one.count, run.count)
		require.Equal(t, one.clock, run.clock)
	}
}

// Up to evictionFreeLines no set holds more GM lines than ways, and one line more
// overfills a set; a directory of such a GM keeps only a bit per line (roomy) and
// answers as one that counts its sets and stamps its lines: the same misses, in runs,
// and the same fills, whatever the runs' alignment to the bitmap's words.
func TestRoomyDirectoryNeverEvicts(t *testing.T) {
	const sets, ways = 16, 4
	dir := func(lines int) *l2Tags {
		return &l2Tags{used: make([]int64, lines), fill: make([]int64, lines), count: make([]uint8, sets), ways: ways, base: 1, setDiv: ^uint64(0)/sets + 1}
	}
	n := evictionFreeLines(dir(0))
	perSet := func(lines int) (most int) {
		held := map[int]int{}
		d := dir(lines)
		for l := range lines {
			held[d.setOf(l)]++
			most = max(most, held[d.setOf(l)])
		}
		return most
	}
	require.Equal(t, ways, perSet(n))
	require.Equal(t, ways+1, perSet(n+1))
	require.LessOrEqual(t, n, sets*ways)
	rng := rand.New(rand.NewPCG(15, 16))
	roomy, counted := dir(n), dir(n)
	roomy.roomy, roomy.present = true, make([]uint64, (n+63)/64)
	for range 3000 {
		l0 := rng.IntN(n - 4)
		l1 := min(n-1, l0+rng.IntN(4)+rng.IntN(2)*rng.IntN(70))
		write := rng.IntN(4) == 0
		if write { // a store's lookup (writeRun) against the stamped directory's
			roomy.writeRun(l0, l1, false)
			counted.accessRun(l0, l1, true, 0, nil)
		} else {
			idR, idC := roomy.newLoad(), counted.newLoad()
			got, gotFill := roomy.accessRun(l0, l1, false, idR, nil)
			want, wantFill := counted.accessRun(l0, l1, false, idC, nil)
			require.Equal(t, want, got)
			require.Equal(t, wantFill, gotFill)
			end := rng.Int64N(1000)
			roomy.setEnd(idR, end)
			counted.setEnd(idC, end)
		}
		require.Equal(t, counted.clock, roomy.clock)
		for l := range n {
			require.Equal(t, counted.fillOf(counted.fill[l]), roomy.fillOf(roomy.fill[l]), "line %d", l)
		}
	}
	require.Nil(t, counted.bySet, "the counted directory evicted nothing either")
}

// fastMod is the remainder for every set count a chip may have, on the hash's full
// 32-bit range.
func TestFastModIsTheRemainder(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, d := range []uint64{1, 2, 3, 7, 8, 24576, 32768, 1<<31 - 1, 1 << 31, 1<<32 - 1} {
		div := ^uint64(0)/d + 1
		for _, a := range []uint32{0, 1, uint32(d - 1), uint32(d), 1<<32 - 1, 1<<32 - 2} {
			require.Equal(t, int(uint64(a)%d), fastMod(a, div, d), "%d %% %d", a, d)
		}
		for range 10000 {
			a := rng.Uint32()
			require.Equal(t, int(uint64(a)%d), fastMod(a, div, d), "%d %% %d", a, d)
		}
	}
}
