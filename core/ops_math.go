package core

import "math"

// The rest of numpy's elementwise set: truncation and sign (the input's dtype), the
// infinity predicates (bool) and three binary float functions; the float math functions
// erfc, exp2, expm1, log1p, log2 and log10 are with exp in ops_unary.go. Each result is
// Go's float64 function rounded once to the result dtype, which is within an ulp of
// numpy's (itself within an ulp of the exact value); the device's numerics are
// documented beside its lowerings (docs/lowering.md).

func init() {
	Register(&OpDef{Name: "trunc", Arity: 1, Doc: "x rounded toward zero (keeps -0.0, NaN and the infinities)",
		Infer: inferUnaryNumeric("trunc"), Eval: evalUnary(math.Trunc)})
	Register(&OpDef{Name: "sign", Arity: 1, Doc: "-1, 0 or 1 by the sign of x in x's dtype (numpy's sign: NaN gives NaN, -0.0 gives 0.0)",
		Infer: inferUnaryNumeric("sign"), Eval: evalUnary(sign)})
	preds := []struct {
		name, doc string
		f         func(float64) bool
	}{
		{"isinf", "x is +inf or -inf (false for integers and bool)", func(x float64) bool { return math.IsInf(x, 0) }},
		{"isposinf", "x is +inf (false for integers and bool)", func(x float64) bool { return math.IsInf(x, 1) }},
		{"isneginf", "x is -inf (false for integers and bool)", func(x float64) bool { return math.IsInf(x, -1) }},
	}
	for _, op := range preds {
		f := op.f
		Register(&OpDef{Name: op.name, Arity: 1, Doc: op.doc, Infer: inferPredicate,
			Eval: evalUnary(func(x float64) float64 { return boolOf(f(x)) })})
	}
	binary := []struct {
		name, doc string
		f         func(a, b float64) float64
	}{
		{"logaddexp", "log(exp(a) + exp(b)) without overflow (numpy's logaddexp: equal operands give a + log 2, so inf and -inf stay)", logAddExp},
		{"hypot", "sqrt(a**2 + b**2) without overflow; inf if either is infinite, even beside NaN (C's hypot)", math.Hypot},
		{"atan2", "the angle of the point (b, a), in [-pi, pi], with C's signed zeros and infinities (numpy's arctan2(a, b))", math.Atan2},
	}
	for _, op := range binary {
		f := op.f
		Register(&OpDef{Name: op.name, Arity: 2, Doc: op.doc + ", elementwise with numpy broadcasting; integer and bool operands give floats (as exp)",
			Infer: inferBinaryFloat(op.name),
			Eval: func(in []*Array, _ Attrs, out *Array) {
				evalElementwise(in, out, out.Type.DType, func(x []float64) float64 { return f(x[0], x[1]) })
			}})
	}
}

// sign is numpy's: 1 above 0, -1 below, +0 for either zero, NaN for NaN.
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	case x == 0:
		return 0
	}
	return x
}

// logAddExp is numpy's npy_logaddexp: the larger operand plus log1p(exp(-|a - b|)).
func logAddExp(a, b float64) float64 {
	if a == b {
		return a + math.Ln2 // inf + inf and -inf + -inf, whose difference is NaN
	}
	d := a - b
	switch {
	case d > 0:
		return a + math.Log1p(math.Exp(-d))
	case d <= 0:
		return b + math.Log1p(math.Exp(d))
	}
	return d // NaN
}

// inferBinaryFloat is the type of a binary float function: the broadcast shape and the
// float dtype of the operands' promotion (floatFor).
func inferBinaryFloat(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, _ Attrs) (TensorType, *Error) {
		shape, err := broadcastAll(name, in)
		if err != nil {
			return TensorType{}, err
		}
		return TensorType{DType: floatFor(PromoteTypes(in[0].DType, in[1].DType)), Shape: shape}, nil
	}
}
