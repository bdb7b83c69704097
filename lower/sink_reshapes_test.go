package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
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
	g := oneFusedMatmul(t, chip, bl)

	apart, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"sink-reshapes": true}})
	require.NoError(t, err)
	assert.Greater(t, len(taskOps(apart)), 1)
}

// A row mask [1,s,1] over a linear layer's [1,s,n] result joins the epilogue: the
// reshape back from [s,n] only adds a leading 1, which the mask drops too.
func TestBroadcastRowMaskJoinsTheLinearEpilogue(t *testing.T) {
	chip := presets(t)[1]
	bl := core.NewBuilder("masked")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{1, 96, 256}})
	w := bl.Param("w", core.TensorType{DType: dtype.Float16, Shape: core.Shape{256, 256}})
	b := bl.Param("b", core.TensorType{DType: dtype.Float16, Shape: core.Shape{256}})
	keep := bl.Param("keep", core.TensorType{DType: dtype.Bool, Shape: core.Shape{1, 96, 1}})
	y, err := bl.Op("linear", []core.Value{x, w, b}, nil, core.Location{})
	require.NoError(t, err)
	zero, err := bl.Op("full", nil, core.Attrs{"value": 0.0, "dtype": "float16", "shape": []int64{}}, core.Location{})
	require.NoError(t, err)
	out, err := bl.Op("where", []core.Value{keep, y, zero}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(out)
	oneFusedMatmul(t, chip, bl)
}

// oneFusedMatmul compiles the graph bl built, which must run as one fused_matmul task
// computing what the reference does.
func oneFusedMatmul(t *testing.T, chip *device.Chip, bl *core.Builder) *core.Graph {
	t.Helper()
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"fused_matmul"}, taskOps(exe))
	compileAndCompare(t, chip, g, 64)
	return g
}
