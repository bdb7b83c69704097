package core

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// geluGraph is gelu(x) with its gradient for the seed 1 per element, decomposed into
// primitives as the compiler runs it.
func geluGraph(t *testing.T, approximate string, n int) *Graph {
	b := NewBuilder("gelu")
	x := b.Param("x", TensorType{DType: dtype.Float32, Shape: Shape{n}})
	y := must(b.Op("gelu", []Value{x}, Attrs{"approximate": approximate}, Location{}))
	loss := must(b.Op("sum", []Value{y}, nil, Location{}))
	seed := must(b.Op("full", nil, Attrs{"value": 1.0, "dtype": "float32", "shape": []int64{}}, Location{}))
	grads, err := Gradients(b, loss, seed, []Value{x})
	require.NoError(t, err)
	b.Output(y)
	b.Output(grads[0])
	g, err := DecomposeGraph(b.Graph())
	require.NoError(t, err)
	return g
}

// The tanh form's decomposition, x / (1 + exp(-2z)), agrees with the formula in
// float64 over the whole range, also where 0.5 * (1 + tanh(z)) would cancel (x near -3
// and below) and where exp overflows (x below about -9.4: the result is -0, the
// formula's value rounded to float32); its gradient stays finite there and matches
// the derivative of the formula.
func TestGeluTanhFormAtExtremes(t *testing.T) {
	xs := []float64{math.Inf(-1), -1e30, -50, -20, -9.5, -5, -3, -1, -1e-3, 0, 1e-3, 0.5, 3, 20, 1e30, math.Inf(1), math.NaN()}
	g := geluGraph(t, "tanh", len(xs))
	in := NewArray(TensorType{DType: dtype.Float32, Shape: Shape{len(xs)}})
	for i, x := range xs {
		in.Data[i] = dtype.Round(dtype.Float32, x)
	}
	out, err := Interpret(g, []*Array{in})
	require.NoError(t, err)
	for i, x := range in.Data {
		z := geluTanhC * (x + 0.044715*x*x*x)
		want := dtype.Round(dtype.Float32, x/(1+math.Exp(-2*z)))
		got, grad := out[0].Data[i], out[1].Data[i]
		if math.IsNaN(want) {
			require.True(t, math.IsNaN(got), "gelu(%g) = %g, want NaN", x, got)
			continue
		}
		// exp(-2z) carries the float32 rounding of its argument, times |2z|
		rel := (4 + math.Min(math.Abs(2*z), 100)) * 0x1p-23
		require.InDelta(t, want, got, rel*math.Abs(want)+1e-38, "gelu(%g)", x)
		if math.IsInf(x, 0) {
			continue
		}
		// d/dx of 0.5 x (1 + tanh(z)), in float64
		th := math.Tanh(z)
		dwant := 0.5*(1+th) + 0.5*x*(1-th*th)*geluTanhC*(1+3*0.044715*x*x)
		if math.Abs(x) > 1e10 { // 1 - th*th underflows in float64 too
			dwant = 0.5 * (1 + th)
		}
		require.False(t, math.IsNaN(grad) || math.IsInf(grad, 0), "gelu'(%g) = %g", x, grad)
		require.InDelta(t, dwant, grad, 1e-5, "gelu'(%g)", x)
	}
}

// The exact form's gradient, Phi(x) + x phi(x), matches the derivative of the formula.
func TestGeluExactGradient(t *testing.T) {
	xs := []float64{-30, -5, -1, -1e-3, 0, 0.7, 4, 30}
	g := geluGraph(t, "none", len(xs))
	in := NewArray(TensorType{DType: dtype.Float32, Shape: Shape{len(xs)}})
	copy(in.Data, xs)
	out, err := Interpret(g, []*Array{in})
	require.NoError(t, err)
	for i, x := range xs {
		dwant := 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
		require.InDelta(t, dwant, out[1].Data[i], 1e-6, "gelu'(%g)", x)
	}
}
