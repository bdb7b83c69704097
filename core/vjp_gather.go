package core

import "pypto/dtype"

// VJP rules of the gathers. Their cotangent is a scatter-add of the incoming one into
// zeros of x's shape, accumulated in float32: index_put rows for index_select along
// axis 0 (an embedding's weight gradient: the selected rows added where they came
// from), scatter(reduce="add") along the axis otherwise and for take_along_axis, so
// the work and memory are those of the gathered values, never the one-hot product of
// the indices with the axis. sort and topk_values are gathers at the indices argsort
// and topk_indices give.

var gatherVJPs = map[string]VJPFunc{
	"index_select": vjpIndexSelect,
	"slice_update": vjpSliceUpdate,
	"take_along_axis": func(c *VJPContext) []Value {
		ax, _ := normAxis("", c.Attrs.Int("axis", -1), len(c.typ(c.x(0)).Shape))
		return []Value{c.scatterAlong(c.G, c.x(1), ax), -1}
	},
	"sort": func(c *VJPContext) []Value {
		ax, _ := normAxis("", c.Attrs.Int("axis", -1), len(c.typ(c.x(0)).Shape))
		idx := c.op("argsort", c.Attrs, c.x(0))
		return []Value{c.scatterAlong(c.G, idx, ax)}
	},
	"topk_values": func(c *VJPContext) []Value {
		ax, _ := normAxis("", c.Attrs.Int("axis", -1), len(c.typ(c.x(0)).Shape))
		idx := c.op("topk_indices", c.Attrs, c.x(0))
		return []Value{c.scatterAlong(c.G, idx, ax)}
	},
}

// indices returns idx as int32 with negative entries counted from the end of an axis
// of size n.
func (c *VJPContext) indices(idx Value, n int) Value {
	i := c.cast(idx, dtype.Int32)
	neg := c.op("less", nil, i, c.scalar(dtype.Int32, 0))
	return c.op("where", nil, neg, c.op("add", nil, i, c.scalar(dtype.Int32, float64(n))), i)
}

// vjpIndexSelect: out = x[..., idx, ...] along axis; dx adds each slice of g where its
// index says.
func vjpIndexSelect(c *VJPContext) []Value {
	xt := c.typ(c.x(0))
	ax, _ := normAxis("", c.Attrs.Int("axis", 0), len(xt.Shape))
	n, k := xt.Shape[ax], c.typ(c.x(1)).Shape[0]
	idx := c.indices(c.x(1), n)
	if ax == 0 {
		dx := c.op("index_put", Attrs{"accumulate": true}, c.zerosOf(xt.Shape, dtype.Float32), c.f32(c.G), idx)
		return []Value{dx, -1}
	}
	gs := c.typ(c.G).Shape
	along := make([]int64, len(gs))
	for i := range along {
		along[i] = 1
	}
	along[ax] = int64(k)
	spread := c.op("broadcast_to", Attrs{"shape": int64s(gs)}, c.op("reshape", Attrs{"shape": along}, idx))
	return []Value{c.scatterAdd(c.G, spread, ax, xt.Shape), -1}
}

// scatterAlong is the cotangent of x for out = take_along_axis(x, idx, ax) with
// cotangent g: g added at idx along ax into zeros of out's shape with ax of x's size,
// then summed to x's shape (x may broadcast on the other axes).
func (c *VJPContext) scatterAlong(g, idx Value, ax int) Value {
	xs := c.typ(c.x(0)).Shape
	gs := c.typ(g).Shape
	spread := c.indices(idx, xs[ax])
	if !c.typ(spread).Shape.Equal(gs) {
		spread = c.op("broadcast_to", Attrs{"shape": int64s(gs)}, spread)
	}
	into := gs.Clone()
	into[ax] = xs[ax]
	return c.sumTo(c.scatterAdd(g, spread, ax, into), xs)
}

// scatterAdd is g (float32) added at idx (int32, g's shape, in [0, n)) along ax into
// float32 zeros of shape into.
func (c *VJPContext) scatterAdd(g, idx Value, ax int, into Shape) Value {
	return c.op("scatter", Attrs{"dim": int64(ax), "reduce": "add"}, c.zerosOf(into, dtype.Float32), idx, c.f32(g))
}
