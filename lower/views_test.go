package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// Each view op and cast, compiled for every preset, must reproduce the reference
// interpreter bit for bit (they move or convert values, never compute).
func TestViewOpsMatchReferenceExactly(t *testing.T) {
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: s} }
	cases := []struct {
		name  string
		in    core.TensorType
		op    string
		attrs core.Attrs
	}{
		{"reshape", f16(6, 35), "reshape", core.Attrs{"shape": []int64{5, 42}}},
		{"reshape-3d", f16(2, 3, 70), "reshape", core.Attrs{"shape": []int64{6, 7, 10}}},
		{"transpose-2d", f16(37, 70), "transpose", core.Attrs{"perm": []int64{}}},
		{"transpose-3d", f16(3, 17, 40), "transpose", core.Attrs{"perm": []int64{2, 0, 1}}},
		{"broadcast", f16(1, 45), "broadcast_to", core.Attrs{"shape": []int64{3, 20, 45}}},
		{"slice", f16(40, 90), "slice", core.Attrs{"starts": []int64{3, 1}, "stops": []int64{40, 88}, "steps": []int64{2, 3}}},
		{"cast-f16-i8", f16(17, 33), "cast", core.Attrs{"dtype": "int8"}},
		{"cast-f16-f32", f16(17, 33), "cast", core.Attrs{"dtype": "float32"}},
		{"cast-f32-bf16", core.TensorType{DType: dtype.Float32, Shape: core.Shape{9, 70}}, "cast", core.Attrs{"dtype": "bfloat16"}},
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", chip.Name, c.name), func(t *testing.T) {
				bl := core.NewBuilder("view")
				x := bl.Param("x", c.in)
				y, err := bl.Op(c.op, []core.Value{x}, c.attrs, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				compileAndCompare(t, chip, bl.Graph(), 0)
			})
		}
	}
}

// Slices that walk backwards gather from the mirrored forward window.
func TestNegativeStepSlicesMatchReferenceExactly(t *testing.T) {
	cases := []struct {
		in                   core.Shape
		starts, stops, steps []int64
	}{
		{core.Shape{8}, []int64{7}, []int64{-1}, []int64{-1}},
		{core.Shape{37, 70}, []int64{0, 69}, []int64{37, -1}, []int64{1, -2}},
		{core.Shape{37, 70}, []int64{36, 3}, []int64{-1, 70}, []int64{-3, 1}},
		{core.Shape{3, 9, 40}, []int64{2, 8, 39}, []int64{-1, -1, -1}, []int64{-1, -1, -1}},
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%v%v", chip.Name, c.in, c.steps), func(t *testing.T) {
				bl := core.NewBuilder("rev")
				x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: c.in})
				y, err := bl.Op("slice", []core.Value{x}, core.Attrs{"starts": c.starts, "stops": c.stops, "steps": c.steps}, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				compileAndCompare(t, chip, bl.Graph(), 0)
			})
		}
	}
}

// Composite ops are decomposed into primitives before tiling, so a composite whose
// primitives all have lowerings runs on the device.
func TestCompositesRunThroughDecomposition(t *testing.T) {
	chip := presets(t)[0]
	bl := core.NewBuilder("composite")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{1, 24, 40}})
	w := bl.Param("w", core.TensorType{DType: dtype.Float16, Shape: core.Shape{30, 40}})
	b := bl.Param("b", core.TensorType{DType: dtype.Float16, Shape: core.Shape{30}})
	sq, err := bl.Op("squeeze", []core.Value{x}, core.Attrs{"axis": []int64{0}}, core.Location{})
	require.NoError(t, err)
	y, err := bl.Op("linear", []core.Value{sq, w, b}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	for _, task := range exe.Exec().Tasks {
		require.NotContains(t, []string{"squeeze", "linear"}, exe.Exec().Blocks.Tiles.Ops[task.Kernel].Op)
	}
	compileAndCompare(t, chip, g, 40)
}

// concat writes each input into its part of the output (one task per input); stack is
// its composite over unsqueeze.
func TestConcatAndStackMatchReferenceExactly(t *testing.T) {
	for _, chip := range presets(t) {
		for _, axis := range []int64{0, 1, -1} {
			t.Run(fmt.Sprintf("%s/concat_axis%d", chip.Name, axis), func(t *testing.T) {
				bl := core.NewBuilder("concat")
				a := bl.Param("a", core.TensorType{DType: dtype.Float16, Shape: core.Shape{3, 17, 40}})
				b := bl.Param("b", core.TensorType{DType: dtype.Float32, Shape: core.Shape{3, 17, 40}})
				c, err := bl.Op("concat", []core.Value{a, b, a}, core.Attrs{"axis": axis}, core.Location{})
				require.NoError(t, err)
				r, err := bl.Op("relu", []core.Value{c}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(r)
				compileAndCompare(t, chip, bl.Graph(), 0)
			})
		}
		t.Run(chip.Name+"/stack", func(t *testing.T) {
			bl := core.NewBuilder("stack")
			a := bl.Param("a", core.TensorType{DType: dtype.Float32, Shape: core.Shape{5, 9}})
			b := bl.Param("b", core.TensorType{DType: dtype.Float32, Shape: core.Shape{5, 9}})
			s, err := bl.Op("stack", []core.Value{a, b}, core.Attrs{"axis": int64(1)}, core.Location{})
			require.NoError(t, err)
			bl.Output(s)
			compileAndCompare(t, chip, bl.Graph(), 0)
		})
	}
}

func TestPadMatchesReferenceExactly(t *testing.T) {
	for _, pads := range [][]int64{{1, 2, 0, 3}, {0, 0, 0, 0}, {0, 0, 5, 0}} {
		t.Run(fmt.Sprint(pads), func(t *testing.T) {
			bl := core.NewBuilder("pad")
			x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{17, 33}})
			y, err := bl.Op("pad", []core.Value{x}, core.Attrs{"pads": pads, "value": -1.5}, core.Location{})
			require.NoError(t, err)
			bl.Output(y)
			compileAndCompare(t, presets(t)[0], bl.Graph(), 0)
		})
	}
}

// A reshape holds the same bytes as its input: it becomes an alias of the input's GM
// buffer, with no kernel, unless it is a result computed into a temporary.
func TestReshapeIsAnAlias(t *testing.T) {
	chip := presets(t)[0]
	bl := core.NewBuilder("alias")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{6, 35}})
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
	r1 := op("reshape", core.Attrs{"shape": []int64{5, 42}}, x)                  // alias of an input
	y := op("relu", nil, r1)                                                     // reads through the alias
	r2 := op("reshape", core.Attrs{"shape": []int64{210}}, y)                    // alias of a temp...
	z := op("add", nil, r2, op("reshape", core.Attrs{"shape": []int64{210}}, x)) // ...and of the input again
	bl.Output(z)
	bl.Output(op("reshape", core.Attrs{"shape": []int64{7, 30}}, x)) // a result viewing an input
	bl.Output(op("reshape", core.Attrs{"shape": []int64{42, 5}}, y)) // a result of a temp: the temp becomes a result
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-elementwise": true}})
	require.NoError(t, err)
	require.Equal(t, []string{"relu", "add"}, taskOps(exe))
	compileAndCompare(t, chip, g, 0)
	tg := exe.Exec().Blocks.Tiles
	back, err := ParseTileGraph(tg.Format())
	require.NoError(t, err)
	require.Equal(t, tg.Format(), back.Format())
}
