package core

// Gathers read elements at integer indices. Negative indices count from the end, as in
// numpy; an index outside [-n, n) is reported when the program runs (the reference
// raises a ValueError naming it; shapes alone cannot show it).

func init() {
	Register(&OpDef{Name: "take_along_axis", Arity: 2, Attrs: []AttrSpec{{"axis", int64(-1)}},
		Doc:   "out[..., i, ...] = x[..., idx[..., i, ...], ...] along axis (numpy's take_along_axis; torch.gather); other axes broadcast",
		Infer: inferTakeAlong, Eval: evalTakeAlong})
	Register(&OpDef{Name: "index_select", Arity: 2, Attrs: []AttrSpec{{"axis", int64(0)}},
		Doc:   "the slices of x at the 1-d indices idx along axis (numpy's take with an axis; torch.index_select)",
		Infer: inferIndexSelect, Eval: evalIndexSelect})
}

func checkIndexDType(op string, t TensorType) *Error {
	if !t.DType.IsInt() {
		return Errorf(DTypeError, "%s: indices must be int32 or int8, got %s", op, t.DType.LongName()).
			Suggest("cast them: idx.astype(p.int32)")
	}
	return nil
}

// indexAt resolves a possibly negative index into [0, n), panicking with a ValueError
// (which the interpreter reports with the node's location) when it is out of range.
func indexAt(op string, v float64, n, axis int) int {
	i := int(v)
	if i < -n || i >= n {
		panic(Errorf(ValueError, "%s: index %d is out of range for axis %d of size %d", op, i, axis, n).
			Suggest("indices must lie in [-%d, %d)", n, n))
	}
	if i < 0 {
		i += n
	}
	return i
}

func inferTakeAlong(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x, idx := in[0], in[1]
	if err := checkIndexDType("take_along_axis", idx); err != nil {
		return TensorType{}, err
	}
	if len(idx.Shape) != len(x.Shape) {
		return TensorType{}, Errorf(ShapeError, "take_along_axis: indices of shape %v and x of shape %v have different ranks", idx.Shape, x.Shape).
			Suggest("give the indices as many dimensions as x (insert size-1 axes to broadcast)")
	}
	ax, err := normAxis("take_along_axis", attrs.Int("axis", -1), len(x.Shape))
	if err != nil {
		return TensorType{}, err
	}
	xs, is := x.Shape.Clone(), idx.Shape.Clone()
	xs[ax], is[ax] = 1, 1
	out, ok := BroadcastShapes(xs, is)
	if !ok {
		return TensorType{}, Errorf(ShapeError, "take_along_axis: indices of shape %v do not broadcast with x of shape %v outside axis %d", idx.Shape, x.Shape, ax)
	}
	if x.Shape[ax] == 0 && idx.Shape[ax] > 0 && out.NumElements() > 0 {
		return TensorType{}, Errorf(ValueError, "take_along_axis: axis %d of x is empty, so no index is valid", ax)
	}
	out[ax] = idx.Shape[ax]
	return TensorType{DType: x.DType, Shape: out}, nil
}

func evalTakeAlong(in []*Array, attrs Attrs, out *Array) {
	x, idx := in[0], in[1]
	ax, _ := normAxis("", attrs.Int("axis", -1), len(x.Type.Shape))
	os := out.Type.Shape
	xs := x.Type.Shape
	xst := x.Type.Shape.Strides()
	ib := newBroadcastIndex(idx.Type.Shape, os)
	for i := range out.Data {
		flat, src := i, 0
		for a := len(os) - 1; a >= 0; a-- {
			c := flat % os[a]
			flat /= os[a]
			if a == ax {
				continue
			}
			if xs[a] != 1 {
				src += c * xst[a]
			}
		}
		j := indexAt("take_along_axis", idx.Data[ib.at(i)], xs[ax], ax)
		out.Data[i] = x.Data[src+j*xst[ax]]
	}
}

func inferIndexSelect(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x, idx := in[0], in[1]
	if err := checkIndexDType("index_select", idx); err != nil {
		return TensorType{}, err
	}
	if len(idx.Shape) != 1 {
		return TensorType{}, Errorf(ShapeError, "index_select: indices must be 1-d, got shape %v", idx.Shape).
			Suggest("flatten them with reshape([-1]), or use take_along_axis")
	}
	ax, err := normAxis("index_select", attrs.Int("axis", 0), len(x.Shape))
	if err != nil {
		return TensorType{}, err
	}
	if x.Shape[ax] == 0 && idx.Shape[0] > 0 {
		return TensorType{}, Errorf(ValueError, "index_select: axis %d of x is empty, so no index is valid", ax)
	}
	out := x.Shape.Clone()
	out[ax] = idx.Shape[0]
	return TensorType{DType: x.DType, Shape: out}, nil
}

func evalIndexSelect(in []*Array, attrs Attrs, out *Array) {
	x, idx := in[0], in[1]
	ax, _ := normAxis("", attrs.Int("axis", 0), len(x.Type.Shape))
	n := x.Type.Shape[ax]
	it := newAxisIter(out.Type.Shape, ax)
	src := newAxisIter(x.Type.Shape, ax)
	it.lines(func(line, base, stride int) {
		o, inner := line/it.inner, line%it.inner
		sbase := o*src.n*src.inner + inner
		for j := 0; j < it.n; j++ {
			k := indexAt("index_select", idx.Data[j], n, ax)
			out.Data[base+j*stride] = x.Data[sbase+k*src.inner]
		}
	})
}
