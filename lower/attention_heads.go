package lower

import "pypto/core"

// runFoldAttentionTranspose lets a flash attention store its result heads-last when
// the only reader transposes it so: multi-head attention moves [batch, heads, seq, dim]
// to [batch, seq, heads, dim] before merging the heads, a copy of the whole output
// that the kernel's stores can make instead (each output tile is a strided window
// either way).
func runFoldAttentionTranspose(c *compilation) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	into := map[core.Value]core.Value{} // transpose -> the attention it folds into
	for i, n := range g.Nodes {
		v := core.Value(i)
		if n.Op != "transpose" || !swapsHeads(n.Attrs.Ints("perm"), len(n.Type.Shape)) {
			continue
		}
		x := n.Inputs[0]
		if a := g.Nodes[x]; a.Op == "flash_attention" && !a.Attrs.Bool("heads_last", false) && len(users[x]) == 1 && !isOut[x] {
			into[v] = x
		}
	}
	if len(into) == 0 {
		return nil
	}
	folded := map[core.Value]bool{}
	for _, a := range into {
		folded[a] = true
	}
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, _ []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if folded[v] {
			return -1, true, nil // built at its transpose
		}
		a, ok := into[v]
		if !ok {
			return -1, false, nil
		}
		an := g.Nodes[a]
		ins := make([]core.Value, len(an.Inputs))
		for j, x := range an.Inputs {
			ins[j] = val(x)
		}
		attrs := core.Attrs{"heads_last": true}
		for k, x := range an.Attrs {
			if k != "heads_last" {
				attrs[k] = x
			}
		}
		r, err := b.Op(an.Op, ins, attrs, an.Loc)
		return r, true, err
	})
	if err != nil {
		return err
	}
	c.graph = ng
	return nil
}

// swapsHeads reports whether perm exchanges the third-last and second-last axes of a
// rank-r tensor and keeps the others.
func swapsHeads(perm []int, r int) bool {
	if r < 3 || len(perm) != r {
		return false
	}
	for k, p := range perm {
		want := k
		switch k {
		case r - 3:
			want = r - 2
		case r - 2:
			want = r - 3
		}
		if p != want {
			return false
		}
	}
	return true
}
