package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// matmulSoftmaxGraph is a matmul (cube) and a row softmax of its result (vector).
func matmulSoftmaxGraph(m, k, n int) *core.Graph {
	b := core.NewBuilder("mm_softmax")
	x := b.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{m, k}})
	w := b.Param("w", core.TensorType{DType: dtype.Float16, Shape: core.Shape{k, n}})
	h, err := b.Op("matmul", []core.Value{x, w}, nil, core.Location{})
	if err != nil {
		panic(err)
	}
	s, err := b.Op("softmax", []core.Value{h}, map[string]any{"axis": int64(-1)}, core.Location{})
	if err != nil {
		panic(err)
	}
	b.Output(s)
	return b.Graph()
}

// Options.MaxCores limits every kernel to that many AI cores (their cube and vector
// cores): the tile search and the dealing of tiles see only those, the runs use only
// those, and the values are the same bits as on the whole chip.
func TestMaxCoresLimitsEveryKernel(t *testing.T) {
	chip := preset(t, "a2")
	g := matmulSoftmaxGraph(512, 256, 1024)
	_, raw := randomInputs(g)
	whole, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	wantOut, wholeStats, err := whole.Run(raw)
	require.NoError(t, err)
	for _, n := range []int{1, 3, 8} {
		exe, err := Compile(g, Options{Chip: chip, Verify: true, MaxCores: n})
		require.NoError(t, err, "max cores %d", n)
		for _, task := range exe.Exec().Tasks {
			limit := n
			if task.Core == isa.Vector {
				limit = 2 * n
			}
			assert.LessOrEqual(t, len(task.Programs)/task.GroupSize(), limit, "max cores %d: task %s's blocks, as the tiling dealt them", n, task.Name)
		}
		out, st, err := exe.Run(raw)
		require.NoError(t, err)
		assert.Equal(t, wantOut, out, "max cores %d: the same values", n)
		for _, task := range st.Tasks {
			limit := n
			if task.Core == isa.Vector {
				limit = 2 * n
			}
			assert.LessOrEqual(t, task.Stats.ActiveCores, limit, "max cores %d: task %s", n, task.Name)
			for c, cycles := range task.Stats.CoreCycles {
				if c >= limit {
					assert.Zero(t, cycles, "max cores %d: task %s ran on core %d", n, task.Name, c)
				}
			}
		}
		assert.Greater(t, st.Cycles, wholeStats.Cycles, "max cores %d: fewer cores take longer", n)
	}
	_, err = Compile(g, Options{Chip: chip, MaxCores: 25})
	var ce *core.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, core.ValueError, ce.Kind)
	assert.Contains(t, ce.Error(), "has 24 AI cores")
	assert.Contains(t, ce.Error(), "max_cores=25")
	_, err = Compile(g, Options{Chip: chip, MaxCores: -1})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, core.ValueError, ce.Kind)
}
