package lower

import "pypto/core"

// expander rewrites node v (n) into other nodes, returning ok=false to keep it as it
// is. ins are its inputs in the new graph; val maps any earlier value of the old graph
// to the new one.
type expander func(b *core.Builder, v core.Value, n *core.Node, ins []core.Value, val func(core.Value) core.Value) (out core.Value, ok bool, err error)

// rewriteGraph rebuilds g with every node passed through expand; params and outputs
// keep their order, and nodes that are not expanded are copied unchanged.
func rewriteGraph(g *core.Graph, expand expander) (*core.Graph, error) {
	b := core.NewBuilder(g.Name)
	vals := make([]core.Value, len(g.Nodes))
	for _, p := range g.Params {
		vals[p] = b.Param(g.Nodes[p].Name, g.Nodes[p].Type)
	}
	for i, n := range g.Nodes {
		if n.Op == core.OpParam {
			continue
		}
		ins := make([]core.Value, len(n.Inputs))
		for j, in := range n.Inputs {
			ins[j] = vals[in]
		}
		v, ok, err := expand(b, core.Value(i), n, ins, func(x core.Value) core.Value { return vals[x] })
		if err != nil {
			return nil, err
		}
		if !ok {
			if v, err = b.Op(n.Op, ins, n.Attrs, n.Loc); err != nil {
				return nil, err
			}
		}
		vals[i] = v
	}
	for _, o := range g.Outputs {
		b.Output(vals[o])
	}
	return b.Graph(), nil
}

// int64s converts dims for an attribute.
func int64s(xs []int) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}
