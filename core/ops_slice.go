package core

// slice takes a strided window of every axis (numpy basic slicing, with start, stop
// and step already resolved as Python's slice.indices does); concat joins tensors
// along an axis; stack joins them along a new axis (a composite: unsqueeze each, then
// concat); pad surrounds a tensor with a constant.

import "pypto/internal/checked"

func init() {
	Register(&OpDef{Name: "slice", Arity: 1, Attrs: []AttrSpec{{"starts", []int64{}}, {"stops", []int64{}}, {"steps", []int64{}}},
		Doc: "x[start:stop:step] on every axis (resolved bounds, as slice.indices gives them; negative steps walk backwards)", Infer: inferSlice, Eval: evalSlice})
	Register(&OpDef{Name: "concat", Arity: 1, MaxArity: Variadic, Attrs: []AttrSpec{{"axis", int64(0)}},
		Doc: "the inputs joined along axis; other dimensions must match and dtypes promote", Infer: inferConcat, Eval: evalConcat})
	Register(&OpDef{Name: "stack", Arity: 1, MaxArity: Variadic, Attrs: []AttrSpec{{"axis", int64(0)}},
		Doc: "the inputs (all of one shape) joined along a new axis", Infer: inferStack, Eval: evalConcat, Decompose: decomposeStack})
	Register(&OpDef{Name: "pad", Arity: 1, Attrs: []AttrSpec{{"pads", []int64{}}, {"value", 0.0}},
		Doc: "x surrounded by value: pads holds (before, after) for every axis", Infer: inferPad, Eval: evalPad})
}

// sliceLen is the number of indices start, start+step, ... before stop.
func sliceLen(start, stop, step int) int {
	switch {
	case step > 0 && stop > start:
		return (stop - start + step - 1) / step
	case step < 0 && stop < start:
		return (start - stop - step - 1) / -step
	}
	return 0
}

func inferSlice(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	starts, stops, steps := attrs.Ints("starts"), attrs.Ints("stops"), attrs.Ints("steps")
	n := len(x.Shape)
	if len(starts) != n || len(stops) != n || len(steps) != n {
		return TensorType{}, Errorf(ValueError, "slice: starts, stops and steps need %d entries each for shape %v, got %d, %d and %d",
			n, x.Shape, len(starts), len(stops), len(steps))
	}
	out := make(Shape, n)
	for i := range out {
		d, st := x.Shape[i], steps[i]
		if st == 0 {
			return TensorType{}, Errorf(ValueError, "slice: step of axis %d is 0", i).Suggest("use a positive or negative step")
		}
		k := sliceLen(starts[i], stops[i], st)
		first, last := starts[i], starts[i]+(k-1)*st
		if k > 0 && (first < 0 || first >= d || last < 0 || last >= d) {
			return TensorType{}, Errorf(ValueError, "slice: axis %d of size %d: %d:%d:%d reaches outside it", i, d, starts[i], stops[i], st).
				Because("bounds must be resolved against the size first (Python's slice.indices)")
		}
		out[i] = k
	}
	return TensorType{DType: x.DType, Shape: out}, nil
}

func evalSlice(in []*Array, attrs Attrs, out *Array) {
	x := in[0]
	starts, steps := attrs.Ints("starts"), attrs.Ints("steps")
	st := x.Type.Shape.Strides()
	os := out.Type.Shape
	for i := range out.Data {
		flat, src := i, 0
		for ax := len(os) - 1; ax >= 0; ax-- {
			src += (starts[ax] + (flat%os[ax])*steps[ax]) * st[ax]
			flat /= os[ax]
		}
		out.Data[i] = x.Data[src]
	}
}

func inferConcat(in []TensorType, attrs Attrs) (TensorType, *Error) {
	first := in[0]
	n := len(first.Shape)
	if n == 0 {
		return TensorType{}, Errorf(ShapeError, "concat: 0-d tensors cannot be concatenated").Suggest("use stack to join scalars into a 1-d tensor")
	}
	ax, err := normAxis("concat", attrs.Int("axis", 0), n)
	if err != nil {
		return TensorType{}, err
	}
	out := first.Shape.Clone()
	dt := first.DType
	for k, t := range in[1:] {
		if len(t.Shape) != n {
			return TensorType{}, Errorf(ShapeError, "concat: input %d has shape %v, input 0 has %v: ranks differ", k+1, t.Shape, first.Shape)
		}
		for i := range t.Shape {
			if i != ax && t.Shape[i] != first.Shape[i] {
				return TensorType{}, Errorf(ShapeError, "concat: input %d has shape %v, input 0 has %v: they differ on axis %d, not only on the concatenation axis %d", k+1, t.Shape, first.Shape, i, ax).
					Suggest("all dimensions but the concatenation axis must match")
			}
		}
		d, ok := checked.Add(out[ax], t.Shape[ax])
		if !ok {
			return TensorType{}, Errorf(MemoryError, "concat: the sizes on axis %d overflow a 64-bit size", ax)
		}
		out[ax] = d
		dt = PromoteTypes(dt, t.DType)
	}
	return TensorType{DType: dt, Shape: out}, nil
}

// evalConcat also serves stack: a stack is the concat of the inputs with a size-1 axis
// inserted, which changes no element's position in row-major order.
func evalConcat(in []*Array, attrs Attrs, out *Array) {
	ax, _ := normAxis("", attrs.Int("axis", 0), len(out.Type.Shape))
	outer := 1
	for _, d := range out.Type.Shape[:ax] {
		outer *= d
	}
	pos := 0
	for o := 0; o < outer; o++ {
		for _, a := range in {
			chunk := len(a.Data) / max(outer, 1)
			for j := 0; j < chunk; j++ {
				out.Data[pos] = a.Data[o*chunk+j]
				pos++
			}
		}
	}
	for i := range out.Data {
		out.Data[i] = roundTo(out, out.Data[i])
	}
}

func inferStack(in []TensorType, attrs Attrs) (TensorType, *Error) {
	first := in[0]
	for k, t := range in[1:] {
		if !t.Shape.Equal(first.Shape) {
			return TensorType{}, Errorf(ShapeError, "stack: input %d has shape %v, input 0 has %v", k+1, t.Shape, first.Shape).
				Because("stacked tensors must all have the same shape")
		}
	}
	n := len(first.Shape) + 1
	ax, err := normAxis("stack", attrs.Int("axis", 0), n)
	if err != nil {
		return TensorType{}, err
	}
	out := append(first.Shape[:ax:ax], append(Shape{len(in)}, first.Shape[ax:]...)...)
	dt := first.DType
	for _, t := range in[1:] {
		dt = PromoteTypes(dt, t.DType)
	}
	return TensorType{DType: dt, Shape: out}, nil
}

func decomposeStack(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	n := len(d.typ(in[0]).Shape) + 1
	ax, err := normAxis("stack", attrs.Int("axis", 0), n)
	if err != nil {
		return -1, err
	}
	parts := make([]Value, len(in))
	for i, v := range in {
		parts[i] = d.op("unsqueeze", Attrs{"axis": []int64{int64(ax)}}, v)
	}
	return d.done(d.op("concat", Attrs{"axis": int64(ax)}, parts...))
}

func inferPad(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	pads := attrs.Ints("pads")
	if len(pads) != 2*len(x.Shape) {
		return TensorType{}, Errorf(ValueError, "pad: pads has %d entries, a %d-d tensor needs %d (before and after for each axis)", len(pads), len(x.Shape), 2*len(x.Shape))
	}
	out := x.Shape.Clone()
	for i := range out {
		if pads[2*i] < 0 || pads[2*i+1] < 0 {
			return TensorType{}, Errorf(ValueError, "pad: negative padding %d on axis %d", min(pads[2*i], pads[2*i+1]), i).Suggest("use slicing to remove elements")
		}
		both, ok1 := checked.Add(pads[2*i], pads[2*i+1])
		d, ok2 := checked.Add(out[i], both)
		if !ok1 || !ok2 {
			return TensorType{}, Errorf(MemoryError, "pad: padding axis %d of size %d by %d and %d overflows a 64-bit size", i, out[i], pads[2*i], pads[2*i+1])
		}
		out[i] = d
	}
	return TensorType{DType: x.DType, Shape: out}, nil
}

func evalPad(in []*Array, attrs Attrs, out *Array) {
	x := in[0]
	pads := attrs.Ints("pads")
	v := roundTo(out, attrs.Float("value", 0))
	for i := range out.Data {
		out.Data[i] = v
	}
	os := out.Type.Shape.Strides()
	xs := x.Type.Shape
	for i, val := range x.Data {
		flat, dst := i, 0
		for ax := len(xs) - 1; ax >= 0; ax-- {
			dst += (flat%xs[ax] + pads[2*ax]) * os[ax]
			flat /= xs[ax]
		}
		out.Data[dst] = val
	}
}
