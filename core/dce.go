package core

// EliminateDeadCode returns g without the nodes that no output depends on. Params
// always stay, in order: they are the program's inputs, bound by position. Nodes keep
// their order, types, attributes and locations; g itself is not modified.
//
// A removed node is not evaluated at all, so a data-dependent error it would have
// raised (a gather index out of range) is not reported either: what no result needs
// is not computed, as in any compiler.
func EliminateDeadCode(g *Graph) *Graph {
	live := make([]bool, len(g.Nodes))
	for _, o := range g.Outputs {
		live[o] = true
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		if live[i] {
			for _, in := range g.Nodes[i].Inputs {
				live[in] = true
			}
		}
	}
	for _, p := range g.Params {
		live[p] = true
	}
	return keepNodes(g, live)
}

// keepNodes copies the nodes of g marked in keep, renumbering values; every input of a
// kept node must be kept too.
func keepNodes(g *Graph, keep []bool) *Graph {
	out := &Graph{Name: g.Name}
	newVal := make([]Value, len(g.Nodes))
	for i, n := range g.Nodes {
		if !keep[i] {
			continue
		}
		c := *n
		c.Inputs = make([]Value, len(n.Inputs))
		for k, in := range n.Inputs {
			c.Inputs[k] = newVal[in]
		}
		newVal[i] = Value(len(out.Nodes))
		out.Nodes = append(out.Nodes, &c)
	}
	for _, p := range g.Params {
		out.Params = append(out.Params, newVal[p])
	}
	for _, o := range g.Outputs {
		out.Outputs = append(out.Outputs, newVal[o])
	}
	return out
}
