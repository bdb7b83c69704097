package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// twoMatmulsGraph is a @ b and c @ d ([m, k] @ [k, n]): two independent tasks.
func twoMatmulsGraph(m, k, n int) *core.Graph {
	bl := core.NewBuilder("two_matmuls")
	left := core.TensorType{DType: dtype.Float16, Shape: core.Shape{m, k}}
	right := core.TensorType{DType: dtype.Float16, Shape: core.Shape{k, n}}
	for _, names := range [][2]string{{"a", "b"}, {"c", "d"}} {
		x, y := bl.Param(names[0], left), bl.Param(names[1], right)
		z, err := bl.Op("matmul", []core.Value{x, y}, nil, core.Location{})
		if err != nil {
			panic(err)
		}
		bl.Output(z)
	}
	return bl.Graph()
}

// runtimes are each feature alone and all of them.
var runtimes = map[string]Runtime{
	"concurrent": only(func(r *Runtime) { r.NoConcurrentTasks = false }), "overlap": only(func(r *Runtime) { r.NoOverlapLaunch = false }),
	"prefetch": only(func(r *Runtime) { r.NoPrefetchL2 = false }), "balance": only(func(r *Runtime) { r.NoBalanceBlocks = false }),
	"early": only(func(r *Runtime) { r.NoEarlyStart = false }), "all": {},
}

// only is the plain runtime with what on switches on.
func only(on func(*Runtime)) Runtime {
	r := PlainRuntime()
	on(&r)
	return r
}

func TestTwoIndependentMatmulsRunConcurrently(t *testing.T) {
	chip := preset(t, "a2")
	// The searched tiles spread each matmul over most of the cores; the fixed rule
	// gives each 8 blocks, so both fit the 24 cube cores at once.
	for _, fixed := range []bool{false, true} {
		g := twoMatmulsGraph(512, 2048, 512)
		exe, err := Compile(g, Options{Chip: chip, Verify: true, FixedTiles: fixed})
		require.NoError(t, err)
		require.Len(t, exe.Exec().Tasks, 2)
		_, raw := randomInputs(g)
		timing := device.RunOptions{NoValues: true} // times never depend on values
		_, seq, err := exe.RunRuntime(raw, timing, PlainRuntime())
		require.NoError(t, err)
		_, con, err := exe.RunRuntime(raw, timing, only(func(r *Runtime) { r.NoConcurrentTasks = false }))
		require.NoError(t, err)
		assert.Equal(t, seq.SequentialCycles, seq.Cycles, "off: tasks one after another")
		assert.Equal(t, seq.SequentialCycles, con.SequentialCycles, "the tasks' own runs do not change")
		assert.Less(t, con.Cycles, seq.Cycles, "fixed tiles %v", fixed)
		assert.LessOrEqual(t, con.Cycles, con.Tasks[0].Stats.Cycles+con.Tasks[1].Stats.Cycles)
		if !fixed {
			continue
		}
		a, b := con.Tasks[0].Slot, con.Tasks[1].Slot
		assert.Less(t, b.CoreStart, a.End, "the second matmul runs beside the first")
		for _, c := range b.Cores {
			assert.NotContains(t, a.Cores, c)
		}
		assert.Less(t, con.Cycles, seq.Cycles*3/4)
	}
	// Values: the same bits either way (a smaller instance, computed in full).
	g := twoMatmulsGraph(128, 256, 128)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, FixedTiles: true})
	require.NoError(t, err)
	_, raw := randomInputs(g)
	want, _, err := exe.RunRuntime(raw, device.RunOptions{}, PlainRuntime())
	require.NoError(t, err)
	got, _, err := exe.RunRuntime(raw, device.RunOptions{}, only(func(r *Runtime) { r.NoConcurrentTasks = false }))
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestRuntimeFeaturesKeepValuesAndOffKeepsTheTimeline(t *testing.T) {
	for _, name := range []string{"a2", "tiny"} {
		chip := preset(t, name)
		g := decoderGraph(t, 2, 64, 64, 2, 256)
		exe, err := Compile(g, Options{Chip: chip, Verify: true})
		require.NoError(t, err)
		_, raw := randomInputs(g)
		want, base, err := exe.RunRuntime(raw, device.RunOptions{}, PlainRuntime())
		require.NoError(t, err)
		var sum int64
		for k, tr := range base.Tasks {
			sum += tr.Stats.Cycles
			if k > 0 {
				assert.Equal(t, base.Tasks[k-1].Slot.Complete, tr.Slot.Dispatch)
			}
		}
		assert.Equal(t, sum, base.Cycles, "%s: the plain runtime is the sum of the tasks", name)
		hz := exe.Exec().Hazards()
		for feature, rt := range runtimes {
			got, st, err := exe.RunRuntime(raw, device.RunOptions{}, rt)
			require.NoError(t, err, feature)
			require.Equal(t, want, got, "%s %s: bit-identical values", name, feature)
			assert.LessOrEqual(t, st.Cycles, base.Cycles, "%s %s", name, feature)
			var early int64 // the start and prologue run before the inputs complete
			if rt.EarlyStart() {
				early = int64(chip.CoreStartCycles + chip.PrologueCycles)
			}
			for k, deps := range hz {
				for _, d := range deps {
					assert.LessOrEqual(t, st.Tasks[d].Slot.Complete, st.Tasks[k].Slot.CoreStart+early,
						"%s %s: task %d starts before task %d, which it waits for, completes", name, feature, k, d)
				}
			}
		}
		_, all, err := exe.RunRuntime(raw, device.RunOptions{}, Runtime{})
		require.NoError(t, err)
		assert.Less(t, all.Cycles, base.Cycles, name)
		// Run's default is every feature on.
		_, def, err := exe.Run(raw)
		require.NoError(t, err)
		assert.Equal(t, all.Cycles, def.Cycles)
	}
}

func TestHazardsCoverReusedWorkspace(t *testing.T) {
	exe, err := Compile(decoderGraph(t, 2, 64, 64, 2, 256), Options{Chip: preset(t, "a2"), Verify: true})
	require.NoError(t, err)
	eg := exe.Exec()
	hz := eg.Hazards()
	extra := 0
	for k, task := range eg.Tasks {
		for _, d := range task.Deps {
			assert.Contains(t, hz[k], d, "data dependencies are hazards")
		}
		extra += len(hz[k]) - len(task.Deps)
	}
	// Independent tasks exist (q, k and v read h; none waits for another).
	independent := 0
	for k := range eg.Tasks {
		for j := range k {
			if !contains(hz[k], j) {
				independent++
			}
		}
	}
	assert.Positive(t, independent)
	assert.Positive(t, extra, "the reused workspace adds write-after-read hazards")
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRunKeepsIntermediatesInL2(t *testing.T) {
	// exp(x @ w) as two tasks: the matmul's product is an intermediate that the
	// exponential reads from L2, where the matmul left it, written back (no HBM
	// traffic during the run); the run's HBM traffic is its inputs, its output and
	// the intermediate's dirty lines written back after it.
	chip := preset(t, "a2")
	bl := core.NewBuilder("two_tasks")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{256, 512}})
	w := bl.Param("w", core.TensorType{DType: dtype.Float16, Shape: core.Shape{512, 256}})
	y, err := bl.Op("matmul", []core.Value{x, w}, nil, core.Location{})
	require.NoError(t, err)
	z, err := bl.Op("exp", []core.Value{y}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(z)
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-epilogue": true}})
	require.NoError(t, err)
	require.Len(t, exe.Exec().Tasks, 2)
	_, raw := randomInputs(g)
	for name, rt := range map[string]Runtime{"default": {}, "plain": PlainRuntime()} {
		_, st, err := exe.RunRuntime(raw, device.RunOptions{}, rt)
		require.NoError(t, err, name)
		mm, ex := st.Tasks[0].Stats, st.Tasks[1].Stats
		const inBytes, midBytes, outBytes = (256*512 + 512*256) * 2, 256 * 256 * 2, 256 * 256 * 2
		assert.Zero(t, mm.HBMBytesWritten, "%s: the product stays in L2", name)
		assert.Zero(t, ex.L2Misses, "%s: the exponential finds it there", name)
		assert.Equal(t, int64(outBytes), ex.HBMBytesWritten, "%s: the output is written through", name)
		assert.Equal(t, int64(inBytes), st.HBMBytesRead, name)
		assert.Equal(t, int64(outBytes+midBytes), st.HBMBytesWritten, "%s: the product written back after the run", name)
	}
}
