package core

import (
	"math"

	"pypto/dtype"
)

// Unary elementwise ops. Those that keep values in their domain (neg, abs, relu,
// floor, ceil, round) keep the dtype; math functions give floatFor(dtype), numpy's
// rule (exp of int8 is float16). Each result is the float64 value rounded once.

func init() {
	same := []struct {
		name, doc string
		f         func(float64) float64
	}{
		{"neg", "-x (integers wrap: -(-128) is -128 in int8)", func(x float64) float64 { return -x }},
		{"abs", "|x| (integers wrap: abs(-128) is -128 in int8, as in numpy)", math.Abs},
		{"relu", "max(x, 0); NaN stays NaN and -0 gives +0 (as numpy's maximum(x, 0) and torch.relu)", relu},
		{"floor", "the largest integer <= x", math.Floor},
		{"ceil", "the smallest integer >= x", math.Ceil},
	}
	for _, op := range same {
		Register(&OpDef{Name: op.name, Arity: 1, Doc: op.doc, Infer: inferUnaryNumeric(op.name), Eval: evalUnary(op.f)})
	}
	Register(&OpDef{Name: "round", Arity: 1, Attrs: []AttrSpec{{"decimals", int64(0)}},
		Doc: "x rounded to decimals places, halves to even (numpy's round: rint(x * 10**decimals) / 10**decimals, " +
			"each step rounded to x's dtype; negative decimals divide first, and integers round exactly)",
		Infer: inferUnaryNumeric("round"), Eval: evalRound})
	math1 := []struct {
		name, doc string
		f         func(float64) float64
	}{
		{"exp", "e**x", math.Exp},
		{"log", "the natural logarithm; -inf at 0, NaN below", math.Log},
		{"sqrt", "the square root; NaN below 0", math.Sqrt},
		{"rsqrt", "1 / sqrt(x); inf at 0, NaN below", func(x float64) float64 { return 1 / math.Sqrt(x) }},
		{"reciprocal", "1 / x (integers give floats, as in torch)", func(x float64) float64 { return 1 / x }},
		{"sin", "the sine (radians)", math.Sin},
		{"cos", "the cosine (radians)", math.Cos},
		{"tanh", "the hyperbolic tangent", math.Tanh},
		{"erf", "the error function", math.Erf},
		{"erfc", "the complementary error function 1 - erf(x), accurate where it is tiny (large x)", math.Erfc},
		{"exp2", "2**x", math.Exp2},
		{"expm1", "e**x - 1, accurate near 0", math.Expm1},
		{"log1p", "log(1 + x), accurate near 0; -inf at -1, NaN below", math.Log1p},
		{"log2", "the base-2 logarithm (exact at powers of two); -inf at 0, NaN below", math.Log2},
		{"log10", "the base-10 logarithm; -inf at 0, NaN below", math.Log10},
	}
	for _, op := range math1 {
		Register(&OpDef{Name: op.name, Arity: 1, Doc: op.doc + "; integer and bool inputs give floats (int32: float32, int8 and bool: float16)",
			Infer: inferUnaryFloat, Eval: evalUnary(op.f)})
	}
	Register(&OpDef{Name: "isnan", Arity: 1, Doc: "x is NaN (false for integers and bool)", Infer: inferPredicate,
		Eval: evalUnary(func(x float64) float64 { return boolOf(isNaN(x)) })})
	Register(&OpDef{Name: "isfinite", Arity: 1, Doc: "x is neither infinite nor NaN (true for integers and bool)", Infer: inferPredicate,
		Eval: evalUnary(func(x float64) float64 { return boolOf(!math.IsInf(x, 0) && !isNaN(x)) })})
	Register(&OpDef{Name: "logical_not", Arity: 1, Doc: "x == 0, as bool (NaN is true, so its negation is false)", Infer: inferPredicate,
		Eval: evalUnary(func(x float64) float64 { return boolOf(x == 0) })})
}

// evalRound follows numpy's round: for decimals d >= 0, rint(x * f) / f with f = 10**d,
// and for d < 0, rint(x / f) * f with f = 10**-d, every product and quotient (and f
// itself) rounded to x's dtype, as numpy computes them. Integers are unchanged for
// d >= 0 and otherwise rounded exactly to a multiple of f, halves to even (numpy does
// that in float64, which is exact for int32).
func evalRound(in []*Array, attrs Attrs, out *Array) {
	d := attrs.Int("decimals", 0)
	dt := out.Type.DType
	for i, x := range in[0].Data {
		out.Data[i] = RoundDecimals(dt, x, d)
	}
}

// RoundDecimals is round(x, d) for one value of dtype dt (see evalRound).
func RoundDecimals(dt dtype.DType, x float64, d int) float64 {
	if !dt.IsFloat() {
		if d >= 0 {
			return x
		}
		f := math.Pow(10, float64(-d))
		return dtype.Round(dt, math.RoundToEven(x/f)*f)
	}
	r := func(v float64) float64 { return dtype.Round(dt, v) }
	if d >= 0 {
		f := r(math.Pow(10, float64(d)))
		return r(math.RoundToEven(r(x*f)) / f)
	}
	f := r(math.Pow(10, float64(-d)))
	return r(math.RoundToEven(r(x/f)) * f)
}

func relu(x float64) float64 {
	if x <= 0 {
		return 0 // -0 too: the vector unit's TRELU, numpy's maximum(x, 0) and torch agree
	}
	return x // NaN passes through
}

func inferUnaryNumeric(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, _ Attrs) (TensorType, *Error) {
		if in[0].DType == dtype.Bool {
			return TensorType{}, Errorf(DTypeError, "%s: not defined for bool tensors", name).
				Suggest("cast to int32 or float32 first: x.astype(p.int32)")
		}
		return TensorType{DType: in[0].DType, Shape: in[0].Shape.Clone()}, nil
	}
}

func inferUnaryFloat(in []TensorType, _ Attrs) (TensorType, *Error) {
	return TensorType{DType: floatFor(in[0].DType), Shape: in[0].Shape.Clone()}, nil
}

func inferPredicate(in []TensorType, _ Attrs) (TensorType, *Error) {
	return TensorType{DType: dtype.Bool, Shape: in[0].Shape.Clone()}, nil
}

func evalUnary(f func(float64) float64) func([]*Array, Attrs, *Array) {
	return func(in []*Array, _ Attrs, out *Array) {
		for i, v := range in[0].Data {
			out.Data[i] = dtype.Round(out.Type.DType, f(v))
		}
	}
}
