package core

// Symbolic shape rules of the writes: slice_update, index_put and scatter. Each result
// has x's shape; what the concrete rules check between sizes becomes constraints (the
// ranks, dtypes and attributes are checked by the concrete rules on stand-ins).

func init() {
	registerSym(symSliceUpdateRule, "slice_update")
	registerSym(symIndexPutRule, "index_put")
	registerSym(symScatterRule, "scatter")
}

// symSliceUpdateRule: an axis with a start holds the update (x's size at least the
// update's); every other axis of the update is x's.
func symSliceUpdateRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x, u := in[0], in[1]
	axes, err := startAxes("slice_update", attrs, len(x.Shape))
	if err != nil {
		return nil, err
	}
	started := map[int]bool{}
	for _, a := range axes {
		started[a] = true
	}
	for ax := range x.Shape {
		where := "slice_update of " + u.ShapeString() + " into " + x.ShapeString() + " on axis " + itoa(ax)
		ok := c.need(x.Dim(ax), AtLeast, u.Dim(ax), where+" fits")
		if !started[ax] {
			ok = ok && c.need(u.Dim(ax), Equal, x.Dim(ax), where+" (no start) spans x")
		}
		if !ok {
			return nil, Errorf(ShapeError, "slice_update: update %s does not fit x %s on axis %d", u.ShapeString(), x.ShapeString(), ax).
				Suggest("an axis without a start must have x's size; one with a start at most x's")
		}
	}
	return x.AllDims(), nil
}

// symIndexPutRule: the index tensors have one shape B and the values B + x's axes after
// the indexed ones.
func symIndexPutRule(c *symCtx, in []TensorType, _ Attrs) ([]Dim, *Error) {
	x, v, idx := in[0], in[1], in[2:]
	b := idx[0].AllDims()
	for i, t := range idx[1:] {
		for d := range b {
			if !c.need(t.Dim(d), Equal, b[d], "index_put's index tensors have one shape") {
				return nil, Errorf(ShapeError, "index_put: index %d has shape %s, index 0 has %s", i+1, t.ShapeString(), idx[0].ShapeString()).
					Suggest("broadcast the index tensors to one shape first (p.index_put does)")
			}
		}
	}
	want := append(b, x.AllDims()[len(idx):]...)
	for d, w := range want {
		if !c.need(v.Dim(d), Equal, w, "index_put's values have the indexed shape") {
			return nil, Errorf(ShapeError, "index_put: values have shape %s; indices of shape %s into x %s need %s", v.ShapeString(), idx[0].ShapeString(), x.ShapeString(), DimsString(want)).
				Suggest("broadcast the values to the indexed shape first (p.index_put does)")
		}
	}
	return x.AllDims(), nil
}

// symScatterRule: index is at most src's size on every axis and x's off dim.
func symScatterRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x, idx, src := in[0], in[1], in[2]
	dim, err := normAxis("scatter", attrs.Int("dim", 0), len(x.Shape))
	if err != nil {
		return nil, err
	}
	for d := range x.Shape {
		why := "scatter's index " + idx.ShapeString() + " lies inside src " + src.ShapeString()
		ok := c.need(src.Dim(d), AtLeast, idx.Dim(d), why+" on axis "+itoa(d))
		if d != dim {
			ok = ok && c.need(x.Dim(d), AtLeast, idx.Dim(d), "scatter's index "+idx.ShapeString()+" lies inside x "+x.ShapeString()+" off dim, on axis "+itoa(d))
		}
		if !ok {
			return nil, Errorf(ShapeError, "scatter: index %s is larger than src %s or, off dim %d, than x %s on axis %d", idx.ShapeString(), src.ShapeString(), dim, x.ShapeString(), d).
				Suggest("index must be at most src's size on every axis and at most x's on the axes other than dim")
		}
	}
	return x.AllDims(), nil
}
