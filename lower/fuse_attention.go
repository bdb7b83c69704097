package lower

import (
	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// Attention fusion: scaled_dot_product_attention, and the same chain written by hand,
//
//	matmul(q, k^T)  [* scale or / scale]  [+ mask or where(mask, ., fill)]  softmax(-1)  matmul(., v)
//
// become one flash_attention op, run as one mixed cube+vector kernel
// (codegen_attention.go). The pass runs before decompose, so it sees softmax and the
// registry op whole; k^T is a transpose_b matmul or a transpose of k's last two axes;
// the scale, and the value a where puts at the dropped scores, are constants (fulls) or
// one-element tensors (a Python scalar is a bound 0-d input). Every intermediate of the chain must have no other reader. Attentions
// the kernel cannot run (no tile fits, empty sequences) are left to decompose.

type attentionMatch struct {
	inputs   []core.Value // q, k, v, [mask], [scale]
	attrs    core.Attrs
	absorbed []core.Value // chain nodes the fused op replaces, the root aside
}

func runFuseAttention(c *compilation) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	private := func(v core.Value) bool { return len(users[v]) == 1 && !isOut[v] }
	roots := map[core.Value]*attentionMatch{}
	absorbed := map[core.Value]bool{}
	for i, n := range g.Nodes {
		v := core.Value(i)
		var m *attentionMatch
		switch n.Op {
		case "scaled_dot_product_attention":
			m = registryAttention(g, n)
		case "matmul", "batch_matmul":
			m = attentionChain(g, private, n)
		}
		if m == nil || !attentionRuns(c.chip, g, m, g.Type(v)) {
			continue
		}
		roots[v] = m
		for _, x := range m.absorbed {
			absorbed[x] = true
		}
	}
	if len(roots) == 0 {
		return nil
	}
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, _ []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if absorbed[v] {
			return -1, true, nil // part of a fused attention built later
		}
		m, ok := roots[v]
		if !ok {
			return -1, false, nil
		}
		ins := make([]core.Value, len(m.inputs))
		for i, x := range m.inputs {
			ins[i] = val(x)
		}
		out, err := b.Op("flash_attention", ins, m.attrs, n.Loc)
		return out, true, err
	})
	if err != nil {
		return err
	}
	c.graph = ng
	return nil
}

func registryAttention(g *core.Graph, n *core.Node) *attentionMatch {
	q := g.Type(n.Inputs[0])
	return &attentionMatch{inputs: n.Inputs, attrs: core.Attrs{
		"scale":     core.AttentionScale(n.Attrs.Float("scale", 0), q.Shape[len(q.Shape)-1]),
		"is_causal": n.Attrs.Bool("is_causal", false),
		"mask":      len(n.Inputs) == 4,
	}}
}

// attentionChain matches the hand-written chain ending in mm, the product with v.
func attentionChain(g *core.Graph, private func(core.Value) bool, mm *core.Node) *attentionMatch {
	if mm.Attrs.Bool("transpose_a", false) || mm.Attrs.Bool("transpose_b", false) {
		return nil
	}
	m := &attentionMatch{attrs: core.Attrs{"scale": 1.0}}
	take := func(v core.Value) *core.Node {
		if !private(v) {
			return nil
		}
		m.absorbed = append(m.absorbed, v)
		return g.Nodes[v]
	}
	sm := take(mm.Inputs[0])
	if sm == nil || sm.Op != "softmax" || !lastAxis(sm.Attrs.Int("axis", -1), len(sm.Type.Shape)) {
		return nil
	}
	x := sm.Inputs[0]
	shape := g.Type(x).Shape
	var mask, fillIn core.Value = -1, -1
	switch g.Nodes[x].Op {
	case "add":
		n := take(x)
		if n == nil {
			return nil
		}
		a, b := n.Inputs[0], n.Inputs[1]
		if !g.Type(a).Shape.Equal(shape) || !scoresLike(g, a) {
			a, b = b, a
		}
		if !g.Type(a).Shape.Equal(shape) || !g.Type(b).DType.IsFloat() {
			return nil
		}
		x, mask = a, b
	case "where":
		n := take(x)
		if n == nil {
			return nil
		}
		cond, a, fill := n.Inputs[0], n.Inputs[1], n.Inputs[2]
		if g.Type(cond).DType != dtype.Bool || !g.Type(a).Shape.Equal(shape) || g.Type(fill).Shape.NumElements() != 1 {
			return nil
		}
		if f := g.Nodes[fill]; f.Op == "full" {
			// the fill as the chain computes it: rounded to the scores' dtype
			m.attrs["fill"] = dtype.Round(g.Type(x).DType, f.Attrs.Float("value", 0))
		} else {
			m.attrs["fill_in"] = true
			fillIn = fill
		}
		x, mask = a, cond
	}
	var scale core.Value = -1
	if op := g.Nodes[x].Op; op == "mul" || op == "div" {
		n := take(x)
		if n == nil {
			return nil
		}
		a, s := n.Inputs[0], n.Inputs[1]
		if op == "mul" && !g.Type(a).Shape.Equal(shape) {
			a, s = s, a
		}
		if !g.Type(a).Shape.Equal(shape) || g.Type(s).Shape.NumElements() != 1 || len(g.Type(s).Shape) > len(shape) {
			return nil
		}
		if f := g.Nodes[s]; f.Op == "full" {
			k := f.Attrs.Float("value", 0)
			if op == "div" {
				k = 1 / k
			}
			m.attrs["scale"] = k
		} else {
			m.attrs["scale_by"] = op
			scale = s
		}
		x = a
	}
	scores := take(x)
	if scores == nil || (scores.Op != "matmul" && scores.Op != "batch_matmul") || scores.Attrs.Bool("transpose_a", false) {
		return nil
	}
	k := scores.Inputs[1]
	if !scores.Attrs.Bool("transpose_b", false) {
		t := g.Nodes[k]
		if t.Op != "transpose" || !swapsLastTwo(t.Attrs.Ints("perm"), len(t.Type.Shape)) {
			return nil
		}
		if private(k) {
			m.absorbed = append(m.absorbed, k)
		}
		k = t.Inputs[0]
	}
	m.inputs = []core.Value{scores.Inputs[0], k, mm.Inputs[1]}
	if mask >= 0 {
		m.inputs = append(m.inputs, mask)
		m.attrs["mask"] = true
	}
	if fillIn >= 0 {
		m.inputs = append(m.inputs, fillIn)
	}
	if scale >= 0 {
		m.inputs = append(m.inputs, scale)
	}
	return m
}

// scoresLike reports whether v is a product or a scaled product (the side of an add
// that holds the scores rather than the mask).
func scoresLike(g *core.Graph, v core.Value) bool {
	switch g.Nodes[v].Op {
	case "matmul", "batch_matmul", "mul", "div":
		return true
	}
	return false
}

func lastAxis(axis, rank int) bool { return axis == rank-1 || axis == -1 }

// swapsLastTwo reports whether perm exchanges the last two of rank axes only.
func swapsLastTwo(perm []int, rank int) bool {
	if len(perm) == 0 {
		return rank == 2
	}
	if len(perm) != rank || rank < 2 {
		return false
	}
	for i, p := range perm {
		if p < 0 {
			p += rank
		}
		want := i
		switch i {
		case rank - 2:
			want = rank - 1
		case rank - 1:
			want = rank - 2
		}
		if p != want {
			return false
		}
	}
	return true
}

// attentionRuns reports whether the fused kernel takes m on chip: the fused op's type
// is the chain's, the sequences are not empty, a tile fits and the device has every
// instruction.
func attentionRuns(chip *device.Chip, g *core.Graph, m *attentionMatch, want core.TensorType) bool {
	types := make([]core.TensorType, len(m.inputs))
	tensors := make([]GMTensor, len(m.inputs)+1)
	op := &TileOp{Op: "flash_attention", Kind: TileAttention, Attrs: m.attrs, Output: len(m.inputs)}
	for i, x := range m.inputs {
		types[i] = g.Type(x)
		tensors[i] = GMTensor{Type: types[i]}
		op.Inputs = append(op.Inputs, i)
	}
	got, _, err := core.InferOp("flash_attention", types, m.attrs)
	if err != nil || !got.Equal(want) || got.Shape.NumElements() == 0 || types[1].Shape[len(types[1].Shape)-2] == 0 {
		return false
	}
	tensors[len(m.inputs)] = GMTensor{Type: got}
	if _, missing := lowerings["flash_attention"].unsupported("flash_attention"); missing {
		return false
	}
	_, _, terr := attentionTile(chip, op, tensors)
	return terr == nil
}
