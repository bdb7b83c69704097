package core

import "pypto/dtype"

// iota is the index along one axis: out[i0, ..., in-1] = i_axis, as int32. Compilers
// use it where an op needs positions (argmax as a select of indices, masks by
// position); Python's arange makes host data instead.

func init() {
	Register(&OpDef{Name: "iota", Arity: 0, Attrs: []AttrSpec{{"shape", []int64{}}, {"axis", int64(0)}},
		Doc:   "an int32 tensor of shape whose elements are their own index along axis",
		Infer: inferIota, Eval: evalIota})
}

func inferIota(_ []TensorType, attrs Attrs) (TensorType, *Error) {
	shape, err := attrShape("iota", attrs.Ints("shape"))
	if err != nil {
		return TensorType{}, err
	}
	if len(shape) == 0 {
		return TensorType{}, Errorf(ShapeError, "iota: a 0-d tensor has no axis to count along").Suggest("give a shape with at least one dimension")
	}
	if _, err := normAxis("iota", attrs.Int("axis", 0), len(shape)); err != nil {
		return TensorType{}, err
	}
	return TensorType{DType: dtype.Int32, Shape: shape}, nil
}

func evalIota(_ []*Array, attrs Attrs, out *Array) {
	s := out.Type.Shape
	ax, _ := normAxis("iota", attrs.Int("axis", 0), len(s))
	inner := s[ax+1:].NumElements()
	for i := range out.Data {
		out.Data[i] = float64(i / inner % s[ax])
	}
}
