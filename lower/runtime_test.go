package lower

import (
	"fmt"
	"math"
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

// decoderGraph is a small pre-norm decoder stack (the GPT-2 layer's ops at a small
// size): many tasks, some independent (q, k, v), workspace reused across layers.
func decoderGraph(layers, seq, hidden, heads int) *core.Graph {
	b := core.NewBuilder("decoder")
	f16 := func(shape ...int) core.TensorType {
		return core.TensorType{DType: dtype.Float16, Shape: core.Shape(shape)}
	}
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := b.Op(name, in, attrs, core.Location{})
		if err != nil {
			panic(fmt.Errorf("%s: %v", name, err))
		}
		return v
	}
	hd := hidden / heads
	split := func(t core.Value) core.Value {
		t = op("reshape", core.Attrs{"shape": []int64{int64(seq), int64(heads), int64(hd)}}, t)
		return op("transpose", core.Attrs{"perm": []int64{1, 0, 2}}, t)
	}
	x := b.Param("x", f16(seq, hidden))
	mask := b.Param("mask", f16(seq, seq))
	scale := op("full", core.Attrs{"value": 1 / math.Sqrt(float64(hd)), "dtype": "float16", "shape": []int64{}})
	for l := range layers {
		p := func(name string, shape ...int) core.Value {
			return b.Param(fmt.Sprintf("l%d_%s", l, name), f16(shape...))
		}
		h := op("layer_norm", nil, x, p("g1", hidden), p("b1", hidden))
		q := split(op("linear", nil, h, p("wq", hidden, hidden), p("bq", hidden)))
		k := split(op("linear", nil, h, p("wk", hidden, hidden), p("bk", hidden)))
		v := split(op("linear", nil, h, p("wv", hidden, hidden), p("bv", hidden)))
		s := op("mul", nil, op("batch_matmul", core.Attrs{"transpose_b": true}, q, k), scale)
		a := op("batch_matmul", nil, op("softmax", nil, op("add", nil, s, mask)), v)
		a = op("reshape", core.Attrs{"shape": []int64{int64(seq), int64(hidden)}}, op("transpose", core.Attrs{"perm": []int64{1, 0, 2}}, a))
		x = op("add", nil, x, op("linear", nil, a, p("wo", hidden, hidden), p("bo", hidden)))
		h = op("layer_norm", nil, x, p("g2", hidden), p("b2", hidden))
		h = op("gelu", core.Attrs{"approximate": "tanh"}, op("linear", nil, h, p("w1", 4*hidden, hidden), p("b1m", 4*hidden)))
		x = op("add", nil, x, op("linear", nil, h, p("w2", hidden, 4*hidden), p("b2m", hidden)))
	}
	b.Output(x)
	return b.Graph()
}

// runtimes are each feature alone and all of them.
var runtimes = map[string]Runtime{
	"concurrent": {ConcurrentTasks: true}, "overlap": {OverlapLaunch: true},
	"prefetch": {PrefetchL2: true}, "balance": {BalanceBlocks: true}, "all": Runtime{}.All(),
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
		_, seq, err := exe.RunRuntime(raw, timing, Runtime{})
		require.NoError(t, err)
		_, con, err := exe.RunRuntime(raw, timing, Runtime{ConcurrentTasks: true})
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
	want, _, err := exe.RunRuntime(raw, device.RunOptions{}, Runtime{})
	require.NoError(t, err)
	got, _, err := exe.RunRuntime(raw, device.RunOptions{}, Runtime{ConcurrentTasks: true})
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestRuntimeFeaturesKeepValuesAndOffKeepsTheTimeline(t *testing.T) {
	for _, name := range []string{"a2", "tiny"} {
		chip := preset(t, name)
		g := decoderGraph(2, 64, 64, 2)
		exe, err := Compile(g, Options{Chip: chip, Verify: true})
		require.NoError(t, err)
		_, raw := randomInputs(g)
		want, base, err := exe.RunRuntime(raw, device.RunOptions{}, Runtime{})
		require.NoError(t, err)
		var sum int64
		for k, tr := range base.Tasks {
			sum += tr.Stats.Cycles
			if k > 0 {
				assert.Equal(t, base.Tasks[k-1].Slot.Complete, tr.Slot.Dispatch)
			}
		}
		assert.Equal(t, sum, base.Cycles, "%s: the plain runtime is the sum of the tasks", name)
		// Run's default is the plain runtime.
		_, def, err := exe.Run(raw)
		require.NoError(t, err)
		assert.Equal(t, base.Cycles, def.Cycles)
		hz := exe.Exec().Hazards()
		for feature, rt := range runtimes {
			got, st, err := exe.RunRuntime(raw, device.RunOptions{}, rt)
			require.NoError(t, err, feature)
			require.Equal(t, want, got, "%s %s: bit-identical values", name, feature)
			assert.LessOrEqual(t, st.Cycles, base.Cycles, "%s %s", name, feature)
			for k, deps := range hz {
				for _, d := range deps {
					assert.LessOrEqual(t, st.Tasks[d].Slot.Complete, st.Tasks[k].Slot.CoreStart,
						"%s %s: task %d starts before task %d, which it waits for, completes", name, feature, k, d)
				}
			}
		}
		_, all, err := exe.RunRuntime(raw, device.RunOptions{}, Runtime{}.All())
		require.NoError(t, err)
		assert.Less(t, all.Cycles, base.Cycles, name)
	}
}

func TestHazardsCoverReusedWorkspace(t *testing.T) {
	exe, err := Compile(decoderGraph(2, 64, 64, 2), Options{Chip: preset(t, "a2"), Verify: true})
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
