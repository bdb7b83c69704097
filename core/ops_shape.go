package core

// Shape ops move or view data without changing values: reshape (row-major order kept),
// transpose (a permutation of the axes), broadcast_to (numpy broadcasting made
// explicit). squeeze and unsqueeze are composites over reshape.

import "pypto/internal/checked"

func init() {
	Register(&OpDef{Name: "reshape", Arity: 1, Attrs: []AttrSpec{{"shape", []int64{}}},
		Doc: "the same elements in row-major order with a new shape; one dimension may be -1 (inferred)", Infer: inferReshape, Eval: evalCopy})
	Register(&OpDef{Name: "transpose", Arity: 1, Attrs: []AttrSpec{{"perm", []int64{}}},
		Doc: "axes permuted: result axis i is input axis perm[i]; an empty perm reverses the axes", Infer: inferTranspose, Eval: evalTranspose})
	Register(&OpDef{Name: "broadcast_to", Arity: 1, Attrs: []AttrSpec{{"shape", []int64{}}},
		Doc: "x broadcast to shape (numpy rules)", Infer: inferBroadcastTo, Eval: evalBroadcastTo})
	Register(&OpDef{Name: "squeeze", Arity: 1, Attrs: []AttrSpec{{"axis", []int64{}}},
		Doc: "size-1 axes removed (those listed, or all when empty)", Infer: inferSqueeze, Eval: evalCopy, Decompose: decomposeAsReshape("squeeze")})
	Register(&OpDef{Name: "unsqueeze", Arity: 1, Attrs: []AttrSpec{{"axis", []int64{}}},
		Doc: "size-1 axes inserted so that they sit at the listed positions of the result", Infer: inferUnsqueeze, Eval: evalCopy, Decompose: decomposeAsReshape("unsqueeze")})
}

func evalCopy(in []*Array, _ Attrs, out *Array) { copy(out.Data, in[0].Data) }

// decomposeAsReshape rewrites an op that only renames the dimensions (squeeze,
// unsqueeze) into the reshape to the type it infers.
func decomposeAsReshape(name string) func(*Builder, []Value, Attrs, Location) (Value, error) {
	return func(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
		t, _, err := InferOp(name, []TensorType{b.Type(in[0])}, attrs)
		if err != nil {
			return -1, err.WithLoc(loc)
		}
		return b.Op("reshape", in[:1], Attrs{"shape": int64s(t.Shape)}, loc)
	}
}

func inferReshape(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	want := attrs.Ints("shape")
	out := make(Shape, len(want))
	infer, known := -1, 1
	for i, d := range want {
		switch {
		case d == -1 && infer >= 0:
			return TensorType{}, Errorf(ValueError, "reshape: shape %v has more than one -1", want).Suggest("give every dimension but one")
		case d == -1:
			infer = i
		case d < 0:
			return TensorType{}, Errorf(ShapeError, "reshape: shape %v has a negative dimension", want)
		default:
			out[i] = d
			var ok bool
			if known, ok = checked.Mul(known, d); !ok {
				return TensorType{}, Errorf(MemoryError, "reshape: shape %v has more elements than a 64-bit size can count", want)
			}
		}
	}
	n := x.Shape.NumElements()
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return TensorType{}, Errorf(ShapeError, "reshape: cannot reshape %v (%d elements) into %v", x.Shape, n, want).
				Because("the -1 dimension must make the element counts equal, and %d is not a multiple of %d", n, known)
		}
		out[infer] = n / known
	} else if known != n {
		return TensorType{}, Errorf(ShapeError, "reshape: cannot reshape %v (%d elements) into %v (%d elements)", x.Shape, n, want, known).
			Suggest("the new shape must hold the same number of elements; use -1 for one dimension to have it inferred")
	}
	return TensorType{DType: x.DType, Shape: out}, nil
}

func inferTranspose(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	perm, err := transposePerm(x.Shape, attrs.Ints("perm"))
	if err != nil {
		return TensorType{}, err
	}
	out := make(Shape, len(perm))
	for i, p := range perm {
		out[i] = x.Shape[p]
	}
	return TensorType{DType: x.DType, Shape: out}, nil
}

func transposePerm(shape Shape, perm []int) ([]int, *Error) {
	n := len(shape)
	if len(perm) == 0 {
		perm = make([]int, n)
		for i := range perm {
			perm[i] = n - 1 - i
		}
		return perm, nil
	}
	if len(perm) != n {
		return nil, Errorf(ShapeError, "transpose: perm %v has %d entries for a %d-d tensor of shape %v", perm, len(perm), n, shape).
			Suggest("give one entry per axis, a permutation of 0..%d", n-1)
	}
	out := make([]int, n)
	seen := make([]bool, n)
	for i, p := range perm {
		q, err := normAxis("transpose", p, n)
		if err != nil {
			return nil, err
		}
		if seen[q] {
			return nil, Errorf(ValueError, "transpose: perm %v repeats axis %d", perm, q).Suggest("give a permutation of 0..%d", n-1)
		}
		seen[q] = true
		out[i] = q
	}
	return out, nil
}

func evalTranspose(in []*Array, attrs Attrs, out *Array) {
	x := in[0]
	perm, _ := transposePerm(x.Type.Shape, attrs.Ints("perm"))
	inStrides := x.Type.Shape.Strides()
	oShape := out.Type.Shape
	for i := range out.Data {
		flat, src := i, 0
		for ax := len(oShape) - 1; ax >= 0; ax-- {
			src += (flat % oShape[ax]) * inStrides[perm[ax]]
			flat /= oShape[ax]
		}
		out.Data[i] = x.Data[src]
	}
}

func inferBroadcastTo(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	want, err := attrShape("broadcast_to", attrs.Ints("shape"))
	if err != nil {
		return TensorType{}, err
	}
	got, ok := BroadcastShapes(x.Shape, want)
	if !ok || !got.Equal(want) {
		return TensorType{}, Errorf(ShapeError, "broadcast_to: shape %v cannot be broadcast to %v", x.Shape, want).
			Because("each dimension of x, compared from the right, must equal the target's or be 1, and x may not have more dimensions")
	}
	return TensorType{DType: x.DType, Shape: want}, nil
}

func evalBroadcastTo(in []*Array, _ Attrs, out *Array) {
	idx := newBroadcastIndex(in[0].Type.Shape, out.Type.Shape)
	for i := range out.Data {
		out.Data[i] = in[0].Data[idx.at(i)]
	}
}

func inferSqueeze(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	drop := map[int]bool{}
	if axes := attrs.Ints("axis"); len(axes) > 0 {
		norm, err := normAxes("squeeze", axes, len(x.Shape))
		if err != nil {
			return TensorType{}, err
		}
		for _, a := range norm {
			if x.Shape[a] != 1 {
				return TensorType{}, Errorf(ShapeError, "squeeze: axis %d of shape %v has size %d, not 1", a, x.Shape, x.Shape[a]).
					Suggest("only size-1 axes can be squeezed; use reshape to change other sizes")
			}
			drop[a] = true
		}
	} else {
		for i, d := range x.Shape {
			drop[i] = d == 1
		}
	}
	out := Shape{}
	for i, d := range x.Shape {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return TensorType{DType: x.DType, Shape: out}, nil
}

func inferUnsqueeze(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	axes := attrs.Ints("axis")
	if len(axes) == 0 {
		return TensorType{}, Errorf(ValueError, "unsqueeze: no axis given").Suggest("say where the new size-1 axis goes, e.g. axis=0")
	}
	n := len(x.Shape) + len(axes)
	norm, err := normAxes("unsqueeze", axes, n)
	if err != nil {
		return TensorType{}, err
	}
	add := map[int]bool{}
	for _, a := range norm {
		add[a] = true
	}
	out := make(Shape, n)
	j := 0
	for i := range out {
		if add[i] {
			out[i] = 1
		} else {
			out[i] = x.Shape[j]
			j++
		}
	}
	return TensorType{DType: x.DType, Shape: out}, nil
}
