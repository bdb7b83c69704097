package lower

import "pypto/core"

// runExpandPad rewrites pad into concatenations: along each padded axis, a block of the
// pad value before, the tensor, and a block after. Every piece is a lowered op (full,
// concat), so padding costs one copy per axis and no special kernel.
func runExpandPad(c *compilation) error {
	g, err := rewriteGraph(c.graph, func(b *core.Builder, _ core.Value, n *core.Node, ins []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		if n.Op != "pad" {
			return -1, false, nil
		}
		pads := n.Attrs.Ints("pads")
		v := ins[0]
		dt := n.Type.DType.LongName()
		for ax := range b.Type(v).Shape {
			before, after := pads[2*ax], pads[2*ax+1]
			if before == 0 && after == 0 {
				continue
			}
			var parts []core.Value
			for i, width := range []int{before, 0, after} {
				if i == 1 {
					parts = append(parts, v)
					continue
				}
				if width == 0 {
					continue
				}
				shape := b.Type(v).Shape.Clone()
				shape[ax] = width
				block, err := b.Op("full", nil, core.Attrs{"value": n.Attrs.Float("value", 0), "dtype": dt, "shape": int64s(shape)}, n.Loc)
				if err != nil {
					return -1, false, err
				}
				parts = append(parts, block)
			}
			var err error
			if v, err = b.Op("concat", parts, core.Attrs{"axis": int64(ax)}, n.Loc); err != nil {
				return -1, false, err
			}
		}
		if v == ins[0] { // nothing to pad: still a new value, as the graph's output may need
			var err error
			v, err = b.Op("reshape", []core.Value{v}, core.Attrs{"shape": int64s(n.Type.Shape)}, n.Loc)
			return v, true, err
		}
		return v, true, nil
	})
	if err != nil {
		return err
	}
	c.graph = g
	return nil
}
