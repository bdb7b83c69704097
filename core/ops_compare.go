package core

import "pypto/dtype"

// Comparisons and logic give bool tensors with numpy broadcasting. Operands are
// compared exactly after conversion to their promoted dtype; NaN compares unequal to
// everything, itself included. Logical ops treat nonzero (and NaN) as true.

func init() {
	cmps := []struct {
		name, sym string
		f         func(a, b float64) bool
	}{
		{"equal", "==", func(a, b float64) bool { return a == b }},
		{"not_equal", "!=", func(a, b float64) bool { return a != b }},
		{"less", "<", func(a, b float64) bool { return a < b }},
		{"less_equal", "<=", func(a, b float64) bool { return a <= b }},
		{"greater", ">", func(a, b float64) bool { return a > b }},
		{"greater_equal", ">=", func(a, b float64) bool { return a >= b }},
	}
	for _, c := range cmps {
		f := c.f
		Register(&OpDef{Name: c.name, Arity: 2, Doc: "a " + c.sym + " b as bool, with numpy broadcasting",
			Infer: inferBoolBinary(c.name), Eval: evalBoolBinary(true, f)})
	}
	logic := []struct {
		name, doc string
		f         func(a, b bool) bool
	}{
		{"logical_and", "a and b", func(a, b bool) bool { return a && b }},
		{"logical_or", "a or b", func(a, b bool) bool { return a || b }},
		{"logical_xor", "a xor b", func(a, b bool) bool { return a != b }},
	}
	for _, l := range logic {
		f := l.f
		Register(&OpDef{Name: l.name, Arity: 2, Doc: l.doc + " as bool (nonzero is true), with numpy broadcasting",
			Infer: inferBoolBinary(l.name), Eval: evalBoolBinary(false, func(a, b float64) bool { return f(a != 0, b != 0) })})
	}
	Register(&OpDef{Name: "where", Arity: 3, Doc: "cond ? a : b elementwise, with the three broadcast together; the result has the promotion of a and b",
		Infer: inferWhere, Eval: evalWhere})
}

func inferBoolBinary(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, _ Attrs) (TensorType, *Error) {
		shape, err := broadcastAll(name, in)
		if err != nil {
			return TensorType{}, err
		}
		return TensorType{DType: dtype.Bool, Shape: shape}, nil
	}
}

// evalBoolBinary compares in the promoted dtype when promote is set (so an int32 and a
// float16 compare as float16 values, as numpy would); logic ops look at raw values.
func evalBoolBinary(promote bool, f func(a, b float64) bool) func([]*Array, Attrs, *Array) {
	return func(in []*Array, _ Attrs, out *Array) {
		ct := dtype.Invalid // no conversion: logic looks at the values as they are
		if promote {
			ct = PromoteTypes(in[0].Type.DType, in[1].Type.DType)
		}
		evalElementwise(in, out, ct, func(x []float64) float64 { return boolOf(f(x[0], x[1])) })
	}
}

func inferWhere(in []TensorType, _ Attrs) (TensorType, *Error) {
	shape, err := broadcastAll("where", in)
	if err != nil {
		return TensorType{}, err
	}
	return TensorType{DType: PromoteTypes(in[1].DType, in[2].DType), Shape: shape}, nil
}

func evalWhere(in []*Array, _ Attrs, out *Array) {
	evalElementwise(in, out, dtype.Invalid, func(x []float64) float64 {
		if x[0] != 0 {
			return dtype.Round(out.Type.DType, x[1])
		}
		return dtype.Round(out.Type.DType, x[2])
	})
}
