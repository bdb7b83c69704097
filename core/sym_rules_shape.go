package core

import "pypto/dtype"

// Symbolic shape rules of the shape ops: reshape (its shape attribute may hold
// symbolic dims and one -1), transpose, broadcast_to, squeeze, unsqueeze and full.

func init() {
	symOps["reshape"] = symOp{rule: symReshapeRule, dtype: firstDType}
	registerSym(symTransposeRule, "transpose")
	registerSym(symBroadcastToRule, "broadcast_to")
	registerSym(symSqueezeRule, "squeeze")
	registerSym(symUnsqueezeRule, "unsqueeze")
	registerSym(symFullRule, "full", "iota")
}

func firstDType(in []TensorType, _ Attrs) dtype.DType { return in[0].DType }

func symReshapeRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x := in[0]
	want := attrs.Dims("shape")
	out := make([]Dim, len(want))
	infer, known := -1, DimConst(1)
	for i, d := range want {
		v, isConst := d.Const()
		switch {
		case isConst && v == -1 && infer >= 0:
			return nil, Errorf(ValueError, "reshape: shape %s has more than one -1", DimsString(want)).Suggest("give every dimension but one")
		case isConst && v == -1:
			infer = i
		case isConst && v < 0:
			return nil, Errorf(ShapeError, "reshape: shape %s has a negative dimension", DimsString(want))
		default:
			out[i] = d
			known = known.Mul(d)
		}
	}
	n := dimProduct(x.AllDims())
	if infer < 0 {
		why := "reshape keeps the number of elements of " + x.ShapeString() + " in " + DimsString(want)
		if !c.need(known, Equal, n, why) {
			return nil, Errorf(ShapeError, "reshape: cannot reshape %s (%s elements) into %s (%s elements)", x.ShapeString(), n, DimsString(want), known).
				Suggest("the new shape must hold the same number of elements; use -1 for one dimension to have it inferred")
		}
		return out, nil
	}
	if !c.need(known, NotEqual, DimConst(0), "the -1 of "+DimsString(want)+" is determined only when the other dims are not 0") {
		return nil, Errorf(ShapeError, "reshape: cannot reshape %s into %s: the -1 dimension is undetermined next to a 0", x.ShapeString(), DimsString(want))
	}
	q, err := n.FloorDiv(known)
	if err != nil {
		return nil, Errorf(ShapeError, "reshape: %v", err)
	}
	why := "the -1 of " + DimsString(want) + " makes the element counts of " + x.ShapeString() + " equal"
	if !c.need(q.Mul(known), Equal, n, why) {
		return nil, Errorf(ShapeError, "reshape: cannot reshape %s (%s elements) into %s", x.ShapeString(), n, DimsString(want)).
			Because("the -1 dimension must make the element counts equal, and %s is not a multiple of %s", n, known)
	}
	out[infer] = q
	return out, nil
}

func symTransposeRule(_ *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x := in[0]
	perm, err := transposePerm(x.Shape, attrs.Ints("perm"))
	if err != nil {
		return nil, err
	}
	out := make([]Dim, len(perm))
	for i, p := range perm {
		out[i] = x.Dim(p)
	}
	return out, nil
}

// broadcastsTo requires from (right-aligned) to broadcast to the dims to.
func (c *symCtx) broadcastsTo(from, to []Dim, why string) bool {
	if len(from) > len(to) {
		return false
	}
	for i := range from {
		d, t := from[len(from)-1-i], to[len(to)-1-i]
		if v, ok := d.Const(); ok && v == 1 {
			continue
		}
		if !c.need(d, Equal, t, why) {
			return false
		}
	}
	return true
}

func symBroadcastToRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x, want := in[0], attrs.Dims("shape")
	for _, d := range want {
		if v, ok := d.Const(); ok && v < 0 {
			return nil, Errorf(ShapeError, "broadcast_to: shape %s has a negative dimension", DimsString(want))
		}
	}
	if !c.broadcastsTo(x.AllDims(), want, x.ShapeString()+" broadcasts to "+DimsString(want)) {
		return nil, Errorf(ShapeError, "broadcast_to: shape %s cannot be broadcast to %s", x.ShapeString(), DimsString(want)).
			Because("each dimension of x, compared from the right, must equal the target's or be 1, and x may not have more dimensions")
	}
	return want, nil
}

// symSqueezeRule: listed axes must be 1; without a list, the constant 1s go, and every
// symbolic dim stays and must not be 1 (it would be squeezed once known).
func symSqueezeRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x := in[0]
	one := DimConst(1)
	drop := map[int]bool{}
	if axes := attrs.Ints("axis"); len(axes) > 0 {
		norm, err := normAxes("squeeze", axes, len(x.Shape))
		if err != nil {
			return nil, err
		}
		for _, a := range norm {
			if !c.need(x.Dim(a), Equal, one, "squeeze removes axis "+itoa(a)+" of "+x.ShapeString()) {
				return nil, Errorf(ShapeError, "squeeze: axis %d of shape %s has size %s, not 1", a, x.ShapeString(), x.Dim(a)).
					Suggest("only size-1 axes can be squeezed; use reshape to change other sizes")
			}
			drop[a] = true
		}
	} else {
		for i, d := range x.AllDims() {
			if d.Equal(one) {
				drop[i] = true
			} else if !d.IsConst() {
				c.need(d, NotEqual, one, "squeeze without axes kept axis "+itoa(i)+" of "+x.ShapeString()+" when tracing")
			}
		}
	}
	out := []Dim{}
	for i, d := range x.AllDims() {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return out, nil
}

func symUnsqueezeRule(_ *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x := in[0]
	axes := attrs.Ints("axis")
	if len(axes) == 0 {
		return nil, Errorf(ValueError, "unsqueeze: no axis given").Suggest("say where the new size-1 axis goes, e.g. axis=0")
	}
	n := len(x.Shape) + len(axes)
	norm, err := normAxes("unsqueeze", axes, n)
	if err != nil {
		return nil, err
	}
	add := map[int]bool{}
	for _, a := range norm {
		add[a] = true
	}
	out := make([]Dim, n)
	j := 0
	for i := range out {
		if add[i] {
			out[i] = DimConst(1)
		} else {
			out[i] = x.Dim(j)
			j++
		}
	}
	return out, nil
}

func symFullRule(c *symCtx, _ []TensorType, attrs Attrs) ([]Dim, *Error) {
	want := attrs.Dims("shape")
	for _, d := range want {
		if v, ok := d.Const(); ok && v < 0 {
			return nil, Errorf(ShapeError, "%s: shape %s has a negative dimension", c.op, DimsString(want))
		}
	}
	return want, nil
}
