package core

import "pypto/dtype"

// slice_update writes a block into a tensor at start positions that are tensors, so
// that one compiled program serves every position (a decoder's KV cache written at
// the step's position). The starts are 0-d integer
// tensors, one per axis in "axes"; every other axis of the block spans x's. A start
// must put the block inside x: one outside [0, n - size] is an error naming it (the
// reference raises it, and the device reports it by the reference, lower/run_errors.go)
// rather than a silent clamp.
//
// The op is functional (a new value). The compiler writes it in place: when x is a
// donated input or an intermediate nobody else reads, the result takes x's bytes and
// only the block is stored (lower/lowering_update.go).

func init() {
	Register(&OpDef{Name: "slice_update", Arity: 2, MaxArity: Variadic, Attrs: []AttrSpec{{"axes", []int64{}}},
		Doc:   "x with update written at the 0-d integer tensors starts (inputs 2...), one per axis in axes; other axes of update span x's; a start outside [0, n - size] is an error",
		Infer: inferSliceUpdate, Eval: evalSliceUpdate})
}

// updateAxes checks the axes and start inputs of a slice_update or dynamic_slice:
// distinct axes of x, one 0-d integer start per axis.
func updateAxes(op string, x TensorType, starts []TensorType, attrs Attrs) ([]int, *Error) {
	axes, err := startAxes(op, attrs, len(x.Shape))
	if err != nil {
		return nil, err
	}
	if len(starts) != len(axes) {
		return nil, Errorf(ValueError, "%s: %d starts for %d axes %v", op, len(starts), len(axes), axes).
			Suggest("give one start per axis")
	}
	for i, s := range starts {
		if len(s.Shape) != 0 || !s.DType.IsInt() {
			return nil, Errorf(DTypeError, "%s: start %d must be a 0-d integer tensor, got %s", op, i, s).
				Suggest("pass an int, or a 0-d int32 tensor (p.tensor(pos, dtype=p.int32))")
		}
	}
	return axes, nil
}

// startAxes resolves the axes attribute in its order (start i belongs to axis i):
// distinct, negative ones counting from the end.
func startAxes(op string, attrs Attrs, ndim int) ([]int, *Error) {
	var axes []int
	seen := map[int]bool{}
	for _, a := range attrs.Ints("axes") {
		n, err := normAxis(op, a, ndim)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, Errorf(ValueError, "%s: axis %d is given twice", op, n).Suggest("give each axis one start")
		}
		seen[n] = true
		axes = append(axes, n)
	}
	return axes, nil
}

func inferSliceUpdate(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x, u := in[0], in[1]
	axes, err := updateAxes("slice_update", x, in[2:], attrs)
	if err != nil {
		return TensorType{}, err
	}
	if len(u.Shape) != len(x.Shape) {
		return TensorType{}, Errorf(ShapeError, "slice_update: update has %d dimensions, x has %d", len(u.Shape), len(x.Shape)).
			Suggest("reshape the update to x's rank (size-1 axes where it is one element wide)")
	}
	started := map[int]bool{}
	for _, a := range axes {
		started[a] = true
	}
	for ax := range x.Shape {
		if u.Shape[ax] > x.Shape[ax] || (!started[ax] && u.Shape[ax] != x.Shape[ax]) {
			return TensorType{}, Errorf(ShapeError, "slice_update: update %v does not fit x %v on axis %d", u.Shape, x.Shape, ax).
				Suggest("an axis without a start must have x's size; one with a start at most x's")
		}
	}
	if u.DType != x.DType {
		return TensorType{}, Errorf(DTypeError, "slice_update: update is %s, x is %s", u.DType.LongName(), x.DType.LongName()).
			Suggest("cast the update: update.astype(x.dtype)")
	}
	return x, nil
}

// blockStarts reads the starts of a block of shape size in x's shape, one per axis (0
// where no start is given), panicking with a ValueError (which the interpreter reports
// at the node's line) for one outside [0, n - size].
func blockStarts(op string, shape, size Shape, axes []int, starts []*Array) []int {
	at := make([]int, len(shape))
	for i, a := range axes {
		s := int(starts[i].Data[0])
		if hi := shape[a] - size[a]; s < 0 || s > hi {
			panic(Errorf(ValueError, "%s: start %d on axis %d puts a block of %d outside the axis of size %d", op, s, a, size[a], shape[a]).
				Suggest("starts on this axis must lie in [0, %d]", hi))
		}
		at[a] = s
	}
	return at
}

// eachBlockElement calls f with the flat index of every element of a block of shape
// size (in block order) and its flat index in a tensor of shape shape at starts at.
func eachBlockElement(shape, size Shape, at []int, f func(block, whole int)) {
	st := shape.Strides()
	n := size.NumElements()
	for i := 0; i < n; i++ {
		rest, off := i, 0
		for a := len(size) - 1; a >= 0; a-- {
			off += (rest%size[a] + at[a]) * st[a]
			rest /= size[a]
		}
		f(i, off)
	}
}

func evalSliceUpdate(in []*Array, attrs Attrs, out *Array) {
	x, u := in[0], in[1]
	axes, _ := startAxes("", attrs, len(x.Type.Shape))
	at := blockStarts("slice_update", x.Type.Shape, u.Type.Shape, axes, in[2:])
	copy(out.Data, x.Data)
	eachBlockElement(x.Type.Shape, u.Type.Shape, at, func(b, w int) { out.Data[w] = u.Data[b] })
}

// vjpSliceUpdate: the cotangent of x is g with the block zeroed (the block no longer
// depends on x); the update's is g's block, gathered axis by axis at start + iota.
func vjpSliceUpdate(c *VJPContext) []Value {
	ut := c.typ(c.x(1))
	axes, _ := startAxes("", c.Attrs, len(ut.Shape))
	zeros := c.op("full", Attrs{"value": 0.0, "dtype": ut.DType.LongName(), "shape": int64s(ut.Shape)})
	dx := c.op("slice_update", c.Attrs, append([]Value{c.G, zeros}, c.In[2:]...)...)
	du := c.G
	for i, a := range axes {
		idx := c.op("add", nil, c.op("iota", Attrs{"shape": []int64{int64(ut.Shape[a])}, "axis": int64(0)}), c.cast(c.x(2+i), dtype.Int32))
		du = c.op("index_select", Attrs{"axis": int64(a)}, du, idx)
	}
	out := []Value{dx, du}
	for range axes {
		out = append(out, -1)
	}
	return out
}
