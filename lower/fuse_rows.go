package lower

import (
	"fmt"

	"pypto/core"
	"pypto/isa"
)

// Row fusion: softmax, log_softmax, layer and RMS norms, and the same math written out
// by hand, are reductions along the last axis and elementwise steps over whole rows,
// per-row values ([..., 1]) and per-column parameters ([C]). Unfused, each step is a
// kernel with a round trip through GM; fused, one kernel loads tr whole rows once,
// computes every step on chip and stores the result once (codegen_rows.go). The
// pattern is structural: any group of such steps with one result qualifies, whatever
// op it came from. A group whose rows do not fit the UB stays unfused, so every row
// length still compiles.

// rowStep reports whether n can be a step of a row kernel: a reduction of a float
// input along its last axis, an elementwise op fusion takes, or a reshape that adds
// or drops a last axis of size 1 (moving a per-row value between [..., 1] and [...]).
func rowStep(g *core.Graph, n *core.Node) bool {
	if n.Op == "reshape" {
		in, out := g.Type(n.Inputs[0]).Shape, n.Type.Shape
		return lastAxisOfOne(in, out) || lastAxisOfOne(out, in)
	}
	return n.Op != core.OpParam && (rowReduction(g, n) || rowElementwise(n))
}

// lastAxisOfOne reports whether b is a with a last axis of size 1 added.
func lastAxisOfOne(a, b core.Shape) bool {
	return len(b) == len(a)+1 && b[len(a)] == 1 && b[:len(a)].Equal(a)
}

// runFuseRows groups each row step with its consumers when all of them are in one
// group (so the group has one result), keeps the groups that reduce along rows and
// whose rows fit the chip, and rewrites each into a fused_rows op.
func runFuseRows(c *compilation) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	root := make([]core.Value, len(g.Nodes))
	for i := range root {
		root[i] = -1
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if !rowStep(g, n) {
			continue
		}
		root[i] = core.Value(i)
		if isOut[core.Value(i)] || len(users[i]) == 0 {
			continue
		}
		r := root[users[i][0]]
		for _, u := range users[i] {
			if root[u] != r {
				r = -1
			}
		}
		if r >= 0 {
			root[i] = r
		}
	}
	members := map[core.Value][]core.Value{}
	for i, r := range root {
		if r >= 0 {
			members[r] = append(members[r], core.Value(i))
		}
	}
	groupOf := map[core.Value]core.Value{}
	groups := map[core.Value][]core.Value{}
	for r, group := range members {
		group = rowsGroup(g, group)
		if len(group) > 1 && rowsGroupFits(c, g, group) {
			groups[r] = group
			for _, v := range group {
				groupOf[v] = r
			}
		}
	}
	if len(groups) == 0 {
		return nil
	}
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, _ []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		r, ok := groupOf[v]
		if !ok {
			return -1, false, nil
		}
		if r != v {
			return -1, true, nil // built inside its group's op
		}
		return buildFusedOp(b, "fused_rows", g, groups[r], n, val)
	})
	if err != nil {
		return err
	}
	c.graph = ng
	return nil
}

// rowsGroup trims a candidate group (in node order, its result last) to a row kernel:
// a member the kernel cannot compute leaves the group with every member it is
// computed from (they now feed an input of the group), until the rest plans or no
// reduction remains; when the result itself cannot be computed, it leaves alone and
// the one member it read from becomes the result. It returns nil when nothing is left.
func rowsGroup(g *core.Graph, group []core.Value) []core.Value {
	for len(group) > 1 {
		_, err := planGroup(g, group)
		if err == nil {
			return group
		}
		pe, ok := err.(*rowsPlanError)
		if !ok {
			return nil
		}
		res := group[len(group)-1]
		if pe.at == res {
			group = group[:len(group)-1]
			if n := g.Nodes[res]; len(uniqueInputs(n)) != 1 || n.Inputs[0] != group[len(group)-1] {
				return nil
			}
			continue
		}
		drop := map[core.Value]bool{pe.at: true}
		for i := len(group) - 1; i >= 0; i-- { // producers come before their users
			if drop[group[i]] {
				for _, x := range g.Nodes[group[i]].Inputs {
					drop[x] = true
				}
			}
		}
		var kept []core.Value
		for _, v := range group {
			if !drop[v] {
				kept = append(kept, v)
			}
		}
		group = kept
	}
	return nil
}

// rowsGroupFits reports whether group (in node order, its result last) is a row
// kernel whose tiles of at least one row fit the chip's UB.
func rowsGroupFits(c *compilation, g *core.Graph, group []core.Value) bool {
	b := core.NewBuilder("probe")
	v, _, err := buildFusedOp(b, "fused_rows", g, group, g.Nodes[group[len(group)-1]], func(x core.Value) core.Value {
		return b.Param(fmt.Sprintf("p%d", x), g.Type(x))
	})
	if err != nil {
		return false
	}
	p, err := rowsPlanOf(b.Graph().Nodes[v].Attrs)
	if err != nil {
		return false
	}
	_, _, err = rowsTile(c.chip, p)
	return err == nil
}

func init() {
	lowerings["fused_rows"] = lowering{kind: TileRows, core: isa.Vector}
}
