package core

import (
	"math"

	"pypto/dtype"
)

// Binary arithmetic with numpy broadcasting and promotion (PromoteTypes). Integer
// division and modulo by zero give 0, as numpy does (it also warns); integer overflow
// wraps. Float floor_divide and mod follow numpy's divmod exactly, so that
// a == floor_divide(a, b) * b + mod(a, b) and mod takes the sign of b.

func init() {
	arith := []struct {
		name, doc string
		k         kernel
		bools     bool // defined for bool operands (the result is bool)
	}{
		{"add", "a + b", kernel{func(a, b float64) float64 { return a + b }, func(a, b int64) int64 { return a + b }}, false},
		{"sub", "a - b", kernel{func(a, b float64) float64 { return a - b }, func(a, b int64) int64 { return a - b }}, false},
		{"mul", "a * b", kernel{func(a, b float64) float64 { return a * b }, func(a, b int64) int64 { return a * b }}, false},
		{"floor_divide", "a // b, rounded toward -inf (numpy's divmod for floats; integer division by 0 gives 0)", kernel{floorDivFloat, floorDivInt}, false},
		{"mod", "a % b with the sign of b (numpy's remainder; integer modulo 0 gives 0)", kernel{modFloat, modInt}, false},
		{"pow", "a ** b; an integer to a negative integer power gives 0 unless the base is 1 or -1 (numpy raises)", kernel{math.Pow, powInt}, false},
		{"maximum", "the larger of a and b; NaN if either is NaN", kernel{maxFloat, func(a, b int64) int64 { return max(a, b) }}, true},
		{"minimum", "the smaller of a and b; NaN if either is NaN", kernel{minFloat, func(a, b int64) int64 { return min(a, b) }}, true},
	}
	for _, op := range arith {
		Register(&OpDef{Name: op.name, Arity: 2, Doc: op.doc + ", elementwise with numpy broadcasting",
			Infer: inferArith(op.name, op.bools), Eval: evalArith(op.k)})
	}
	Register(&OpDef{Name: "div", Arity: 2, Doc: "a / b (true division) with numpy broadcasting; integer and bool operands give float32",
		Infer: inferDiv, Eval: evalArith(kernel{Float: func(a, b float64) float64 { return a / b }})})
}

func inferArith(name string, bools bool) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, _ Attrs) (TensorType, *Error) {
		shape, err := broadcastAll(name, in)
		if err != nil {
			return TensorType{}, err
		}
		dt := PromoteTypes(in[0].DType, in[1].DType)
		if dt == dtype.Bool && !bools {
			return TensorType{}, Errorf(DTypeError, "%s: not defined for bool tensors", name).
				Suggest("cast the operands to int32 or float32 first (x.astype(p.int32)), or use logical_and / logical_or for bool logic")
		}
		return TensorType{DType: dt, Shape: shape}, nil
	}
}

func inferDiv(in []TensorType, _ Attrs) (TensorType, *Error) {
	shape, err := broadcastAll("div", in)
	if err != nil {
		return TensorType{}, err
	}
	dt := PromoteTypes(in[0].DType, in[1].DType)
	if !dt.IsFloat() {
		dt = dtype.Float32
	}
	return TensorType{DType: dt, Shape: shape}, nil
}

// evalArith computes in the promoted input dtype (the output's for every op here but
// div of integers, which converts them to float first).
func evalArith(k kernel) func([]*Array, Attrs, *Array) {
	return func(in []*Array, _ Attrs, out *Array) {
		ct := PromoteTypes(in[0].Type.DType, in[1].Type.DType)
		if out.Type.DType.IsFloat() {
			ct = out.Type.DType
		}
		evalElementwise(in, out, ct, func(x []float64) float64 { return k.apply(ct, x[0], x[1]) })
	}
}

func maxFloat(a, b float64) float64 {
	if isNaN(a) || isNaN(b) {
		return nan
	}
	return math.Max(a, b)
}

func minFloat(a, b float64) float64 {
	if isNaN(a) || isNaN(b) {
		return nan
	}
	return math.Min(a, b)
}

// floatDivmod is numpy's npy_divmod: the floored quotient and the remainder with the
// sign of b, computed so that both are exact where they can be.
func floatDivmod(a, b float64) (div, mod float64) {
	mod = math.Mod(a, b)
	if b == 0 {
		return a / b, mod
	}
	q := (a - mod) / b
	if mod != 0 {
		if (b < 0) != (mod < 0) {
			mod += b
			q -= 1
		}
	} else {
		mod = math.Copysign(0, b)
	}
	if q != 0 {
		div = math.Floor(q)
		if q-div > 0.5 {
			div += 1
		}
	} else {
		div = math.Copysign(0, a/b)
	}
	return div, mod
}

func floorDivFloat(a, b float64) float64 { d, _ := floatDivmod(a, b); return d }
func modFloat(a, b float64) float64      { _, m := floatDivmod(a, b); return m }

func floorDivInt(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func modInt(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	m := a % b
	if m != 0 && ((m < 0) != (b < 0)) {
		m += b
	}
	return m
}

// powInt is exact integer power by squaring (wrapping on overflow, as numpy does).
func powInt(a, b int64) int64 {
	if b < 0 {
		switch a {
		case 1:
			return 1
		case -1:
			if b%2 == 0 {
				return 1
			}
			return -1
		}
		return 0
	}
	r := int64(1)
	for b > 0 {
		if b&1 == 1 {
			r *= a
		}
		a *= a
		b >>= 1
	}
	return r
}
