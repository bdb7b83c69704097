package core

import "pypto/dtype"

// Symbolic shape rules of slice (bounds may be symbolic, steps are constants), concat,
// stack, pad, the gathers and topk.

func init() {
	symOps["slice"] = symOp{rule: symSliceRule, dtype: firstDType}
	registerSym(symConcatRule, "concat")
	registerSym(symStackRule, "stack")
	registerSym(symPadRule, "pad")
	registerSym(symTakeAlongRule, "take_along_axis")
	registerSym(symIndexSelectRule, "index_select")
	symOps["topk_values"] = symOp{rule: symTopkRule, dtype: firstDType}
	symOps["topk_indices"] = symOp{rule: symTopkRule, dtype: func(_ []TensorType, a Attrs) dtype.DType { d, _ := indexDType("topk_indices", a); return d }}
}

// symSliceRule: on an axis with a symbolic size or bounds the step must be positive and
// the bounds resolved (0 <= start <= stop <= size, as slice.indices gives them); the
// length is then ceil((stop-start)/step).
func symSliceRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x := in[0]
	starts, stops, steps := attrs.Dims("starts"), attrs.Dims("stops"), attrs.Ints("steps")
	n := len(x.Shape)
	if len(starts) != n || len(stops) != n || len(steps) != n {
		return nil, Errorf(ValueError, "slice: starts, stops and steps need %d entries each for shape %s, got %d, %d and %d",
			n, x.ShapeString(), len(starts), len(stops), len(steps))
	}
	out := make([]Dim, n)
	for i := range out {
		d, st := x.Dim(i), steps[i]
		if st == 0 {
			return nil, Errorf(ValueError, "slice: step of axis %d is 0", i).Suggest("use a positive or negative step")
		}
		start, sc := starts[i].Const()
		stop, pc := stops[i].Const()
		size, dc := d.Const()
		if sc && pc && dc {
			k := sliceLen(start, stop, st)
			first, last := start, start+(k-1)*st
			if k > 0 && (first < 0 || first >= size || last < 0 || last >= size) {
				return nil, Errorf(ValueError, "slice: axis %d of size %d: %d:%d:%d reaches outside it", i, size, start, stop, st)
			}
			out[i] = DimConst(k)
			continue
		}
		if st < 0 {
			return nil, Errorf(ShapeError, "slice: axis %d of shape %s with bounds %s:%s is symbolic, so its step must be positive, not %d", i, x.ShapeString(), starts[i], stops[i], st).
				Suggest("reverse the axis after slicing it forwards, or compile with concrete shapes")
		}
		where := "slice " + starts[i].String() + ":" + stops[i].String() + " of axis " + itoa(i) + " of " + x.ShapeString()
		okStart := c.need(starts[i], AtLeast, DimConst(0), where+" starts inside it")
		okOrder := c.need(stops[i], AtLeast, starts[i], where+" does not run backwards")
		okStop := c.need(d, AtLeast, stops[i], where+" ends inside it")
		if !okStart || !okOrder || !okStop {
			return nil, Errorf(ValueError, "slice: axis %d of size %s: %s:%s:%d reaches outside it", i, d, starts[i], stops[i], st).
				Because("bounds must be resolved against the size first (Python's slice.indices)")
		}
		length, err := stops[i].Sub(starts[i]).Add(DimConst(st - 1)).FloorDiv(DimConst(st))
		if err != nil {
			return nil, Errorf(ValueError, "slice: %v", err)
		}
		out[i] = length
	}
	return out, nil
}

func symConcatRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	first := in[0]
	n := len(first.Shape)
	if n == 0 {
		return nil, Errorf(ShapeError, "concat: 0-d tensors cannot be concatenated").Suggest("use stack to join scalars into a 1-d tensor")
	}
	ax, err := normAxis("concat", attrs.Int("axis", 0), n)
	if err != nil {
		return nil, err
	}
	out := first.AllDims()
	for k, t := range in[1:] {
		if len(t.Shape) != n {
			return nil, Errorf(ShapeError, "concat: input %d has shape %s, input 0 has %s: ranks differ", k+1, t.ShapeString(), first.ShapeString())
		}
		for i := range t.Shape {
			if i == ax {
				continue
			}
			why := "concat along axis " + itoa(ax) + " of " + first.ShapeString() + " and " + t.ShapeString() + " needs the other axes equal"
			if !c.need(t.Dim(i), Equal, first.Dim(i), why) {
				return nil, Errorf(ShapeError, "concat: input %d has shape %s, input 0 has %s: they differ on axis %d, not only on the concatenation axis %d", k+1, t.ShapeString(), first.ShapeString(), i, ax).
					Suggest("all dimensions but the concatenation axis must match")
			}
		}
		out[ax] = out[ax].Add(t.Dim(ax))
	}
	return out, nil
}

func symStackRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	first := in[0]
	for k, t := range in[1:] {
		ok := len(t.Shape) == len(first.Shape)
		for i := 0; ok && i < len(t.Shape); i++ {
			ok = c.need(t.Dim(i), Equal, first.Dim(i), "stacked tensors "+first.ShapeString()+" and "+t.ShapeString()+" have one shape")
		}
		if !ok {
			return nil, Errorf(ShapeError, "stack: input %d has shape %s, input 0 has %s", k+1, t.ShapeString(), first.ShapeString()).
				Because("stacked tensors must all have the same shape")
		}
	}
	ax, err := normAxis("stack", attrs.Int("axis", 0), len(first.Shape)+1)
	if err != nil {
		return nil, err
	}
	dims := first.AllDims()
	out := append(append(dims[:ax:ax], DimConst(len(in))), dims[ax:]...)
	return out, nil
}

func symPadRule(_ *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x := in[0]
	pads := attrs.Ints("pads")
	if len(pads) != 2*len(x.Shape) {
		return nil, Errorf(ValueError, "pad: pads has %d entries, a %d-d tensor needs %d (before and after for each axis)", len(pads), len(x.Shape), 2*len(x.Shape))
	}
	out := x.AllDims()
	for i := range out {
		out[i] = out[i].Add(DimConst(pads[2*i] + pads[2*i+1]))
	}
	return out, nil
}

func symTakeAlongRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x, idx := in[0], in[1]
	if len(idx.Shape) != len(x.Shape) {
		return nil, Errorf(ShapeError, "take_along_axis: indices of shape %s and x of shape %s have different ranks", idx.ShapeString(), x.ShapeString()).
			Suggest("give the indices as many dimensions as x (insert size-1 axes to broadcast)")
	}
	ax, err := normAxis("take_along_axis", attrs.Int("axis", -1), len(x.Shape))
	if err != nil {
		return nil, err
	}
	xs, is := x.AllDims(), idx.AllDims()
	xs[ax], is[ax] = DimConst(1), DimConst(1)
	why := func() string {
		return "indices " + idx.ShapeString() + " broadcast with x " + x.ShapeString() + " outside axis " + itoa(ax)
	}
	out, ok := c.broadcast([][]Dim{xs, is}, why)
	if !ok {
		return nil, Errorf(ShapeError, "take_along_axis: indices of shape %s do not broadcast with x of shape %s outside axis %d", idx.ShapeString(), x.ShapeString(), ax)
	}
	out[ax] = idx.Dim(ax)
	return out, nil
}

func symIndexSelectRule(_ *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x, idx := in[0], in[1]
	if len(idx.Shape) != 1 {
		return nil, Errorf(ShapeError, "index_select: indices must be 1-d, got shape %s", idx.ShapeString()).
			Suggest("flatten them first and reshape the result")
	}
	ax, err := normAxis("index_select", attrs.Int("axis", 0), len(x.Shape))
	if err != nil {
		return nil, err
	}
	out := x.AllDims()
	out[ax] = idx.Dim(0)
	return out, nil
}

func symTopkRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x := in[0]
	ax, err := normAxis("topk", attrs.Int("axis", -1), len(x.Shape))
	if err != nil {
		return nil, err
	}
	k := attrs.Int("k", 1)
	if k < 0 || !c.need(x.Dim(ax), AtLeast, DimConst(k), "topk selects k="+itoa(k)+" along axis "+itoa(ax)+" of "+x.ShapeString()) {
		return nil, Errorf(ValueError, "topk: k=%d is out of range for axis %d of size %s (shape %s)", k, ax, x.Dim(ax), x.ShapeString()).
			Suggest("use k <= %s, or choose another axis (dim=...)", x.Dim(ax))
	}
	out := x.AllDims()
	out[ax] = DimConst(k)
	return out, nil
}
