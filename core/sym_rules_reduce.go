package core

// Symbolic shape rules of the reductions: the reduced axes are removed (or kept as 1
// with keepdims); reductions without an identity need non-empty axes.

func init() {
	registerSym(symReduceRule(true), "sum", "prod", "mean", "var", "std")
	registerSym(symReduceRule(false), "max", "min")
	registerSym(symArgRule, "argmax", "argmin")
}

func symReduceRule(hasIdentity bool) func(*symCtx, []TensorType, Attrs) ([]Dim, *Error) {
	return func(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
		x := in[0]
		axes, err := normAxes(c.op, attrs.Ints("axis"), len(x.Shape))
		if err != nil {
			return nil, err
		}
		if !hasIdentity {
			if err := c.nonEmpty(x, axes); err != nil {
				return nil, err
			}
		}
		return reducedDims(x.AllDims(), axes, attrs.Bool("keepdims", false)), nil
	}
}

func symArgRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	x := in[0]
	ax, err := normAxis(c.op, attrs.Int("axis", -1), len(x.Shape))
	if err != nil {
		return nil, err
	}
	if err := c.nonEmpty(x, []int{ax}); err != nil {
		return nil, err
	}
	return reducedDims(x.AllDims(), []int{ax}, attrs.Bool("keepdims", false)), nil
}

// nonEmpty requires the axes of x to have at least one element.
func (c *symCtx) nonEmpty(x TensorType, axes []int) *Error {
	for _, a := range axes {
		if !c.need(x.Dim(a), AtLeast, DimConst(1), c.op+" has no identity, so axis "+itoa(a)+" of "+x.ShapeString()+" must not be empty") {
			return Errorf(ValueError, "%s: cannot reduce axis %d of shape %s: it is empty and %s has no identity", c.op, a, x.ShapeString(), c.op)
		}
	}
	return nil
}

func reducedDims(dims []Dim, axes []int, keepdims bool) []Dim {
	red := map[int]bool{}
	for _, a := range axes {
		red[a] = true
	}
	out := []Dim{}
	for i, d := range dims {
		switch {
		case !red[i]:
			out = append(out, d)
		case keepdims:
			out = append(out, DimConst(1))
		}
	}
	return out
}
