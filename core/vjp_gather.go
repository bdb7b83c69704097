package core

import "pypto/dtype"

// VJP rules of the gathers. Their cotangent is a scatter-add, written with the ops
// that exist: a one-hot comparison of the indices with iota, contracted with the
// cotangent (a matmul for index_select, which is how an embedding's weight gets its
// gradient on the cube unit; a masked sum for take_along_axis). sort and topk_values
// are gathers at the indices argsort and topk_indices give.

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

// vjpIndexSelect: out = x[..., idx, ...] along axis. With the axis moved first and the
// other axes flattened, dx = onehot(idx)^T @ g, onehot[j, i] = (idx[j] == i).
func vjpIndexSelect(c *VJPContext) []Value {
	xt := c.typ(c.x(0))
	ax, _ := normAxis("", c.Attrs.Int("axis", 0), len(xt.Shape))
	n, k := xt.Shape[ax], c.typ(c.x(1)).Shape[0]
	perm := []int{ax}
	for i := range xt.Shape {
		if i != ax {
			perm = append(perm, i)
		}
	}
	g := c.G
	if ax != 0 {
		g = c.op("transpose", Attrs{"perm": int64s(perm)}, g)
	}
	moved := c.typ(g).Shape
	rest := moved[1:].NumElements()
	mt := dtype.Float32
	if xt.DType == dtype.Float16 || xt.DType == dtype.BFloat16 {
		mt = xt.DType // the one-hot values are exact in any float dtype
	}
	g2 := c.cast(c.op("reshape", Attrs{"shape": []int64{int64(k), int64(rest)}}, g), mt)
	idx := c.op("reshape", Attrs{"shape": []int64{int64(k), 1}}, c.indices(c.x(1), n))
	onehot := c.cast(c.op("equal", nil, idx, c.op("iota", Attrs{"shape": []int64{int64(k), int64(n)}, "axis": int64(1)})), mt)
	dx := c.op("matmul", Attrs{"transpose_a": true}, onehot, g2)
	back := moved.Clone()
	back[0] = n
	dx = c.op("reshape", Attrs{"shape": int64s(back)}, dx)
	if ax != 0 {
		inv := make([]int, len(perm))
		for i, p := range perm {
			inv[p] = i
		}
		dx = c.op("transpose", Attrs{"perm": int64s(inv)}, dx)
	}
	return []Value{dx, -1}
}

// scatterAlong is the cotangent of x for out = take_along_axis(x, idx, ax) with
// cotangent g: dx[..., j, ...] = sum_i g[..., i, ...] * (idx[..., i, ...] == j), over a
// new axis after ax, then summed to x's shape (x may broadcast on the other axes).
func (c *VJPContext) scatterAlong(g, idx Value, ax int) Value {
	xs := c.typ(c.x(0)).Shape
	n := xs[ax]
	gs := c.typ(g).Shape
	at := Attrs{"axis": []int64{int64(ax + 1)}}
	iotaShape := make([]int64, len(gs)+1)
	for i := range iotaShape {
		iotaShape[i] = 1
	}
	iotaShape[ax+1] = int64(n)
	pos := c.op("iota", Attrs{"shape": iotaShape, "axis": int64(ax + 1)})
	hit := c.op("equal", nil, c.op("unsqueeze", at, c.indices(idx, n)), pos)
	gt := c.f32(g)
	picked := c.op("where", nil, hit, c.op("unsqueeze", at, gt), c.constLike(gt, 0))
	dx := c.op("sum", Attrs{"axis": []int64{int64(ax)}, "keepdims": false}, picked)
	return c.sumTo(dx, xs)
}
