package lower

import (
	"pypto/core"
	"pypto/dtype"
)

// runExpandArgReductions rewrites argmax and argmin into ops the device runs: the
// extreme value m along the axis, the positions holding it (or holding NaN: NaN is the
// extreme whenever present, and the first NaN wins, as in numpy), their indices from
// iota with every other position set past the end, and the minimum of those, so the
// first such position wins.
func runExpandArgReductions(c *compilation) error {
	extreme := map[string]string{"argmax": "max", "argmin": "min"} // the ops are listed in expandedOps
	g, err := rewriteGraph(c.graph, func(b *core.Builder, _ core.Value, n *core.Node, ins []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		red, ok := extreme[n.Op]
		if !ok {
			return -1, false, nil
		}
		x := ins[0]
		shape := b.Type(x).Shape
		axis := n.Attrs.Int("axis", -1)
		if axis < 0 {
			axis += len(shape)
		}
		at := n.Loc
		var err error
		op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
			if err != nil {
				return -1
			}
			var v core.Value
			v, err = b.Op(name, in, attrs, at)
			return v
		}
		m := op(red, core.Attrs{"axis": []int64{int64(axis)}, "keepdims": true}, x)
		hit := op("logical_or", nil, op("equal", nil, x, m), op("isnan", nil, x))
		idx := op("iota", core.Attrs{"shape": int64s(shape), "axis": int64(axis)})
		past := op("full", core.Attrs{"value": float64(shape[axis]), "dtype": dtype.Int32.LongName(), "shape": []int64{}})
		cand := op("where", nil, hit, idx, past)
		v := op("min", core.Attrs{"axis": []int64{int64(axis)}, "keepdims": n.Attrs.Bool("keepdims", false)}, cand)
		return v, true, err
	})
	if err != nil {
		return err
	}
	c.graph = g
	return nil
}
