package lower

import "pypto/core"

// runSplitConstants gives every fusable consumer of a shared `full` its own copy. CSE
// merges equal constants (the eps of every layer norm, the 0.5 of every GELU) into one
// node with many readers, and the fusion passes only pull a producer into its one
// consumer's kernel; a shared constant would then be a kernel of its own, a task
// launch to write a scalar to GM. A copy per consumer costs nothing: each fused kernel
// materialises its constants on chip.
func runSplitConstants(c *compilation) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	shared := func(x core.Value) bool { return g.Nodes[x].Op == "full" && len(users[x]) > 1 }
	// keep reports whether constant x still has a reader that takes the shared node.
	keep := func(x core.Value) bool {
		if isOut[x] {
			return true
		}
		for _, u := range users[x] {
			if !fusable(g.Nodes[u]) {
				return true
			}
		}
		return false
	}
	changed := false
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, ins []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		if shared(v) && !keep(v) {
			changed = true
			return -1, true, nil // every reader gets a copy below
		}
		if !fusable(n) {
			return -1, false, nil
		}
		copied := false
		args := append([]core.Value(nil), ins...)
		for j, x := range n.Inputs {
			if shared(x) {
				cn := g.Nodes[x]
				cp, err := b.Op(cn.Op, nil, cn.Attrs, cn.Loc)
				if err != nil {
					return -1, false, err
				}
				args[j], copied = cp, true
			}
		}
		if !copied {
			return -1, false, nil
		}
		changed = true
		r, err := b.Op(n.Op, args, n.Attrs, n.Loc)
		return r, true, err
	})
	if err != nil || !changed {
		return err
	}
	c.graph = ng
	return nil
}
