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
		Infer: inferGelu, Eval: evalGelu, Decompose: decomposeGelu, VJP: vjpGelu})
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

// geluTanh is 0.5 x (1 + tanh(z)) as x * sigmoid(2z), which is equal and does not
// cancel to 0 where tanh(z) rounds to -1 (x below about -6 in float64).
func geluTanh(x float64) float64 {
	return x * sigmoid(2*geluTanhC*(x+0.044715*x*x*x))
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
	if attrs.Str("approximate", "none") == "tanh" {
		return d.done(d.cast(geluTanhF32(d, x), out))
	}
	half := d.mulScalar(x, 0.5)
	phi := d.op("erf", nil, d.mulScalar(x, 1/math.Sqrt2))
	y := d.op("mul", nil, half, d.op("add", nil, phi, d.scalar(dtype.Float32, 1)))
	return d.done(d.cast(y, out))
}

// geluTanhF32 is the tanh form on a float32 value as x * sigmoid(2z), z =
// sqrt(2/pi) * (x + 0.044715 x^3), which 0.5 * (1 + tanh(z)) equals: x / (1 + exp(p))
// with p = -2z = x * (-2c - 2c*0.044715 x^2). It takes seven steps where tanh takes
// over twenty, and it does not cancel where tanh(z) nears -1 (x below about -3); where
// exp(p) overflows, x / inf is the correct limit -0. Its gradient is gelu's own rule
// (vjp_elementwise.go), which stays finite there.
func geluTanhF32(d *dec, x Value) Value {
	x2 := d.op("mul", nil, x, x)
	p := d.op("mul", nil, d.op("add", nil, d.mulScalar(x2, -2*geluTanhC*0.044715), d.scalar(dtype.Float32, -2*geluTanhC)), x)
	return d.op("div", nil, x, d.op("add", nil, d.op("exp", nil, p), d.scalar(dtype.Float32, 1)))
}

// vjpGelu: the tanh form's derivative is s + x * s * (1 - s) * 2z'(x) with s =
// sigmoid(2z), written s - s*s so that it is 0 where s is 0 or 1. x is clamped to
// [-20, 20] first: beyond, s is exactly 0 or 1 in float32 and the second term 0, which
// the clamp keeps from becoming inf * 0 where x^2 overflows. The exact form's
// derivative is Phi(x) + x * phi(x).
func vjpGelu(c *VJPContext) []Value {
	x := c.f32(c.x(0))
	one := c.constLike(x, 1)
	var d Value
	if c.Attrs.Str("approximate", "none") == "tanh" {
		x := c.op("maximum", nil, c.op("minimum", nil, x, c.constLike(x, 20)), c.constLike(x, -20))
		x2 := c.mul(x, x)
		dz := c.op("add", nil, c.mul(x2, c.constLike(x, 2*geluTanhC*3*0.044715)), c.constLike(x, 2*geluTanhC)) // 2z'(x)
		z2 := c.mul(c.op("add", nil, c.mul(x2, c.constLike(x, 2*geluTanhC*0.044715)), c.constLike(x, 2*geluTanhC)), x)
		s := c.op("sigmoid", nil, z2)
		d = c.op("add", nil, s, c.mul(c.mul(x, c.op("sub", nil, s, c.mul(s, s))), dz))
	} else {
		phi := c.mul(c.op("exp", nil, c.mul(c.mul(x, x), c.constLike(x, -0.5))), c.constLike(x, 1/math.Sqrt(2*math.Pi)))
		cdf := c.mul(c.op("add", nil, one, c.op("erf", nil, c.mul(x, c.constLike(x, 1/math.Sqrt2)))), c.constLike(x, 0.5))
		d = c.op("add", nil, cdf, c.mul(x, phi))
	}
	return []Value{c.mul(c.f32(c.G), d)}
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
