package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// A linear layer on a 3-D input with a residual add is one kernel: the reshape back
// to 3-D moves below the add, which joins the matmul's epilogue.
func TestResidualAddJoinsTheLinearEpilogue(t *testing.T) {
	chip := presets(t)[1]
	bl := core.NewBuilder("residual")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{2, 24, 64}})
	w := bl.Param("w", core.TensorType{DType: dtype.Float16, Shape: core.Shape{64, 64}})
	b := bl.Param("b", core.TensorType{DType: dtype.Float16, Shape: core.Shape{64}})
	y, err := bl.Op("linear", []core.Value{x, w, b}, nil, core.Location{})
	require.NoError(t, err)
	r, err := bl.Op("add", []core.Value{y, x}, nil, core.Location{})
	require.NoError(t, err)
	out, err := bl.Op("relu", []core.Value{r}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(out)
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"fused_matmul"}, taskOps(exe))
	compileAndCompare(t, chip, g, 64)

	apart, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"sink-reshapes": true}})
	require.NoError(t, err)
	assert.Greater(t, len(taskOps(apart)), 1)
}
