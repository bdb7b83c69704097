package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// A constant shared by two kernels (as CSE leaves the eps of every layer norm) is
// copied into each, not computed by a kernel of its own; a matmul reading it keeps the
// shared node.
func TestSharedConstantsJoinEveryConsumer(t *testing.T) {
	chip := presets(t)[1]
	bl := core.NewBuilder("shared")
	f16 := core.TensorType{DType: dtype.Float16, Shape: core.Shape{32, 64}}
	x, y := bl.Param("x", f16), bl.Param("y", f16)
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
	c := op("full", core.Attrs{"value": 0.5, "dtype": "float16", "shape": []int64{}})
	a := op("exp", nil, op("mul", nil, x, c))
	s := op("sum", core.Attrs{"axis": []int64{0}}, a) // a reduction between the two users
	b := op("add", nil, op("mul", nil, y, c), s)
	bl.Output(b)
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	assert.NotContains(t, taskOps(exe), "full")
	compileAndCompare(t, chip, g, 32)

	plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"split-constants": true}})
	require.NoError(t, err)
	assert.Contains(t, taskOps(plain), "full", "without the pass the shared constant is a kernel")
}
