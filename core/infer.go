package core

import "pypto/dtype"

// InferOp checks inputs and attributes of a registered op and returns the result type
// and the attributes completed with defaults. It is what Builder.Op and the Python
// front end's eager mode use, so an error is reported at the call that caused it.
// Symbolic inputs (or attributes) get a symbolic result; the constraints that only
// symbol values can decide are dropped here (InferOpConstraints returns them).
func InferOp(name string, in []TensorType, attrs Attrs) (TensorType, Attrs, *Error) {
	t, full, _, err := InferOpConstraints(name, in, attrs)
	return t, full, err
}

// InferOpConstraints is InferOp that also returns the constraints a symbolic result
// needs (see Constraint); none for concrete inputs.
func InferOpConstraints(name string, in []TensorType, attrs Attrs) (TensorType, Attrs, []Constraint, *Error) {
	def, ok := LookupOp(name)
	if !ok {
		return TensorType{}, nil, nil, Errorf(ValueError, "unknown op %q", name).Suggest("known ops: %v", OpNames())
	}
	if !def.AcceptsArity(len(in)) {
		return TensorType{}, nil, nil, Errorf(ValueError, "%s takes %s tensor inputs, got %d", name, def.ArityString(), len(in))
	}
	for i, t := range in {
		if !t.DType.Valid() {
			return TensorType{}, nil, nil, Errorf(DTypeError, "%s: input %d has invalid dtype", name, i)
		}
	}
	full, err := def.withDefaults(attrs)
	if err != nil {
		return TensorType{}, nil, nil, err
	}
	if err := checkLayouts(def.Name, in); err != nil {
		return TensorType{}, nil, nil, err
	}
	var t TensorType
	var cons []Constraint
	if isSymbolicCall(in, full) {
		t, cons, err = inferSymbolic(def, in, full)
	} else {
		t, err = def.Infer(in, full)
	}
	if err != nil {
		return TensorType{}, nil, nil, err
	}
	if t.Layout, err = resultLayout(def.Name, in, t, full); err != nil {
		return TensorType{}, nil, nil, err
	}
	if err := checkResultSize(name, t); err != nil {
		return TensorType{}, nil, nil, err
	}
	return t, full, cons, nil
}

// BroadcastShapes applies numpy broadcasting to two shapes.
func BroadcastShapes(a, b Shape) (Shape, bool) {
	n := max(len(a), len(b))
	out := make(Shape, n)
	for i := 0; i < n; i++ {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// BroadcastStrides gives the element strides of a contiguous tensor of shape in along
// each axis of the shape out it broadcasts to: 0 on the axes in lacks or has size 1 on,
// so indexing with them reads the broadcast operand without materialising it.
func BroadcastStrides(in, out Shape) []int {
	st := make([]int, len(out))
	inStrides := in.Strides()
	off := len(out) - len(in)
	for i := range in {
		if in[i] != 1 {
			st[off+i] = inStrides[i]
		}
	}
	return st
}

// promotionRank orders dtypes for binary-op promotion: the result of two dtypes is the
// one of higher rank, except that float16 with bfloat16 gives float32 (neither holds
// the other) and any float with an integer gives that float.
var promotionRank = map[dtype.DType]int{dtype.Bool: 0, dtype.Int8: 1, dtype.Int32: 2, dtype.Int64: 3, dtype.BFloat16: 4, dtype.Float16: 4, dtype.Float32: 5}

// PromoteTypes is the dtype of a binary elementwise op on a and b.
func PromoteTypes(a, b dtype.DType) dtype.DType {
	if a == b {
		return a
	}
	if (a == dtype.Float16 && b == dtype.BFloat16) || (a == dtype.BFloat16 && b == dtype.Float16) {
		return dtype.Float32
	}
	if promotionRank[a] >= promotionRank[b] {
		return a
	}
	return b
}
