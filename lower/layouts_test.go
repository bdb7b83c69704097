package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// layoutChain builds relu(layout_transform(layout_transform(x, via), back)) for x of
// the given type.
func layoutChain(t *testing.T, x core.TensorType, via, back string) *core.Graph {
	bl := core.NewBuilder("layouts")
	p := bl.Param("x", x)
	a, err := bl.Op("layout_transform", []core.Value{p}, core.Attrs{"layout": via}, core.Location{File: "model.py", Line: 7})
	require.NoError(t, err)
	b, err := bl.Op("layout_transform", []core.Value{a}, core.Attrs{"layout": back}, core.Location{File: "model.py", Line: 8})
	require.NoError(t, err)
	r, err := bl.Op("relu", []core.Value{b}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(r)
	return bl.Graph()
}

// Round trips that are exact disappear at O1; what is kept is reported at every level,
// with the user's line; the values are the reference's either way.
func TestLayoutRoundTripsFold(t *testing.T) {
	chip := presets(t)[0]
	nd := core.TensorType{DType: dtype.Float16, Shape: core.Shape{40, 70}}
	g := layoutChain(t, nd, "NZ", "ND")

	o1, err := Compile(g, Options{Chip: chip, Verify: true, OptLevel: O1})
	require.NoError(t, err)
	assert.Empty(t, o1.LayoutConversions())
	assert.Equal(t, []string{"relu"}, taskOps(o1))
	compileAndCompare(t, chip, g, 0)

	o0, err := Compile(g, Options{Chip: chip, Verify: true, OptLevel: O0})
	require.NoError(t, err)
	kept := o0.LayoutConversions()
	require.Len(t, kept, 2)
	assert.Equal(t, "ND", kept[0].From)
	assert.Equal(t, "NZ", kept[0].To[:2])
	assert.Equal(t, "model.py:7", kept[0].Where)
	assert.Contains(t, o0.Dump(), "layout conversions kept: 2")
	assert.Greater(t, len(taskOps(o0)), 1)

	// 4-D layouts are permutations: both directions are exact.
	nchw := core.TensorType{DType: dtype.Float32, Shape: core.Shape{2, 3, 4, 5}, Layout: core.Layout{Kind: core.NCHW}}
	g4 := layoutChain(t, nchw, "NHWC", "NCHW")
	e4, err := Compile(g4, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	assert.Empty(t, e4.LayoutConversions())
	compileAndCompare(t, chip, g4, 0)
}

// NZ -> ND -> NZ is not folded: the original's padding need not be zeros, and the
// round trip zeroes it.
func TestLayoutRoundTripFromNZIsKept(t *testing.T) {
	chip := presets(t)[0]
	bl := core.NewBuilder("nz")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{40, 70}})
	nz, err := bl.Op("layout_transform", []core.Value{x}, core.Attrs{"layout": "NZ"}, core.Location{})
	require.NoError(t, err)
	g := layoutChain(t, bl.Graph().Type(nz), "ND", "NZ")
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	assert.Len(t, exe.LayoutConversions(), 2)
	compileAndCompare(t, chip, g, 0)
}
