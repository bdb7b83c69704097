package core

import (
	"math"

	"pypto/dtype"
)

// Activations are composites over the unary and binary primitives, computed in
// float32 and rounded to the result dtype at the end (floatFor of the input, like the
// math functions). clip takes its bounds as tensors (Python scalars become 0-d ones),
// so it is maximum then minimum, with numpy's NaN propagation.

func init() {
	Register(&OpDef{Name: "sigmoid", Arity: 1, Doc: "1 / (1 + exp(-x))",
		Infer: inferUnaryFloat, Eval: evalUnary(sigmoid), Decompose: decomposeSigmoid})
	Register(&OpDef{Name: "silu", Arity: 1, Doc: "x * sigmoid(x) (swish)",
		Infer: inferUnaryFloat, Eval: evalUnary(func(x float64) float64 { return x * sigmoid(x) }), Decompose: decomposeSilu})
	Register(&OpDef{Name: "gelu", Arity: 1, Attrs: []AttrSpec{{"approximate", "none"}},
		Doc:   "x * Phi(x): exact with erf (approximate=\"none\") or the tanh form (approximate=\"tanh\"), as torch",
		Infer: inferGelu, Eval: evalGelu, Decompose: decomposeGelu})
	Register(&OpDef{Name: "clip", Arity: 3, Doc: "minimum(maximum(x, lo), hi) with broadcasting; NaN propagates",
		Infer: inferClip, Eval: evalClip, Decompose: decomposeClip})
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x) // avoids exp overflow for large negative x
	return e / (1 + e)
}

func geluExact(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

const geluTanhC = 0.7978845608028654 // sqrt(2/pi)

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(geluTanhC*(x+0.044715*x*x*x)))
}

func inferGelu(in []TensorType, attrs Attrs) (TensorType, *Error) {
	switch a := attrs.Str("approximate", "none"); a {
	case "none", "tanh":
	default:
		return TensorType{}, Errorf(ValueError, "gelu: approximate=%q is not one of \"none\", \"tanh\"", a)
	}
	return inferUnaryFloat(in, attrs)
}

func evalGelu(in []*Array, attrs Attrs, out *Array) {
	f := geluExact
	if attrs.Str("approximate", "none") == "tanh" {
		f = geluTanh
	}
	evalUnary(f)(in, attrs, out)
}

func decomposeSigmoid(b *Builder, in []Value, _ Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	out := floatFor(d.typ(in[0]).DType)
	return d.done(d.cast(sigmoidF32(d, d.cast(in[0], dtype.Float32)), out))
}

// sigmoidF32 is 1 / (1 + exp(-x)) on a float32 value; exp overflowing to inf for
// large negative x gives the correct limit 0.
func sigmoidF32(d *dec, x Value) Value {
	one := d.scalar(dtype.Float32, 1)
	return d.op("div", nil, one, d.op("add", nil, one, d.op("exp", nil, d.op("neg", nil, x))))
}

func decomposeSilu(b *Builder, in []Value, _ Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	out := floatFor(d.typ(in[0]).DType)
	x := d.cast(in[0], dtype.Float32)
	return d.done(d.cast(d.op("mul", nil, x, sigmoidF32(d, x)), out))
}

func decomposeGelu(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	out := floatFor(d.typ(in[0]).DType)
	x := d.cast(in[0], dtype.Float32)
	half := d.mulScalar(x, 0.5)
	var phi Value
	if attrs.Str("approximate", "none") == "tanh" {
		cube := d.op("mul", nil, d.op("mul", nil, x, x), x)
		inner := d.mulScalar(d.op("add", nil, x, d.mulScalar(cube, 0.044715)), geluTanhC)
		phi = d.op("tanh", nil, inner)
	} else {
		phi = d.op("erf", nil, d.mulScalar(x, 1/math.Sqrt2))
	}
	y := d.op("mul", nil, half, d.op("add", nil, phi, d.scalar(dtype.Float32, 1)))
	return d.done(d.cast(y, out))
}

// mulScalar is v * c for a float32 value v.
func (d *dec) mulScalar(v Value, c float64) Value {
	return d.op("mul", nil, v, d.scalar(dtype.Float32, c))
}

func inferClip(in []TensorType, _ Attrs) (TensorType, *Error) {
	shape, err := broadcastAll("clip", in)
	if err != nil {
		return TensorType{}, err
	}
	dt := PromoteTypes(PromoteTypes(in[0].DType, in[1].DType), in[2].DType)
	return TensorType{DType: dt, Shape: shape}, nil
}

func evalClip(in []*Array, _ Attrs, out *Array) {
	ct := out.Type.DType
	evalElementwise(in, out, ct, func(x []float64) float64 { return minFloat(maxFloat(x[0], x[1]), x[2]) })
}

func decomposeClip(b *Builder, in []Value, _ Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	return d.done(d.op("minimum", nil, d.op("maximum", nil, in[0], in[1]), in[2]))
}
