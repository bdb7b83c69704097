package core

import "pypto/dtype"

// VJP rules of index_put and scatter. x's cotangent is g where nothing was written
// over x (all of g when the writes add); a written value's cotangent is g at the
// position it was written to, gathered back, and zero for a value a later duplicate
// overwrote: the winner of each position is found by writing the index elements' own
// numbers with the op itself and reading them back.

// iotaOf is 0, 1, ... (int32) in the given shape, in row-major order.
func (c *VJPContext) iotaOf(shape Shape) Value {
	flat := c.op("iota", Attrs{"shape": []int64{int64(shape.NumElements())}, "axis": int64(0)})
	return c.op("reshape", Attrs{"shape": int64s(shape)}, c.cast(flat, dtype.Int32))
}

// zerosOf is a zero tensor of shape and dtype d.
func (c *VJPContext) zerosOf(shape Shape, d dtype.DType) Value {
	return c.op("full", Attrs{"value": 0.0, "dtype": d.LongName(), "shape": int64s(shape)})
}

// vjpIndexPut: inputs x, values, idx...; the written rows of x (flattened to [N, T]
// over its k indexed axes) are rows(b) = sum_j idx_j[b] * stride_j.
func vjpIndexPut(c *VJPContext) []Value {
	xt, vt := c.typ(c.x(0)), c.typ(c.x(1))
	idx := c.In[2:]
	k := len(idx)
	lead := xt.Shape[:k]
	strides := lead.Strides()
	b := c.typ(idx[0]).Shape
	nb, t := b.NumElements(), xt.Shape[k:].NumElements()
	flat := []int64{int64(nb)}
	var rows Value = -1
	for j, ix := range idx {
		r := c.op("mul", nil, c.indices(ix, lead[j]), c.scalar(dtype.Int32, float64(strides[j])))
		if rows < 0 {
			rows = r
		} else {
			rows = c.op("add", nil, rows, r)
		}
	}
	rows = c.op("reshape", Attrs{"shape": flat}, rows)
	g2 := c.op("reshape", Attrs{"shape": []int64{int64(lead.NumElements()), int64(t)}}, c.G)
	dv := c.op("index_select", Attrs{"axis": int64(0)}, g2, rows) // [nb, t]
	dx := c.G
	if !c.Attrs.Bool("accumulate", false) {
		dx = c.op("index_put", c.Attrs, append([]Value{c.G, c.zerosOf(vt.Shape, c.typ(c.G).DType)}, idx...)...)
		order := c.iotaOf(Shape{nb})
		none := c.op("full", Attrs{"value": -1.0, "dtype": "int32", "shape": []int64{int64(lead.NumElements())}})
		winner := c.op("index_select", Attrs{"axis": int64(0)}, c.op("index_put", Attrs{"accumulate": false}, none, order, rows), rows)
		won := c.op("reshape", Attrs{"shape": []int64{int64(nb), 1}}, c.op("equal", nil, winner, order))
		dv = c.mul(dv, c.mask(won, dv))
	}
	dv = c.op("reshape", Attrs{"shape": int64s(vt.Shape)}, dv)
	out := []Value{dx, dv}
	for range idx {
		out = append(out, -1)
	}
	return out
}

// vjpScatter: inputs x, index, src. g is read at the written positions with
// take_along_axis on the box of g that index spans off dim, and src's cotangent is
// zero outside index's shape.
func vjpScatter(c *VJPContext) []Value {
	xt, it, st := c.typ(c.x(0)), c.typ(c.x(1)), c.typ(c.x(2))
	dim, _ := normAxis("", c.Attrs.Int("dim", 0), len(xt.Shape))
	box := func(v Value) Value {
		stops := it.Shape.Clone()
		stops[dim] = xt.Shape[dim]
		if stops.Equal(xt.Shape) {
			return v
		}
		starts, steps := make([]int, len(stops)), make([]int, len(stops))
		for i := range steps {
			steps[i] = 1
		}
		return c.slice(v, starts, stops, steps)
	}
	at := Attrs{"axis": int64(dim)}
	ds := c.op("take_along_axis", at, box(c.G), c.x(1))
	dx := c.G
	if c.Attrs.Str("reduce", "none") != "add" {
		dx = c.op("scatter", c.Attrs, c.G, c.x(1), c.zerosOf(it.Shape, c.typ(c.G).DType))
		order := c.iotaOf(it.Shape)
		none := c.op("full", Attrs{"value": -1.0, "dtype": "int32", "shape": int64s(xt.Shape)})
		winner := c.op("take_along_axis", at, box(c.op("scatter", Attrs{"dim": int64(dim), "reduce": "none"}, none, c.x(1), order)), c.x(1))
		ds = c.mul(ds, c.mask(c.op("equal", nil, winner, order), ds))
	}
	if !it.Shape.Equal(st.Shape) {
		pads := make([]int64, 2*len(st.Shape))
		for d := range st.Shape {
			pads[2*d+1] = int64(st.Shape[d] - it.Shape[d])
		}
		ds = c.op("pad", Attrs{"pads": pads, "value": 0.0}, ds)
	}
	return []Value{dx, -1, ds}
}
