package core

import "pypto/dtype"

// index_put and scatter write elements of a tensor at positions that index tensors
// hold, known only when the program runs (torch's index_put and scatter). Like
// slice_update they are functional, and the compiler writes them in place into x's
// bytes when x allows it (lower/lowering_scatter.go), so only the written elements
// move.
//
// Duplicate positions are written in the order of the index elements (row-major), so
// the last write wins; with accumulation every write adds, in that order, rounding to
// x's dtype after each add. An index outside its axis is a ValueError naming it (the
// reference raises it; the device reports it through the reference, like a gather's).

func init() {
	Register(&OpDef{Name: "index_put", Arity: 3, MaxArity: Variadic, Attrs: []AttrSpec{{"accumulate", false}},
		Doc:   "x with x[idx_0[b], ..., idx_{k-1}[b], ...] = values[b, ...] for the integer index tensors idx (inputs 2..., one per leading axis, all of one shape B; negative ones count from the end); values has shape B + x.shape[k:]; duplicates: the last wins, or with accumulate every one adds (torch's index_put)",
		Infer: inferIndexPut, Eval: evalIndexPut, VJP: vjpIndexPut})
	Register(&OpDef{Name: "scatter", Arity: 3, Attrs: []AttrSpec{{"dim", int64(0)}, {"reduce", "none"}},
		Doc:   "x with x[..., index[p], ...] = src[p] along dim for every position p of index (torch's scatter; index in [0, n), at most src's size on every axis and x's off dim); duplicates: the last wins, or with reduce=\"add\" every one adds (scatter_add)",
		Infer: inferScatter, Eval: evalScatter, VJP: vjpScatter})
}

func inferIndexPut(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x, v, idx := in[0], in[1], in[2:]
	if len(idx) > len(x.Shape) {
		return TensorType{}, Errorf(ShapeError, "index_put: %d index tensors for x of %d dimensions", len(idx), len(x.Shape)).
			Suggest("give at most one index tensor per axis of x")
	}
	for i, t := range idx {
		if err := checkIndexDType("index_put", t); err != nil {
			return TensorType{}, err
		}
		if !t.Shape.Equal(idx[0].Shape) {
			return TensorType{}, Errorf(ShapeError, "index_put: index %d has shape %v, index 0 has %v", i, t.Shape, idx[0].Shape).
				Suggest("broadcast the index tensors to one shape first (p.index_put does)")
		}
	}
	want := append(idx[0].Shape.Clone(), x.Shape[len(idx):]...)
	if !v.Shape.Equal(want) {
		return TensorType{}, Errorf(ShapeError, "index_put: values have shape %v; indices of shape %v into x %v need %v", v.Shape, idx[0].Shape, x.Shape, want).
			Suggest("broadcast the values to the indexed shape first (p.index_put does)")
	}
	if v.DType != x.DType {
		return TensorType{}, Errorf(DTypeError, "index_put: values are %s, x is %s", v.DType.LongName(), x.DType.LongName()).
			Suggest("cast the values: values.astype(x.dtype)")
	}
	if attrs.Bool("accumulate", false) && x.DType == dtype.Bool {
		return TensorType{}, Errorf(DTypeError, "index_put: accumulate adds, which bool tensors do not").
			Suggest("accumulate into an integer tensor, or use accumulate=False")
	}
	return x, nil
}

// scatterInto stores v at flat position o of out, or adds it there (rounded to out's
// dtype) when add is set.
func scatterInto(out *Array, o int, v float64, add bool) {
	if add {
		v = dtype.Round(out.Type.DType, out.Data[o]+v)
	}
	out.Data[o] = v
}

func evalIndexPut(in []*Array, attrs Attrs, out *Array) {
	x, v, idx := in[0], in[1], in[2:]
	k := len(idx)
	shape := x.Type.Shape
	rowStrides := shape[:k].Strides() // of the leading axes, in rows of the trailing block
	t := shape[k:].NumElements()
	add := attrs.Bool("accumulate", false)
	copy(out.Data, x.Data)
	for b := range idx[0].Data {
		row := 0
		for j, ix := range idx {
			row += indexAt("index_put", ix.Data[b], shape[j], j) * rowStrides[j]
		}
		for c := 0; c < t; c++ {
			scatterInto(out, row*t+c, v.Data[b*t+c], add)
		}
	}
}

func inferScatter(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x, idx, src := in[0], in[1], in[2]
	if err := checkIndexDType("scatter", idx); err != nil {
		return TensorType{}, err
	}
	if len(x.Shape) == 0 || len(idx.Shape) != len(x.Shape) || len(src.Shape) != len(x.Shape) {
		return TensorType{}, Errorf(ShapeError, "scatter: x %v, index %v and src %v must have one rank of at least 1", x.Shape, idx.Shape, src.Shape).
			Suggest("give index and src as many dimensions as x")
	}
	dim, err := normAxis("scatter", attrs.Int("dim", 0), len(x.Shape))
	if err != nil {
		return TensorType{}, err
	}
	for d := range x.Shape {
		if idx.Shape[d] > src.Shape[d] || (d != dim && idx.Shape[d] > x.Shape[d]) {
			return TensorType{}, Errorf(ShapeError, "scatter: index %v is larger than src %v or, off dim %d, than x %v on axis %d", idx.Shape, src.Shape, dim, x.Shape, d).
				Suggest("index must be at most src's size on every axis and at most x's on the axes other than dim")
		}
	}
	if src.DType != x.DType {
		return TensorType{}, Errorf(DTypeError, "scatter: src is %s, x is %s", src.DType.LongName(), x.DType.LongName()).
			Suggest("cast src: src.astype(x.dtype)")
	}
	switch attrs.Str("reduce", "none") {
	case "none":
	case "add":
		if x.DType == dtype.Bool {
			return TensorType{}, Errorf(DTypeError, "scatter: reduce=\"add\" adds, which bool tensors do not").
				Suggest("scatter into an integer tensor, or use reduce=\"none\"")
		}
	default:
		return TensorType{}, Errorf(ValueError, "scatter: reduce is %q", attrs.Str("reduce", "")).Suggest("use \"none\" or \"add\"")
	}
	return x, nil
}

// scatterIndex checks a scatter index against its axis: torch's scatter takes indices
// in [0, n) only.
func scatterIndex(v float64, n, dim int) int {
	i := int(v)
	if i < 0 || i >= n {
		panic(Errorf(ValueError, "scatter: index %d is out of range for axis %d of size %d", i, dim, n).
			Suggest("scatter indices must lie in [0, %d)", n))
	}
	return i
}

func evalScatter(in []*Array, attrs Attrs, out *Array) {
	x, idx, src := in[0], in[1], in[2]
	shape := x.Type.Shape
	dim, _ := normAxis("", attrs.Int("dim", 0), len(shape))
	add := attrs.Str("reduce", "none") == "add"
	xs, ss, is := shape.Strides(), src.Type.Shape.Strides(), idx.Type.Shape
	copy(out.Data, x.Data)
	for p := range idx.Data {
		rest, dst, at := p, 0, 0
		for d := len(is) - 1; d >= 0; d-- {
			c := rest % is[d]
			rest /= is[d]
			at += c * ss[d]
			if d != dim {
				dst += c * xs[d]
			}
		}
		dst += scatterIndex(idx.Data[p], shape[dim], dim) * xs[dim]
		scatterInto(out, dst, src.Data[at], add)
	}
}
