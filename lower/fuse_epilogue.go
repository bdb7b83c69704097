package lower

import (
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// Matmul epilogues: a 2-D matmul whose one consumer is elementwise over the product's
// shape (a bias add, an activation, a residual add, a cast, or a fused chain of them)
// runs as one mixed kernel. The cube core pushes each accumulator tile through a queue
// to a vector core of the same AI core, which pops it (rounded to the matmul's dtype,
// as the fixpipe store would), runs the epilogue with the other operands loaded from
// GM and stores the result: the product never makes a round trip through a GM tensor.
// The pair becomes a core fused_matmul op whose body is the epilogue.

// runFuseEpilogue rewrites every such matmul and consumer into a fused_matmul.
func runFuseEpilogue(c *compilation) error {
	return fuseEpilogues(c, epilogueFusion{
		producer: "matmul",
		fits:     epilogueFits,
		build: func(mn *core.Node, body string) (string, core.Attrs) {
			attrs := core.TileAttrs(mn.Attrs) // the matmul's tile, when given, is the fused kernel's
			if attrs == nil {
				attrs = core.Attrs{}
			}
			attrs["transpose_a"], attrs["transpose_b"], attrs["body"] = mn.Attrs.Bool("transpose_a", false), mn.Attrs.Bool("transpose_b", false), body
			return "fused_matmul", attrs
		},
	})
}

// epilogueFusion is what fuseEpilogues needs of one kind of producer.
type epilogueFusion struct {
	producer string // the op whose one elementwise reader becomes its epilogue
	// first, when not nil, gives the step the epilogue applies to the product before
	// the reader's (a convolution's own relu), or nil for none.
	first func(n *core.Node) func(*core.Builder, core.Value) (core.Value, error)
	// fits reports whether producer m's epilogue (reader u as body with extras) runs
	// on the vector cores.
	fits func(c *compilation, g *core.Graph, m, u core.Value, body string, extras []core.Value) bool
	// build names the fused op and its attributes, from the producer and the body; its
	// inputs are the producer's followed by the extras.
	build func(n *core.Node, body string) (string, core.Attrs)
}

// fuseEpilogues rewrites every f.producer node read by exactly one elementwise node
// of its shape (not a graph output) into one fused op that computes both: the product
// goes from the cube to the vector cores through the AI core's queues, never through
// a GM tensor.
func fuseEpilogues(c *compilation, f epilogueFusion) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	type pair struct {
		producer core.Value
		body     string
		extras   []core.Value
	}
	plan := map[core.Value]pair{} // reader -> its producer and epilogue
	folded := map[core.Value]bool{}
	for i, n := range g.Nodes {
		m := core.Value(i)
		if n.Op != f.producer || isOut[m] || len(users[i]) != 1 {
			continue
		}
		u := users[i][0]
		un := g.Nodes[u]
		if _, taken := plan[u]; taken { // the sum of two products: one takes the epilogue, the other is its operand
			continue
		}
		if !(fusable(un) || un.Op == "fused") || !g.Type(u).Shape.Equal(n.Type.Shape) {
			continue
		}
		var first func(*core.Builder, core.Value) (core.Value, error)
		if f.first != nil {
			first = f.first(n)
		}
		body, extras, err := epilogueBody(g, m, u, first)
		if err != nil {
			return err
		}
		if !f.fits(c, g, m, u, body, extras) {
			continue
		}
		plan[u] = pair{producer: m, body: body, extras: extras}
		folded[m] = true
	}
	if len(plan) == 0 {
		return nil
	}
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, _ []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if folded[v] {
			return -1, true, nil // built inside its reader's fused op
		}
		p, ok := plan[v]
		if !ok {
			return -1, false, nil
		}
		pn := g.Nodes[p.producer]
		var args []core.Value
		for _, x := range append(append([]core.Value(nil), pn.Inputs...), p.extras...) {
			args = append(args, val(x))
		}
		op, attrs := f.build(pn, p.body)
		r, err := b.Op(op, args, attrs, n.Loc)
		return r, true, err
	})
	if err != nil {
		return err
	}
	c.graph = ng
	return nil
}

// epilogueBody is consumer u of producer m (a matmul, a convolution) as a body graph
// whose param x0 is the product and whose other params are u's other inputs (extras),
// in order. With first, the body reads first(x0) where u reads m (first adds the steps
// it needs to the body's builder: a convolution's relu); nil reads x0 itself.
func epilogueBody(g *core.Graph, m, u core.Value, first func(*core.Builder, core.Value) (core.Value, error)) (string, []core.Value, error) {
	body := core.NewBuilder("epilogue")
	prod := body.Param("x0", g.Type(m))
	if first != nil {
		var err error
		if prod, err = first(body, prod); err != nil {
			return "", nil, err
		}
	}
	params := map[core.Value]core.Value{m: prod}
	var extras []core.Value
	param := func(x core.Value) core.Value {
		if p, ok := params[x]; ok {
			return p
		}
		params[x] = body.Param(fmt.Sprintf("x%d", len(extras)+1), g.Type(x))
		extras = append(extras, x)
		return params[x]
	}
	un := g.Nodes[u]
	var out core.Value
	if un.Op == "fused" { // copy its body, its params bound to u's inputs
		inner, err := core.FusedBody(un.Attrs)
		if err != nil {
			return "", nil, err
		}
		vals := make([]core.Value, len(inner.Nodes))
		for i, p := range inner.Params {
			vals[p] = param(un.Inputs[i])
		}
		for i, n := range inner.Nodes {
			if n.Op == core.OpParam {
				continue
			}
			args := make([]core.Value, len(n.Inputs))
			for j, x := range n.Inputs {
				args[j] = vals[x]
			}
			if vals[i], err = body.Op(n.Op, args, n.Attrs, core.Location{}); err != nil {
				return "", nil, err
			}
		}
		out = vals[inner.Outputs[0]]
	} else {
		args := make([]core.Value, len(un.Inputs))
		for j, x := range un.Inputs {
			args[j] = param(x)
		}
		var err error
		if out, err = body.Op(un.Op, args, un.Attrs, core.Location{}); err != nil {
			return "", nil, err
		}
	}
	body.Output(out)
	return core.Format(body.Graph()), extras, nil
}

// epilogueFits reports whether matmul m's epilogue fits a vector core's UB for some
// output tile the matmul tiling allows.
func epilogueFits(c *compilation, g *core.Graph, m, u core.Value, body string, extras []core.Value) bool {
	ins := []dtype.DType{g.Type(m).DType}
	for _, x := range extras {
		ins = append(ins, g.Type(x).DType)
	}
	a, b, s := g.Type(g.Nodes[m].Inputs[0]), g.Type(g.Nodes[m].Inputs[1]), g.Type(m).Shape
	k := a.Shape[1]
	if g.Nodes[m].Attrs.Bool("transpose_a", false) {
		k = a.Shape[0]
	}
	// Fusion is decided on the tile pass's (fixed) tiling; the tile search cuts each
	// tiling it weighs for the epilogue as fitEpilogue does.
	p := matmulProblem{dt: a.DType, out: g.Type(u).DType, batch: 1, m: s[0], n: s[1], k: k,
		aMatrices: 1, bMatrix: b.Shape[:len(b.Shape)-2].NumElements(), wholeK: true}
	t, _, err := chooseMatmulTiling(c.chip, p, nil)
	if err != nil {
		return false
	}
	_, _, ok := epilogueTile(c.chip, core.Attrs{"body": body}, ins, g.Type(u).DType, t.tm, t.tn)
	return ok
}

// epilogueTile shrinks a tm x tn output tile until the part of it a vector core runs
// the epilogue on (see epilogueParts) fits its UB. Bodies with packed masks need tn to
// stay a multiple of their column alignment (the popped tile has the accumulator's
// shape).
func epilogueTile(chip *device.Chip, attrs core.Attrs, ins []dtype.DType, out dtype.DType, tm, tn int) (int, int, bool) {
	perElem, err := epilogueBytes(attrs, ins, out)
	if err != nil {
		return 0, 0, false
	}
	colAlign, _ := fusedShape(attrs)
	step := max(cubeAlign, colAlign)
	if tn%step != 0 {
		return 0, 0, false
	}
	vectors := chip.VectorCores / chip.CubeCores
	for tm/epilogueParts(tm, vectors)*tn*perElem > chip.Capacity(isa.Vec) {
		switch {
		case tn >= tm && tn > step:
			tn = roundUp(tn/2, step)
		case tm > cubeAlign:
			tm = roundUp(tm/2, cubeAlign)
		default:
			return 0, 0, false
		}
	}
	return tm, tn, true
}

// fitEpilogue cuts a fused_matmul's tile to what its epilogue allows (see
// epilogueTile) and says so in the reason.
func fitEpilogue(chip *device.Chip, op *TileOp, tensors []GMTensor) (string, error) {
	body, err := core.FusedBody(op.Attrs)
	if err != nil {
		return "", err
	}
	ins := []dtype.DType{body.Type(body.Params[0]).DType}
	for _, t := range op.Inputs[2:] {
		ins = append(ins, tensors[t].Type.DType)
	}
	tm, tn, ok := epilogueTile(chip, op.Attrs, ins, tensors[op.Output].Type.DType, op.Tile[0], op.Tile[1])
	if !ok {
		return "", fmt.Errorf("the epilogue of this matmul does not fit a vector core's UB with output tiles of %dx%d or smaller", op.Tile[0], op.Tile[1])
	}
	reason := op.Reason
	if tm != op.Tile[0] || tn != op.Tile[1] {
		reason += fmt.Sprintf("; output tile cut to %dx%d so the epilogue's part of it fits a vector core's UB", tm, tn)
	}
	op.Tile[0], op.Tile[1] = tm, tn
	return reason, nil
}

func init() {
	lowerings["fused_matmul"] = lowering{kind: TileMatmulEpilogue, core: isa.Cube}
	groupEmitters[TileMatmulEpilogue] = emitMatmulEpilogue
}
