package lower

import (
	"fmt"
	"sort"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// Elementwise fusion: a chain (or tree) of elementwise ops over one iteration space runs
// as one kernel, its intermediates in on-chip tiles instead of GM. The group becomes a
// core "fused" op whose body is the group's graph, so every later stage, the text forms
// and the reference interpreter handle it like any other op.

// fusable reports whether node n can be part of a fused elementwise kernel: a vector op
// with a body (or a cast) that reads its inputs through plain broadcasting and that the
// simulator runs.
func fusable(n *core.Node) bool {
	l, ok := lowerings[n.Op]
	if !ok || l.kind != TileElementwise || l.partial || l.indirect || l.maps != nil || n.Op == "fused" {
		return false
	}
	if l.body == nil && n.Op != "cast" {
		return false
	}
	_, missing := l.unsupported(n.Op)
	return !missing
}

// runFuseElementwise groups each fusable node with its consumers when they are fusable,
// all in one group and of the same shape (so the producer's value is one tile of the
// consumers' iteration space; a constant fits any shape), and rewrites each group of two
// or more into a fused op.
func runFuseElementwise(c *compilation) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	// Groups where values read by several steps stay on chip; where such a group needs
	// more scratch than the chip has, its single-reader chains alone, and where even
	// those do not fit, no fusion.
	root := elementwiseGroups(g, users, isOut, true)
	chains := elementwiseGroups(g, users, isOut, false)
	members := groupMembers(root)
	for r, group := range members {
		if !fusedFits(c, g, append(group, r)) {
			for _, m := range append(group, r) {
				root[m] = chains[m] // chains never leave the group they are part of
			}
		}
	}
	members = groupMembers(root)
	for r, group := range members {
		if !fusedFits(c, g, append(group, r)) { // too much scratch for the chip: keep them apart
			for _, m := range group {
				root[m] = m
			}
			delete(members, r)
		}
	}
	if len(members) == 0 {
		return nil
	}
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, _ []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if root[v] != v {
			return -1, true, nil // built inside its group's fused op
		}
		group, ok := members[v]
		if !ok {
			return -1, false, nil
		}
		return buildFusedOp(b, "fused", g, append(group, v), n, val)
	})
	if err != nil {
		return err
	}
	c.graph = ng
	return nil
}

// elementwiseGroups gives each node the last node of its fusion group (consumers are
// visited first, so their groups are final). A fusable node joins its consumers' group
// when they are fusable, of its shape (a constant fits any shape: it is the same at
// every index) and, with shared, all in one group; without shared, when it has one
// consumer.
func elementwiseGroups(g *core.Graph, users [][]core.Value, isOut map[core.Value]bool, shared bool) []core.Value {
	root := make([]core.Value, len(g.Nodes))
	for i := range root {
		root[i] = core.Value(i)
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if n.Op == core.OpParam || !fusable(n) || isOut[core.Value(i)] || len(users[i]) == 0 || (!shared && len(users[i]) != 1) {
			continue
		}
		group, ok := core.Value(-1), true
		for _, u := range users[i] {
			sameSpace := g.Type(core.Value(i)).Shape.Equal(g.Type(u).Shape) || n.Op == "full"
			if !fusable(g.Nodes[u]) || !sameSpace || (group >= 0 && root[u] != group) {
				ok = false
				break
			}
			group = root[u]
		}
		if ok {
			root[i] = group
		}
	}
	return root
}

// groupMembers lists the other members of each group of two or more, by its last node.
func groupMembers(root []core.Value) map[core.Value][]core.Value {
	members := map[core.Value][]core.Value{}
	for i, r := range root {
		if int(r) != i {
			members[r] = append(members[r], core.Value(i))
		}
	}
	return members
}

// buildFusedOp makes the op (fused or fused_rows) of group (its members and, last, its
// root) in b: the body graph takes the group's outside inputs as params, in order of
// first use.
func buildFusedOp(b *core.Builder, op string, g *core.Graph, group []core.Value, rootNode *core.Node, val func(core.Value) core.Value) (core.Value, bool, error) {
	sort.Slice(group, func(i, j int) bool { return group[i] < group[j] })
	in := map[core.Value]bool{}
	for _, v := range group {
		in[v] = true
	}
	body := core.NewBuilder("fused")
	inner := map[core.Value]core.Value{}
	var outside []core.Value
	for _, v := range group {
		n := g.Nodes[v]
		args := make([]core.Value, len(n.Inputs))
		for j, x := range n.Inputs {
			if !in[x] {
				if _, seen := inner[x]; !seen {
					inner[x] = body.Param(fmt.Sprintf("x%d", len(outside)), g.Type(x))
					outside = append(outside, x)
				}
			}
			args[j] = inner[x]
		}
		r, err := body.Op(n.Op, args, n.Attrs, core.Location{})
		if err != nil {
			return -1, false, err
		}
		inner[v] = r
	}
	body.Output(inner[group[len(group)-1]])
	args := make([]core.Value, len(outside))
	for i, x := range outside {
		args[i] = val(x)
	}
	attrs := groupTileAttrs(g, group)
	attrs["body"] = core.Format(body.Graph())
	v, err := b.Op(op, args, attrs, rootNode.Loc)
	return v, true, err
}

// fusedFits reports whether group, fused, still has a vector tile that fits the chip.
func fusedFits(c *compilation, g *core.Graph, group []core.Value) bool {
	b := core.NewBuilder("probe")
	v, _, err := buildFusedOp(b, "fused", g, group, g.Nodes[group[len(group)-1]], func(x core.Value) core.Value {
		return b.Param(fmt.Sprintf("p%d", x), g.Type(x))
	})
	if err != nil {
		return false
	}
	n := b.Graph().Nodes[v]
	ins := make([]dtype.DType, len(n.Inputs))
	for i, x := range n.Inputs {
		ins[i] = b.Graph().Type(x).DType
	}
	_, _, err = elementwiseTiling(c.chip, "fused", n.Attrs, ins, n.Type.DType, 1, 1)
	return err == nil
}

// fusedBody runs the body graph of a fused op on the tiles of its inputs: each step is
// its op's own body (or a TCVT for a cast) on its arguments, converted to the dtypes
// that op computes in; steps write scratch tiles, the last one the output tile.
func fusedBody(b *vecBody, dst int, srcs []int) {
	plan, body, err := planBody(b.attrs)
	if err != nil {
		panic(fmt.Sprintf("fused op with a bad body reached code generation: %v", err)) // verified before
	}
	saved := b.attrs
	defer func() { b.attrs = saved }()
	tiles := map[core.Value]int{}
	for i, p := range body.Params {
		tiles[p] = srcs[i]
	}
	for i, n := range body.Nodes {
		v := core.Value(i)
		if n.Op == core.OpParam || plan.constImm[v] {
			continue
		}
		l := lowerings[n.Op]
		argTypes := make([]dtype.DType, len(n.Inputs))
		for j, x := range n.Inputs {
			argTypes[j] = body.Type(x).DType
		}
		want := l.operandTypes(argTypes, n.Type.DType)
		sc, hasScalar := plan.scalar[v]
		args := make([]int, len(n.Inputs))
		for j, x := range n.Inputs {
			if hasScalar && sc.index == j {
				continue
			}
			args[j] = tiles[x]
			if argTypes[j] != want[j] {
				c := b.tile(plan.cvtSlot[[2]int{i, j}].name(), want[j], b.tr, b.tc)
				b.emit(isa.TCVT, isa.ModeNone, c, args[j])
				args[j] = c
			}
		}
		out := dst
		if v != body.Outputs[0] {
			out = b.tile(plan.slot[v].name(), n.Type.DType, b.tr, b.tc)
		}
		switch {
		case hasScalar:
			b.emit(sc.op, isa.ModeNone, out, args[1-sc.index], sc.value)
		case l.body == nil: // a cast
			b.emit(isa.TCVT, isa.ModeNone, out, args[0])
		default:
			b.attrs = n.Attrs
			l.body(b, out, args)
		}
		tiles[v] = out
	}
}

// fusedShape gives the tiling facts of a fused op from its body: the widest column
// alignment its steps need, and the scratch tiles (in double-buffered pairs) of its
// intermediates' slots (bodyPlan) plus those of every kind of step in it.
func fusedShape(attrs core.Attrs) (colAlign, extra int) {
	plan, body, err := planBody(attrs)
	if err != nil {
		return 0, 0
	}
	// Scratch tiles are named by their op's body and live through the whole kernel
	// (vecBody.tile), so every kind of op in the body adds its own, while two
	// instances of one kind share theirs.
	scratchOf := map[string]int{}
	for i, n := range body.Nodes {
		if n.Op == core.OpParam || plan.constImm[core.Value(i)] {
			continue
		}
		l := lowerings[n.Op]
		colAlign = max(colAlign, l.colAlign)
		if l.extraLive != nil {
			scratchOf[n.Op] = max(scratchOf[n.Op], l.extraLive(n.Attrs))
		}
	}
	scratch := 0
	for _, s := range scratchOf {
		scratch += s
	}
	return colAlign, (plan.slotCount()+1)/2 + scratch
}

func init() {
	lowerings["fused"] = lowering{kind: TileElementwise, core: isa.Vector, body: fusedBody,
		computeIn: func(in []dtype.DType, _ dtype.DType) []dtype.DType { return in },
		extraLive: func(attrs core.Attrs) int { _, e := fusedShape(attrs); return e }}
}
