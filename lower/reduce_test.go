package lower

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

func reduceGraph(t *testing.T, op string, in core.TensorType, axes []int64, keepdims bool) *core.Graph {
	t.Helper()
	bl := core.NewBuilder("reduce")
	x := bl.Param("x", in)
	y, err := bl.Op(op, []core.Value{x}, core.Attrs{"axis": axes, "keepdims": keepdims}, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	return bl.Graph()
}

// Reductions over every kind of axis set, checked through the ISA's reference
// semantics. Sums of fp16/bf16 accumulate in fp32 on the device and exactly in the
// reference, so they agree to the output's rounding plus fp32 summation error.
func TestReductionsOnISA(t *testing.T) {
	f := func(dt dtype.DType, s ...int) core.TensorType { return core.TensorType{DType: dt, Shape: s} }
	cases := []struct {
		op   string
		in   core.TensorType
		axes []int64
		keep bool
	}{
		{"sum", f(dtype.Float32, 37, 300), []int64{-1}, false},
		{"sum", f(dtype.Float16, 5, 70, 3), []int64{1}, true},
		{"max", f(dtype.Float16, 37, 300), []int64{0}, false},
		{"min", f(dtype.BFloat16, 4, 9, 33), []int64{1, 2}, false},
		{"sum", f(dtype.Float32, 4, 9, 33), []int64{0, 2}, false}, // not contiguous: split in two
		{"prod", f(dtype.Float32, 6, 5), []int64{}, false},
		{"sum", f(dtype.Int32, 10, 20), []int64{1}, false},
		{"sum", f(dtype.Float32, 1, 1), []int64{}, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s%v%s", c.op, c.axes, c.in), func(t *testing.T) {
			rel := map[dtype.DType]float64{dtype.Float32: 1e-5, dtype.Float16: 2e-3, dtype.BFloat16: 1e-2, dtype.Int32: 0}[c.in.DType]
			compareOnISA(t, reduceGraph(t, c.op, c.in, c.axes, c.keep), rel, rel)
		})
	}
}

func TestNonContiguousReductionIsSplit(t *testing.T) {
	g := reduceGraph(t, "sum", core.TensorType{DType: dtype.Float32, Shape: core.Shape{4, 9, 33}}, []int64{0, 2}, false)
	exe, err := Compile(g, Options{Chip: presets(t)[0], Verify: true, StopAfter: "plan-exec"})
	require.NoError(t, err)
	ops := exe.Exec().Blocks.Tiles.Ops
	require.Len(t, ops, 2, "sum over axis 2, then over axis 0; the reshape to the result is an alias")
	require.Equal(t, []int{36, 33, 1}, ops[0].Problem)
	require.Equal(t, []int{1, 4, 9}, ops[1].Problem)
}

// An op whose lowering exists but needs an instruction the simulator does not
// implement yet is refused with an error naming the op, the instruction and the line.
func TestLoweringsNeedingMissingInstructionsAreRefusedClearly(t *testing.T) {
	for name, l := range lowerings {
		in, missing := l.unsupported(name)
		if !missing || l.kind != TileReduce {
			continue
		}
		g := reduceGraph(t, name, core.TensorType{DType: dtype.Float32, Shape: core.Shape{4, 8}}, []int64{-1}, false)
		g.Nodes[1].Loc = core.Location{File: "m.py", Line: 9}
		_, err := Compile(g, Options{Chip: presets(t)[0], Verify: true})
		var ce *core.Error
		require.ErrorAs(t, err, &ce)
		require.Contains(t, ce.Message, name)
		require.Contains(t, ce.Message, in.String())
		require.Equal(t, 9, ce.Loc.Line)
		require.NotContains(t, LoweredOps(), name)
	}
}

func TestIotaOnISA(t *testing.T) {
	for _, axis := range []int64{0, 1, 2, -1} {
		t.Run(fmt.Sprint(axis), func(t *testing.T) {
			bl := core.NewBuilder("iota")
			v, err := bl.Op("iota", nil, core.Attrs{"shape": []int64{3, 37, 70}, "axis": axis}, core.Location{})
			require.NoError(t, err)
			bl.Output(v)
			compareOnISA(t, bl.Graph(), 0, 0)
		})
	}
}

// argmax and argmin find the first extreme (the first NaN when there is one), along
// any axis; inputs are rounded to few values so that ties occur.
func TestArgReductionsOnISA(t *testing.T) {
	for _, op := range []string{"argmax", "argmin"} {
		for _, c := range []struct {
			shape core.Shape
			axis  int64
		}{{core.Shape{37, 70}, -1}, {core.Shape{37, 70}, 0}, {core.Shape{3, 9, 40}, 1}} {
			t.Run(fmt.Sprintf("%s%v/%d", op, c.shape, c.axis), func(t *testing.T) {
				bl := core.NewBuilder("arg")
				x := bl.Param("x", core.TensorType{DType: dtype.BFloat16, Shape: c.shape})
				coarse, err := bl.Op("round", []core.Value{x}, nil, core.Location{}) // values in {-1, 0, 1}: many ties
				require.NoError(t, err)
				v, err := bl.Op(op, []core.Value{coarse}, core.Attrs{"axis": c.axis}, core.Location{})
				require.NoError(t, err)
				bl.Output(v)
				compareOnISA(t, bl.Graph(), 0, 0)
			})
		}
	}
}

// cumsum along each kind of axis; floats accumulate in fp32 (as numpy's float32
// cumsum), integers exactly in int32.
func TestCumsumMatchesReference(t *testing.T) {
	f := func(dt dtype.DType, s ...int) core.TensorType { return core.TensorType{DType: dt, Shape: s} }
	cases := []struct {
		in   core.TensorType
		axis int64
		k    int
	}{
		{f(dtype.Float32, 9, 70), -1, 70},
		{f(dtype.Float16, 40, 33), 0, 40},
		{f(dtype.Float32, 3, 20, 11), 1, 20},
		{f(dtype.Int32, 5, 300), 1, 0},
		{f(dtype.Int8, 300), 0, 0},
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s/%d", chip.Name, c.in, c.axis), func(t *testing.T) {
				bl := core.NewBuilder("cumsum")
				x := bl.Param("x", c.in)
				y, err := bl.Op("cumsum", []core.Value{x}, core.Attrs{"axis": c.axis}, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				compileAndCompare(t, chip, bl.Graph(), c.k)
			})
		}
	}
}

// sort and argsort along any axis, ascending and descending, against the reference
// bit for bit (values are moved, not computed); inputs rounded to few values so that
// ties test stability.
func TestSortMatchesReferenceExactly(t *testing.T) {
	f := func(dt dtype.DType, s ...int) core.TensorType { return core.TensorType{DType: dt, Shape: s} }
	cases := []struct {
		in   core.TensorType
		axis int64
	}{
		{f(dtype.Float32, 5, 20), -1},
		{f(dtype.Float16, 9, 70), -1},  // runs merged once
		{f(dtype.Float32, 3, 200), -1}, // merged twice
		{f(dtype.BFloat16, 40, 6), 0},  // along the first axis
		{f(dtype.Int8, 7, 33), 1},
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			for _, desc := range []bool{false, true} {
				for _, op := range []string{"sort", "argsort"} {
					t.Run(fmt.Sprintf("%s/%s%s/%d/desc=%v", chip.Name, op, c.in, c.axis, desc), func(t *testing.T) {
						bl := core.NewBuilder("sort")
						x := bl.Param("x", c.in)
						in := x
						if c.in.DType.IsFloat() {
							ten, err := bl.Op("full", nil, core.Attrs{"value": 10.0, "dtype": c.in.DType.LongName(), "shape": []int64{}}, core.Location{})
							require.NoError(t, err)
							s, err := bl.Op("mul", []core.Value{x, ten}, nil, core.Location{})
							require.NoError(t, err)
							in, err = bl.Op("round", []core.Value{s}, nil, core.Location{})
							require.NoError(t, err)
						}
						y, err := bl.Op(op, []core.Value{in}, core.Attrs{"axis": c.axis, "descending": desc}, core.Location{})
						require.NoError(t, err)
						bl.Output(y)
						compileAndCompare(t, chip, bl.Graph(), 0)
					})
				}
			}
		}
	}
}

// int32 sorts are exact beyond 2^24: two 16-bit digit passes.
func TestInt32SortIsExact(t *testing.T) {
	for _, desc := range []bool{false, true} {
		for _, op := range []string{"sort", "argsort"} {
			t.Run(fmt.Sprintf("%s/desc=%v", op, desc), func(t *testing.T) {
				bl := core.NewBuilder("isort")
				x := bl.Param("x", core.TensorType{DType: dtype.Int32, Shape: core.Shape{3, 70}})
				y, err := bl.Op(op, []core.Value{x}, core.Attrs{"descending": desc}, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				g := chipGraph(t, bl.Graph())
				exe, err := Compile(g, Options{Chip: presets(t)[0], Verify: true})
				require.NoError(t, err)
				in := core.NewArray(g.Type(x))
				rng := rand.New(rand.NewPCG(3, 4))
				for i := range in.Data { // large values differing in low bits, ties, negatives
					in.Data[i] = float64(int32(rng.IntN(5)-2)*(1<<28) + int32(rng.IntN(3)))
				}
				want, err := core.Interpret(g, []*core.Array{in})
				require.NoError(t, err)
				got, _, err := exe.Run([][]byte{in.Bytes()})
				require.NoError(t, err)
				require.Equal(t, want[0].Bytes(), got[0])
			})
		}
	}
}
