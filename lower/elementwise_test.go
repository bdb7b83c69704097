package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// Every elementwise lowering, checked through the ISA's reference semantics against the
// reference interpreter: each is exact (one rounding, as in the reference), so the
// tolerance is zero.
func TestElementwiseLoweringsOnISA(t *testing.T) {
	f := func(dt dtype.DType, s ...int) core.TensorType { return core.TensorType{DType: dt, Shape: s} }
	unary := []string{"neg", "abs", "exp", "sqrt", "rsqrt", "reciprocal", "log", "isnan", "isfinite", "logical_not"}
	binary := []string{"sub", "div", "maximum", "minimum", "logical_and", "logical_or", "logical_xor",
		"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
	for _, name := range unary {
		for _, in := range []core.TensorType{f(dtype.Float16, 17, 33), f(dtype.Float32, 3, 300)} {
			t.Run(fmt.Sprintf("%s/%s", name, in), func(t *testing.T) {
				bl := core.NewBuilder("u")
				x := bl.Param("x", in)
				y, err := bl.Op(name, []core.Value{x}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				compareOnISA(t, bl.Graph(), 0, 0)
			})
		}
	}
	for _, name := range binary {
		for _, pair := range [][2]core.TensorType{{f(dtype.Float16, 17, 33), f(dtype.Float32, 33)}, {f(dtype.BFloat16, 4, 5, 6), f(dtype.BFloat16, 4, 1, 6)}} {
			t.Run(fmt.Sprintf("%s/%s_%s", name, pair[0], pair[1]), func(t *testing.T) {
				bl := core.NewBuilder("b")
				x := bl.Param("x", pair[0])
				y := bl.Param("y", pair[1])
				z, err := bl.Op(name, []core.Value{x, y}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(z)
				compareOnISA(t, bl.Graph(), 0, 0)
			})
		}
	}
	t.Run("where", func(t *testing.T) {
		bl := core.NewBuilder("w")
		c := bl.Param("c", f(dtype.Bool, 9, 40))
		x := bl.Param("x", f(dtype.Float16, 9, 40))
		y := bl.Param("y", f(dtype.Float32, 40))
		z, err := bl.Op("where", []core.Value{c, x, y}, nil, core.Location{})
		require.NoError(t, err)
		bl.Output(z)
		compareOnISA(t, bl.Graph(), 0, 0)
	})
}

func TestFullOnISA(t *testing.T) {
	bl := core.NewBuilder("full")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{5, 70}})
	c, err := bl.Op("full", nil, core.Attrs{"value": 2.5, "dtype": "float16", "shape": []int64{5, 70}}, core.Location{})
	require.NoError(t, err)
	y, err := bl.Op("mul", []core.Value{x, c}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	compareOnISA(t, bl.Graph(), 0, 0)
}

// softmax and layer_norm decompose into reductions and elementwise ops, all lowered.
func TestNormalisationsOnISA(t *testing.T) {
	for _, op := range []struct {
		name  string
		attrs core.Attrs
	}{{"softmax", core.Attrs{"axis": int64(-1)}}, {"log_softmax", core.Attrs{"axis": int64(-1)}}, {"layer_norm", nil}, {"rms_norm", nil}} {
		t.Run(op.name, func(t *testing.T) {
			bl := core.NewBuilder("norm")
			x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{37, 300}})
			y, err := bl.Op(op.name, []core.Value{x}, op.attrs, core.Location{})
			require.NoError(t, err)
			bl.Output(y)
			compareOnISA(t, bl.Graph(), 1e-5, 1e-6)
		})
	}
}

// Rounding to integers and numpy's floor division and remainder, exact against the
// reference on values that include large, negative and fractional ones.
func TestRoundingAndDivmodOnISA(t *testing.T) {
	f := func(dt dtype.DType, s ...int) core.TensorType { return core.TensorType{DType: dt, Shape: s} }
	for _, name := range []string{"floor", "ceil", "round"} {
		for _, in := range []core.TensorType{f(dtype.Float32, 9, 70), f(dtype.Float16, 5, 33), f(dtype.Int32, 4, 8)} {
			t.Run(name+in.String(), func(t *testing.T) {
				bl := core.NewBuilder("r")
				x := bl.Param("x", in)
				s, err := bl.Op("mul", []core.Value{x, bl.Param("scale", f(in.DType))}, nil, core.Location{})
				require.NoError(t, err)
				y, err := bl.Op(name, []core.Value{s}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				compareOnISA(t, bl.Graph(), 0, 0)
			})
		}
	}
	for _, name := range []string{"mod", "floor_divide"} {
		for _, in := range []core.TensorType{f(dtype.Float32, 9, 70), f(dtype.Int32, 4, 8)} {
			t.Run(name+in.String(), func(t *testing.T) {
				bl := core.NewBuilder("d")
				x := bl.Param("x", in)
				y := bl.Param("y", f(in.DType, in.Shape[1]))
				z, err := bl.Op(name, []core.Value{x, y}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(z)
				compareOnISA(t, bl.Graph(), 0, 0)
			})
		}
	}
}

// gatherCase compiles one gather and compares it bit for bit with the reference, with
// indices spread over [-n, n) (negative ones count from the end).
func gatherCase(t *testing.T, op string, x, idx core.TensorType, axis int64, n int) {
	t.Helper()
	bl := core.NewBuilder("gather")
	xv := bl.Param("x", x)
	iv := bl.Param("idx", idx)
	y, err := bl.Op(op, []core.Value{xv, iv}, core.Attrs{"axis": axis}, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	g := bl.Graph()
	for _, chip := range presets(t) {
		exe, err := Compile(g, Options{Chip: chip, Verify: true})
		require.NoError(t, err)
		ins, raw := randomInputs(g)
		for i := range ins[1].Data { // indices spread over [-n, n)
			ins[1].Data[i] = float64((i*7+3)%(2*n) - n)
		}
		raw[1] = ins[1].Bytes()
		want, err := core.Interpret(g, ins)
		require.NoError(t, err)
		got, _, err := exe.Run(raw)
		require.NoError(t, err)
		require.Equal(t, want[0].Bytes(), got[0], "%s on %s", op, chip.Name)
	}
}

func TestGathersMatchReferenceExactly(t *testing.T) {
	f := func(dt dtype.DType, s ...int) core.TensorType { return core.TensorType{DType: dt, Shape: s} }
	t.Run("index_select rows (embedding lookup)", func(t *testing.T) {
		gatherCase(t, "index_select", f(dtype.Float16, 50, 70), f(dtype.Int32, 33), 0, 50)
	})
	t.Run("index_select columns", func(t *testing.T) {
		gatherCase(t, "index_select", f(dtype.Float32, 9, 40), f(dtype.Int8, 17), -1, 40)
	})
	t.Run("index_select middle axis", func(t *testing.T) {
		gatherCase(t, "index_select", f(dtype.BFloat16, 3, 20, 11), f(dtype.Int32, 5), 1, 20)
	})
	t.Run("take_along_axis last", func(t *testing.T) {
		gatherCase(t, "take_along_axis", f(dtype.Float32, 9, 40), f(dtype.Int32, 9, 6), -1, 40)
	})
	t.Run("take_along_axis first, broadcast", func(t *testing.T) {
		gatherCase(t, "take_along_axis", f(dtype.Float16, 30, 1, 8), f(dtype.Int32, 4, 5, 8), 0, 30)
	})
}

// An index outside [-n, n) is an error, never a wrong element: the device stops, and
// the error says what the reference says (the index and the axis size), at the op's
// line, with the device's report as a cause.
func TestGatherOutOfRangeIsAnError(t *testing.T) {
	bl := core.NewBuilder("oob")
	x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{10, 8}})
	idx := bl.Param("idx", core.TensorType{DType: dtype.Int32, Shape: core.Shape{3}})
	y, err := bl.Op("index_select", []core.Value{x, idx}, nil, core.Location{File: "model.py", Line: 7})
	require.NoError(t, err)
	bl.Output(y)
	exe, err := Compile(bl.Graph(), Options{Chip: presets(t)[0], Verify: true})
	require.NoError(t, err)
	for _, bad := range []float64{10, -11} {
		raw := [][]byte{make([]byte, 320), core.ArrayFromBytes(core.TensorType{DType: dtype.Int32, Shape: core.Shape{3}}, make([]byte, 12)).Bytes()}
		ia := core.NewArray(core.TensorType{DType: dtype.Int32, Shape: core.Shape{3}})
		ia.Data[1] = bad
		raw[1] = ia.Bytes()
		_, _, err = exe.Run(raw)
		var ce *core.Error
		require.ErrorAs(t, err, &ce, "index %v", bad)
		require.Equal(t, core.ValueError, ce.Kind)
		require.Equal(t, fmt.Sprintf("index_select: index %v is out of range for axis 0 of size 10", bad), ce.Message)
		require.Equal(t, core.Location{File: "model.py", Line: 7}, ce.Loc)
		require.Len(t, ce.Causes, 1)
		require.Contains(t, ce.Causes[0], "stopped in task index_select_0")
	}
}

// tanh and erf are evaluated from exp and polynomials in fp32: within a few fp32 ulps
// of the correctly rounded reference, over small, medium and large arguments.
func TestPowOnISA(t *testing.T) {
	bl := core.NewBuilder("pow")
	a := bl.Param("a", core.TensorType{DType: dtype.Float32, Shape: core.Shape{9, 40}})
	e := bl.Param("e", core.TensorType{DType: dtype.Float32, Shape: core.Shape{9, 40}})
	four, err := bl.Op("full", nil, core.Attrs{"value": 4.0, "dtype": "float32", "shape": []int64{}}, core.Location{})
	require.NoError(t, err)
	scaled, err := bl.Op("mul", []core.Value{e, four}, nil, core.Location{})
	require.NoError(t, err)
	whole, err := bl.Op("round", []core.Value{scaled}, nil, core.Location{}) // integer exponents -4..4 (negative bases stay real)
	require.NoError(t, err)
	for _, exp := range []core.Value{whole, scaled} {
		y, err := bl.Op("pow", []core.Value{a, exp}, nil, core.Location{})
		require.NoError(t, err)
		bl.Output(y)
	}
	compareOnISA(t, bl.Graph(), 2e-6, 2e-7)
}

func TestTranscendentalsOnISA(t *testing.T) {
	for _, name := range []string{"tanh", "erf", "sin", "cos"} {
		for _, scale := range []float64{0.01, 1, 6, 300} {
			t.Run(fmt.Sprintf("%s/x%v", name, scale), func(t *testing.T) {
				bl := core.NewBuilder("m")
				x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{9, 70}})
				s, err := bl.Op("full", nil, core.Attrs{"value": scale, "dtype": "float32", "shape": []int64{}}, core.Location{})
				require.NoError(t, err)
				xs, err := bl.Op("mul", []core.Value{x, s}, nil, core.Location{})
				require.NoError(t, err)
				y, err := bl.Op(name, []core.Value{xs}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				compareOnISA(t, bl.Graph(), 2e-6, 2e-7)
			})
		}
	}
}

// Integer powers: exact, wrapping like the reference, negative exponents included.
func TestIntPowMatchesReferenceExactly(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.Int32, dtype.Int8} {
		bl := core.NewBuilder("ipow")
		a := bl.Param("a", core.TensorType{DType: dt, Shape: core.Shape{7, 40}})
		e := bl.Param("e", core.TensorType{DType: dt, Shape: core.Shape{7, 40}})
		y, err := bl.Op("pow", []core.Value{a, e}, nil, core.Location{})
		require.NoError(t, err)
		bl.Output(y)
		compileAndCompare(t, presets(t)[0], bl.Graph(), 0)
	}
}
