package core

// VJP rules of the reductions and normalisations. sum and mean spread the cotangent
// over the reduced axes; max and min give it to the elements equal to the extreme,
// split evenly between ties (torch's amax / amin). softmax and log_softmax have rules
// of their own, shorter and better conditioned than going through their
// decomposition; layer_norm, rms_norm, var and std go through theirs.

var reduceVJPs = map[string]VJPFunc{
	"sum": func(c *VJPContext) []Value {
		x := c.typ(c.x(0)).Shape
		return []Value{c.spread(c.G, x)}
	},
	"mean": func(c *VJPContext) []Value {
		x := c.typ(c.x(0)).Shape
		n := reductionCount(x, c.reducedAxes(x))
		return []Value{c.spread(c.mul(c.G, c.constLike(c.G, 1/float64(max(n, 1)))), x)}
	},
	"max": vjpReduceExtremum,
	"min": vjpReduceExtremum,
	"softmax": func(c *VJPContext) []Value { // y * (g - sum(g * y))
		y, g := c.f32(c.Out), c.f32(c.G)
		s := c.op("sum", c.lineAxis(), c.mul(g, y))
		return []Value{c.mul(y, c.op("sub", nil, g, s))}
	},
	"log_softmax": func(c *VJPContext) []Value { // g - exp(y) * sum(g)
		y, g := c.f32(c.Out), c.f32(c.G)
		s := c.op("sum", c.lineAxis(), g)
		return []Value{c.op("sub", nil, g, c.mul(c.op("exp", nil, y), s))}
	},
	"cumsum": func(c *VJPContext) []Value { // the reversed running sum of g
		ax := c.Attrs.Int("axis", -1)
		return []Value{c.flip(c.op("cumsum", Attrs{"axis": int64(ax)}, c.flip(c.G, ax)), ax)}
	},
}

// spread is the cotangent g of a reduction of x (shape x) over the node's axes,
// broadcast back over x.
func (c *VJPContext) spread(g Value, x Shape) Value {
	if !c.Attrs.Bool("keepdims", false) {
		g = c.keepReduced(g, c.reducedAxes(x), x)
	}
	return c.op("broadcast_to", Attrs{"shape": int64s(x)}, g)
}

func vjpReduceExtremum(c *VJPContext) []Value {
	x := c.typ(c.x(0)).Shape
	out := c.Out
	if !c.Attrs.Bool("keepdims", false) {
		out = c.keepReduced(out, c.reducedAxes(x), x)
	}
	hit := c.mask(c.op("equal", nil, c.x(0), out), c.G)
	count := c.op("sum", Attrs{"axis": int64s(c.reducedAxes(x)), "keepdims": true}, hit)
	share := c.div(hit, count)
	return []Value{c.mul(share, c.spread(c.G, x))}
}

// lineAxis is the keepdims reduction over the node's one axis (softmax's).
func (c *VJPContext) lineAxis() Attrs {
	return Attrs{"axis": []int64{int64(c.Attrs.Int("axis", -1))}, "keepdims": true}
}

// flip reverses v along axis ax (a slice with step -1).
func (c *VJPContext) flip(v Value, ax int) Value {
	s := c.typ(v).Shape
	if c.err != nil {
		return -1
	}
	ax, _ = normAxis("", ax, len(s))
	starts, stops, steps := make([]int64, len(s)), make([]int64, len(s)), make([]int64, len(s))
	for i, d := range s {
		starts[i], stops[i], steps[i] = 0, int64(d), 1
	}
	starts[ax], stops[ax], steps[ax] = int64(s[ax]-1), -1, -1
	return c.op("slice", Attrs{"starts": starts, "stops": stops, "steps": steps}, v)
}
