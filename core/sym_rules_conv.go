package core

// Symbolic shape rules of conv2d and the pools: batch and channel dims pass through;
// each spatial size becomes (size + pads - dilation*(kernel-1) - 1) / stride + 1, so an
// image of symbolic height keeps one trace. Kernel sizes (the weight's spatial dims)
// must be concrete.

func init() {
	symOps["conv2d"] = symOp{rule: symConvRule, dtype: firstDType}
	symOps["max_pool2d"] = symOp{rule: symPoolRule("max_pool2d"), dtype: firstDType}
	symOps["avg_pool2d"] = symOp{rule: symPoolRule("avg_pool2d"), dtype: firstDType}
}

// symSpatial is the output shape [N, C, OH, OW], with the constraints that the window
// fits the padded input.
func symSpatial(c *symCtx, op string, x TensorType, attrs Attrs, kh, kw int) ([]Dim, *Error) {
	if err := checkWindowAttrs(op, attrs); err != nil {
		return nil, err
	}
	win := windowOf(attrs, kh, kw)
	fitH := c.need(x.Dim(2), AtLeast, DimConst(win.dh*(kh-1)+1-win.pt-win.pb), op+": the window fits the padded height")
	fitW := c.need(x.Dim(3), AtLeast, DimConst(win.dw*(kw-1)+1-win.pl-win.pr), op+": the window fits the padded width")
	if !fitH || !fitW {
		return nil, Errorf(ShapeError, "%s: the %dx%d window does not fit the padded %s input", op, kh, kw, x.ShapeString())
	}
	out := func(d Dim, k, s, dil, before, after int) (Dim, *Error) {
		r, err := d.Add(DimConst(before + after - dil*(k-1) - 1)).FloorDiv(DimConst(s))
		if err != nil {
			return Dim{}, Errorf(ShapeError, "%v", err)
		}
		return r.Add(DimConst(1)), nil
	}
	oh, err := out(x.Dim(2), kh, win.sh, win.dh, win.pt, win.pb)
	if err != nil {
		return nil, err
	}
	ow, err := out(x.Dim(3), kw, win.sw, win.dw, win.pl, win.pr)
	if err != nil {
		return nil, err
	}
	return []Dim{x.Dim(0), x.Dim(1), oh, ow}, nil
}

func symConvRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x, w := in[0], in[1]
	if len(x.Shape) != 4 || len(w.Shape) != 4 {
		return nil, Errorf(ShapeError, "conv2d: x must be [N, C, H, W] and weight [O, C/groups, KH, KW], got shapes %s and %s", x.ShapeString(), w.ShapeString())
	}
	if x.DType != w.DType || !x.DType.IsFloat() {
		return nil, Errorf(DTypeError, "conv2d: x and weight must share a float dtype, got %s and %s", x.DType.LongName(), w.DType.LongName())
	}
	o, ok1 := w.Dim(0).Const()
	cg, ok0 := w.Dim(1).Const()
	kh, ok2 := w.Dim(2).Const()
	kw, ok3 := w.Dim(3).Const()
	if !ok0 || !ok1 || !ok2 || !ok3 {
		return nil, Errorf(ShapeError, "conv2d: the weight's shape %s must be concrete", w.ShapeString()).
			Suggest("give the weight concrete dimensions; only the image's may be symbolic")
	}
	g := attrs.Int("groups", 1)
	if g < 1 || o%g != 0 {
		return nil, Errorf(ValueError, "conv2d: groups=%d must divide the %d output channels", g, o)
	}
	if !c.need(x.Dim(1), Equal, DimConst(g*cg), "conv2d: x has groups x the weight's input channels") {
		return nil, Errorf(ShapeError, "conv2d: weight %s has %d input channels per group, x %s has other than %d", w.ShapeString(), cg, x.ShapeString(), g*cg)
	}
	if len(in) == 3 && (len(in[2].Shape) != 1 || in[2].DType != x.DType || !c.need(in[2].Dim(0), Equal, DimConst(o), "conv2d: one bias per output channel")) {
		return nil, Errorf(ShapeError, "conv2d: bias must be [%d] of %s, got %s", o, x.DType.LongName(), in[2].ShapeString())
	}
	dims, err := symSpatial(c, "conv2d", x, attrs, kh, kw)
	if err != nil {
		return nil, err
	}
	dims[1] = DimConst(o)
	return dims, nil
}

func symPoolRule(op string) func(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	return func(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
		x := in[0]
		if len(x.Shape) != 4 || !x.DType.IsFloat() {
			return nil, Errorf(ShapeError, "%s: x must be a float [N, C, H, W] tensor, got %s", op, x.String())
		}
		k := attrs.Ints("kernel")
		if len(k) != 2 || k[0] < 1 || k[1] < 1 {
			return nil, Errorf(ValueError, "%s: kernel must be two positive ints, got %v", op, k)
		}
		return symSpatial(c, op, x, attrs, k[0], k[1])
	}
}
