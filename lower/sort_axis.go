package lower

import "pypto/core"

// runSortLastAxis moves the axis of every sort and argsort to the end (a transpose
// before and after), since the device sorts rows.
func runSortLastAxis(c *compilation) error {
	g, err := rewriteGraph(c.graph, func(b *core.Builder, _ core.Value, n *core.Node, ins []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		if n.Op != "sort" && n.Op != "argsort" {
			return -1, false, nil
		}
		rank := len(b.Type(ins[0]).Shape)
		axis := gatherAxis(n.Attrs, -1, rank)
		if axis == rank-1 {
			return -1, false, nil
		}
		perm := make([]int64, rank) // swap axis and the last one: its own inverse
		for i := range perm {
			perm[i] = int64(i)
		}
		perm[axis], perm[rank-1] = int64(rank-1), int64(axis)
		t, err := b.Op("transpose", ins, core.Attrs{"perm": perm}, n.Loc)
		if err != nil {
			return -1, false, err
		}
		attrs := core.Attrs{"axis": int64(-1), "descending": n.Attrs.Bool("descending", false)}
		if d, ok := n.Attrs["dtype"]; ok {
			attrs["dtype"] = d // argsort's index dtype
		}
		s, err := b.Op(n.Op, []core.Value{t}, attrs, n.Loc)
		if err != nil {
			return -1, false, err
		}
		v, err := b.Op("transpose", []core.Value{s}, core.Attrs{"perm": perm}, n.Loc)
		return v, true, err
	})
	if err != nil {
		return err
	}
	c.graph = g
	return nil
}
