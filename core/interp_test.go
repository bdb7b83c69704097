package core

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

func arr(dt dtype.DType, shape Shape, data ...float64) *Array {
	return &Array{Type: TensorType{DType: dt, Shape: shape}, Data: data}
}

// interpret parses src and runs it, failing the test on any error.
func interpret(t *testing.T, src string, inputs ...*Array) []*Array {
	t.Helper()
	g, err := Parse(src)
	require.NoError(t, err)
	out, err := Interpret(g, inputs)
	require.NoError(t, err)
	return out
}

func TestInterpretBroadcastAddMul(t *testing.T) {
	out := interpret(t, `graph g(%a: f32[3,1], %b: f32[4]) {
  %2 = add(%a, %b) : f32[3,4]
  %3 = mul(%a, %b) : f32[3,4]
  return %2, %3
}`, arr(dtype.Float32, Shape{3, 1}, 1, 2, 3), arr(dtype.Float32, Shape{4}, 10, 20, 30, 40))
	require.Len(t, out, 2)
	assert.Equal(t, TensorType{DType: dtype.Float32, Shape: Shape{3, 4}}, out[0].Type)
	assert.Equal(t, []float64{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}, out[0].Data)
	assert.Equal(t, []float64{10, 20, 30, 40, 20, 40, 60, 80, 30, 60, 90, 120}, out[1].Data)
}

func TestInterpretDTypePromotion(t *testing.T) {
	cases := []struct {
		a, b, want dtype.DType
		x, y, sum  float64
	}{
		{dtype.Float16, dtype.Float32, dtype.Float32, 0.5, 1e-4, float64(float32(0.5 + 1e-4))},
		{dtype.Int8, dtype.Float16, dtype.Float16, 100, 0.25, 100.25},
		{dtype.Float16, dtype.BFloat16, dtype.Float32, 2048, 1, 2049}, // neither half type holds 2049
		{dtype.Int8, dtype.Int32, dtype.Int32, 127, 1000, 1127},
		{dtype.Int8, dtype.Int8, dtype.Int8, 100, 100, -56}, // wraps like a two's-complement store
		{dtype.Bool, dtype.Int8, dtype.Int8, 1, 5, 6},
	}
	for _, c := range cases {
		t.Run(c.a.String()+"+"+c.b.String(), func(t *testing.T) {
			b := NewBuilder("p")
			x, y := b.Param("x", TensorType{DType: c.a, Shape: Shape{1}}), b.Param("y", TensorType{DType: c.b, Shape: Shape{1}})
			b.Output(mustOp(t, b, "add", nil, x, y))
			out, err := Interpret(b.Graph(), []*Array{arr(c.a, Shape{1}, c.x), arr(c.b, Shape{1}, c.y)})
			require.NoError(t, err)
			assert.Equal(t, c.want, out[0].Type.DType)
			assert.Equal(t, c.sum, out[0].Data[0])
		})
	}
}

func TestInterpretFloat16Rounding(t *testing.T) {
	src := `graph g(%a: f16[4], %b: f16[4]) {
  %2 = add(%a, %b) : f16[4]
  return %2
}`
	// 2049 is halfway between f16 neighbours 2048 and 2050: ties go to even (2048);
	// 2051 rounds to 2052; 65504+16 overflows to +inf only at the halfway point 65520.
	out := interpret(t, src, arr(dtype.Float16, Shape{4}, 2048, 2048, 65504, 65504), arr(dtype.Float16, Shape{4}, 1, 3, 8, 16))
	assert.Equal(t, []float64{2048, 2052, 65504, math.Inf(1)}, out[0].Data)

	// Inputs are rounded to their dtype before use, as loading them would: 0.1 is not an f16.
	out = interpret(t, src, arr(dtype.Float16, Shape{4}, 0.1, 0, 0, 0), arr(dtype.Float16, Shape{4}, 0, 0, 0, 0))
	assert.Equal(t, float64(dtype.Float16ToFloat32(dtype.Float32ToFloat16(0.1))), out[0].Data[0])
	assert.NotEqual(t, 0.1, out[0].Data[0])
}

func TestInterpretMatmul(t *testing.T) {
	a := arr(dtype.Float32, Shape{2, 3}, 1, 2, 3, 4, 5, 6)     // [[1 2 3] [4 5 6]]
	b := arr(dtype.Float32, Shape{3, 2}, 7, 8, 9, 10, 11, 12)  // [[7 8] [9 10] [11 12]]
	at := arr(dtype.Float32, Shape{3, 2}, 1, 4, 2, 5, 3, 6)    // a transposed
	bt := arr(dtype.Float32, Shape{2, 3}, 7, 9, 11, 8, 10, 12) // b transposed
	want := []float64{58, 64, 139, 154}                        // a @ b
	for _, c := range []struct {
		ta, tb string
		a, b   *Array
	}{{"false", "false", a, b}, {"true", "false", at, b}, {"false", "true", a, bt}, {"true", "true", at, bt}} {
		t.Run("ta="+c.ta+",tb="+c.tb, func(t *testing.T) {
			src := "graph g(%a: f32" + c.a.Type.Shape.String() + ", %b: f32" + c.b.Type.Shape.String() + ") {\n" +
				"  %2 = matmul(%a, %b) {transpose_a=" + c.ta + ", transpose_b=" + c.tb + "} : f32[2,2]\n  return %2\n}"
			out := interpret(t, src, c.a, c.b)
			assert.Equal(t, want, out[0].Data)
		})
	}
}

func TestInterpretInt8MatmulGivesInt32(t *testing.T) {
	// 127*127 + 127*127 + (-128)*(-128) = 48642: far outside int8, exact in int32.
	out := interpret(t, `graph g(%a: i8[1,3], %b: i8[3,1]) {
  %2 = matmul(%a, %b) : i32[1,1]
  return %2
}`, arr(dtype.Int8, Shape{1, 3}, 127, 127, -128), arr(dtype.Int8, Shape{3, 1}, 127, 127, -128))
	assert.Equal(t, dtype.Int32, out[0].Type.DType)
	assert.Equal(t, []float64{48642}, out[0].Data)
}

func TestInterpretHalfMatmulRoundsOnce(t *testing.T) {
	// The reference sums exactly and rounds the result once: 2048 + 1 + 1 = 2050 in f16,
	// where rounding after every step would stick at 2048.
	out := interpret(t, `graph g(%a: f16[1,3], %b: f16[3,1]) {
  %2 = matmul(%a, %b) : f16[1,1]
  return %2
}`, arr(dtype.Float16, Shape{1, 3}, 2048, 1, 1), arr(dtype.Float16, Shape{3, 1}, 1, 1, 1))
	assert.Equal(t, []float64{2050}, out[0].Data)
}

func TestInterpretReluSpecialValues(t *testing.T) {
	negZero := math.Copysign(0, -1)
	out := interpret(t, `graph g(%x: f32[6]) {
  %1 = relu(%x) : f32[6]
  return %1
}`, arr(dtype.Float32, Shape{6}, math.NaN(), negZero, -3, 2.5, math.Inf(-1), math.Inf(1)))
	d := out[0].Data
	assert.True(t, math.IsNaN(d[0]), "NaN stays NaN")
	assert.True(t, d[1] == 0 && !math.Signbit(d[1]), "-0 gives +0, as numpy's maximum(x, 0)")
	assert.Equal(t, []float64{0, 2.5, 0, math.Inf(1)}, d[2:])
}

func TestInterpretZeroSizeDims(t *testing.T) {
	out := interpret(t, `graph g(%a: f32[0,3], %b: f32[3], %m: f32[2,0], %n: f32[0,3]) {
  %4 = add(%a, %b) : f32[0,3]
  %5 = matmul(%m, %n) : f32[2,3]
  %6 = relu(%a) : f32[0,3]
  return %4, %5, %6
}`, arr(dtype.Float32, Shape{0, 3}), arr(dtype.Float32, Shape{3}, 1, 2, 3), arr(dtype.Float32, Shape{2, 0}), arr(dtype.Float32, Shape{0, 3}))
	assert.Empty(t, out[0].Data)
	assert.Equal(t, Shape{0, 3}, out[0].Type.Shape)
	assert.Equal(t, []float64{0, 0, 0, 0, 0, 0}, out[1].Data, "an empty sum is zero")
	assert.Empty(t, out[2].Data)
}

func TestInterpretScalars(t *testing.T) {
	out := interpret(t, `graph g(%s: f32[], %v: f32[2]) {
  %2 = mul(%s, %v) : f32[2]
  return %2
}`, arr(dtype.Float32, Shape{}, 3), arr(dtype.Float32, Shape{2}, 1, 2))
	assert.Equal(t, []float64{3, 6}, out[0].Data)
}

func TestInterpretDoesNotAliasInputsOrOutputs(t *testing.T) {
	x := arr(dtype.Float32, Shape{2}, 1, 2)
	out := interpret(t, `graph g(%x: f32[2]) {
  return %x, %x
}`, x)
	out[0].Data[0] = 100
	assert.Equal(t, 1.0, x.Data[0], "the caller's input is untouched")
	assert.Equal(t, 1.0, out[1].Data[0], "each output has its own buffer")
}

func TestInterpretInputErrors(t *testing.T) {
	g, err := Parse(`graph g(%x: f16[2,3], %"y z": f32[3]) {
  %2 = add(%x, %"y z") : f32[2,3]
  return %2
}`)
	require.NoError(t, err)
	good := arr(dtype.Float32, Shape{3}, 1, 2, 3)
	cases := []struct {
		name   string
		inputs []*Array
		want   string
	}{
		{"too few", []*Array{arr(dtype.Float16, Shape{2, 3}, 0, 0, 0, 0, 0, 0)},
			`graph g takes 2 inputs (%x, %"y z"), got 1`},
		{"nil", []*Array{nil, good}, "input 0 (%x) is nil"},
		{"wrong dtype", []*Array{arr(dtype.Float32, Shape{2, 3}, 0, 0, 0, 0, 0, 0), good},
			"input 0 (%x): expected f16[2,3], got f32[2,3]"},
		{"wrong shape", []*Array{arr(dtype.Float16, Shape{3, 2}, 0, 0, 0, 0, 0, 0), good},
			"input 0 (%x): expected f16[2,3], got f16[3,2]"},
		{"wrong data length", []*Array{arr(dtype.Float16, Shape{2, 3}, 0, 0, 0, 0, 0, 0), arr(dtype.Float32, Shape{3}, 1)},
			`input 1 (%"y z") holds 1 values, but its type f32[3] has 3 elements`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Interpret(g, c.inputs)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, ValueError, e.Kind)
			assert.Equal(t, c.want, e.Message)
		})
	}
}

func TestInterpretRejectsMalformedGraphs(t *testing.T) {
	g := verifyBase(t)
	g.Nodes[3].Type.DType = dtype.Float16
	_, err := Interpret(g, []*Array{arr(dtype.Float32, Shape{2, 2}, 1, 2, 3, 4), arr(dtype.Float32, Shape{2, 2}, 1, 2, 3, 4)})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, InternalError, e.Kind)
}

// interp_test_panics stands for a buggy reference implementation (tests only).
func init() {
	Register(&OpDef{Name: "interp_test_panics", Arity: 1, NoGrad: "a test op", Infer: func(in []TensorType, _ Attrs) (TensorType, *Error) { return in[0], nil },
		Eval: func([]*Array, Attrs, *Array) { panic("boom") }})
}

func TestInterpretReportsPanickingEval(t *testing.T) {
	out, err := Interpret(mustParse(t, "graph g(%x: f32[1]) {\n  %1 = interp_test_panics(%x) : f32[1]\n  return %1\n}"),
		[]*Array{arr(dtype.Float32, Shape{1}, 1)})
	assert.Nil(t, out)
	assert.EqualError(t, err, "InternalError: graph g: %1 = interp_test_panics(%x) : f32[1]: reference implementation of interp_test_panics panicked: boom")
}

func mustParse(t *testing.T, src string) *Graph {
	t.Helper()
	g, err := Parse(src)
	require.NoError(t, err)
	return g
}
