package core

import (
	"pypto/dtype"
)

// cast converts between every pair of dtypes with dtype.Round, the one conversion rule
// of the whole system: to a float, round to nearest even (overflow gives inf, NaN stays
// NaN); float to integer, truncate toward zero, NaN gives 0, then wrap modulo 2^bits
// like a two's-complement store (numpy leaves out-of-range conversions undefined);
// integer to narrower integer, wrap; to bool, nonzero (and NaN) is true.
//
// full is a constant: a tensor of the given shape and dtype filled with one value. The
// front end does not need it for Python scalars (those are bound as 0-d host tensors),
// but decompositions of composite ops do (the 1 in 1/(1+exp(-x))).

func init() {
	Register(&OpDef{Name: "cast", Arity: 1, Attrs: []AttrSpec{{"dtype", "float32"}},
		Doc:   "x converted to dtype: floats round to nearest even; float to int truncates toward zero (NaN gives 0) and wraps; to bool is x != 0",
		Infer: inferCast, Eval: evalCast})
	Register(&OpDef{Name: "full", Arity: 0, Attrs: []AttrSpec{{"value", 0.0}, {"dtype", "float32"}, {"shape", []int64{}}},
		Doc:   "a tensor of shape and dtype filled with value (rounded to dtype)",
		Infer: inferFull, Eval: evalFull})
}

// attrDType parses a dtype attribute, with an error that lists the known names.
func attrDType(op, name string, attrs Attrs) (dtype.DType, *Error) {
	s := attrs.Str(name, "")
	d, err := dtype.Parse(s)
	if err != nil {
		return dtype.Invalid, Errorf(DTypeError, "%s: unknown dtype %q", op, s).
			Suggest("use one of float32, float16, bfloat16, int8, int32, bool")
	}
	return d, nil
}

func inferCast(in []TensorType, attrs Attrs) (TensorType, *Error) {
	d, err := attrDType("cast", "dtype", attrs)
	if err != nil {
		return TensorType{}, err
	}
	return TensorType{DType: d, Shape: in[0].Shape.Clone()}, nil
}

func evalCast(in []*Array, _ Attrs, out *Array) {
	for i, v := range in[0].Data {
		out.Data[i] = dtype.Round(out.Type.DType, v)
	}
}

func inferFull(_ []TensorType, attrs Attrs) (TensorType, *Error) {
	d, err := attrDType("full", "dtype", attrs)
	if err != nil {
		return TensorType{}, err
	}
	shape, err := attrShape("full", attrs.Ints("shape"))
	if err != nil {
		return TensorType{}, err
	}
	return TensorType{DType: d, Shape: shape}, nil
}

func evalFull(_ []*Array, attrs Attrs, out *Array) {
	v := dtype.Round(out.Type.DType, attrs.Float("value", 0))
	for i := range out.Data {
		out.Data[i] = v
	}
}

// attrShape checks a shape given as an attribute: non-negative dims whose product is
// small enough to allocate.
func attrShape(op string, dims []int) (Shape, *Error) {
	s := Shape(dims).Clone()
	if s == nil {
		s = Shape{}
	}
	for _, d := range s {
		if d < 0 {
			return nil, Errorf(ShapeError, "%s: shape %v has a negative dimension", op, s)
		}
	}
	if msg := checkType(TensorType{DType: dtype.Float32, Shape: s}); msg != "" {
		return nil, Errorf(ShapeError, "%s: %s", op, msg)
	}
	return s, nil
}
