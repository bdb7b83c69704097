package lower

import (
	"fmt"
	"strconv"
	"strings"

	"pypto/core"
)

// The text form of a Tile Graph:
//
//	tilegraph mm {
//	  tensor t0: f16[17,33] input %0
//	  tensor t1: f16[33,65] input %1
//	  tensor t2: f16[17,65] temp %2
//	  params (t0, t1)
//	  op0: t2 = matmul(t0, t1) {transpose_a=false, transpose_b=false}
//	    kind=matmul core=cube problem=[17,65,33] tile=[32,80,48] grid=[1,1]
//	    reason="largest of base [128,256,64] halved until ..."
//	    dynamic rows=t3[0]
//	    weight_prep
//	  return (t2)
//	}
//
// Tensors come first, numbered in order; %N after the role is the Tensor Graph value
// the tensor holds. The params line binds the graph's inputs, in order, before the ops
// that read them. Each op names its output tensor, the core op with its inputs and
// attributes (as core prints them), then its tiling: kind, core kind, problem size,
// tile shape and grid. The optional reason says why the tiling was chosen; the optional
// dynamic line, that the op computes only the rows of its output that element i of
// tensor tN counts when the program runs (TileOp.Dynamic), and with k=tN[j] that it
// contracts only the first K positions element j counts; weight_prep, that the op
// computes from weights alone (an input tensor's "weight" after its value) and runs
// once (prepare_weights.go). An op's
// Node is the value of its output tensor and is not written separately; Locations are
// not part of the text, as in the Tensor Graph text.

// Format prints the tile graph in the text form ParseTileGraph reads.
func (g *TileGraph) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tilegraph %s {\n", quoteName(g.Name))
	for i, t := range g.Tensors {
		fmt.Fprintf(&b, "  tensor t%d: %s %s %%%d", i, t.Type, t.Role, t.Value)
		if t.Weight {
			b.WriteString(" weight")
		}
		if len(t.Pieces) > 0 {
			fmt.Fprintf(&b, " pieces %s", tensorList(t.Pieces))
		} else if t.Alias != 0 {
			fmt.Fprintf(&b, " alias t%d", t.Alias-1)
		}
		if t.View != nil {
			fmt.Fprintf(&b, " view offset=%d strides=%s", t.View.offset, intList(t.View.strides))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  params %s\n", tensorList(g.Params))
	for i, op := range g.Ops {
		if op == nil {
			fmt.Fprintf(&b, "  op%d: <nil op>\n", i)
			continue
		}
		fmt.Fprintf(&b, "  op%d: t%d = %s%s", i, op.Output, op.Op, tensorList(op.Inputs))
		if s := op.Attrs.String(); s != "" {
			b.WriteString(" " + s)
		}
		fmt.Fprintf(&b, "\n    kind=%s core=%s problem=%s tile=%s grid=%s\n",
			op.Kind, op.Core, intList(op.Problem), intList(op.Tile), intList(op.Grid))
		if op.Reason != "" {
			fmt.Fprintf(&b, "    reason=%s\n", strconv.Quote(op.Reason))
		}
		if d := op.Dynamic; d != nil {
			fmt.Fprintf(&b, "    dynamic rows=t%d[%d]", d.Sizes, d.Index)
			if d.CutK {
				fmt.Fprintf(&b, " k=t%d[%d]", d.Sizes, d.KIndex)
			}
			b.WriteString("\n")
		}
		if op.WeightPrep {
			b.WriteString("    weight_prep\n")
		}
	}
	fmt.Fprintf(&b, "  return %s\n}\n", tensorList(g.Outputs))
	return b.String()
}

// intList prints [1,2,3], the spelling of shapes.
func intList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// ParseTileGraph reads a tile graph in the text form Format prints. It checks
// everything TileGraph.Verify checks, reporting each problem where it is written, so a
// parsed graph always verifies. Errors are *core.Error of kind ValueError whose message
// starts with "line:col:".
func ParseTileGraph(src string) (*TileGraph, error) {
	return parseText(src, func(p *textParser) *TileGraph {
		g := p.tileGraph()
		p.expectEOF("tile graph")
		return g
	})
}

// tileParser tracks which tensors have a producer while the ops are read.
type tileParser struct {
	*textParser
	g        *TileGraph
	produced []bool
}

// tileGraph := 'tilegraph' name '{' {tensor} params {op} return '}'
func (p *textParser) tileGraph() *TileGraph {
	p.expectWord("tilegraph", "")
	tp := &tileParser{textParser: p, g: &TileGraph{Name: p.name("graph name")}}
	p.expectPunct("{", " after the graph name")
	for isWord(p.peek(), "tensor") {
		tp.tensor()
	}
	if t := p.peek(); !isWord(t, "params") {
		p.fail(t, "expected 'tensor t%d' or 'params', found %s", len(tp.g.Tensors), t)
	}
	p.next()
	tp.produced = make([]bool, len(tp.g.Tensors))
	for _, t := range tp.tensorRefs("param") {
		if tp.g.Tensors[t.id].Role != RoleInput {
			p.fail(t.tok, "expected an input tensor as param, found t%d, a %s tensor", t.id, tp.g.Tensors[t.id].Role)
		}
		tp.g.Params = append(tp.g.Params, t.id)
		tp.produced[t.id] = true
	}
	for {
		t := p.peek()
		if isWord(t, "return") {
			p.next()
			break
		}
		if t.Kind != tokIdent || !strings.HasPrefix(t.Text, "op") {
			p.fail(t, "expected 'op%d:' or 'return', found %s", len(tp.g.Ops), t)
		}
		tp.op()
	}
	for _, t := range tp.tensorRefs("output") {
		if !tp.produced[root(tp.g.Tensors, t.id)] {
			p.fail(t.tok, "output t%d is never produced", t.id)
		}
		tp.g.Outputs = append(tp.g.Outputs, t.id)
	}
	end := p.expectPunct("}", " closing the tile graph")
	if err := tp.g.Verify(); err != nil { // the checks above should have caught it
		p.fail(end, "tile graph does not verify: %v", err)
	}
	return tp.g
}

// tensor := 'tensor' tN ':' type role '%' value ['weight'] ['alias' tM ['view' 'offset=' int 'strides=' ints] | 'pieces' '(' tM {',' tM} ')']
func (tp *tileParser) tensor() {
	tp.next()
	tp.numberedAs("t", len(tp.g.Tensors), "tensor")
	tp.expectPunct(":", " after the tensor name")
	typ := tp.tensorType()
	role := tp.role()
	tp.expectPunct("%", " before the Tensor Graph value the tensor holds")
	v := tp.integer("Tensor Graph value")
	t := GMTensor{Value: core.Value(v), Type: typ, Role: role}
	if at := tp.peek(); isWord(at, "weight") {
		tp.next()
		if role != RoleInput {
			tp.fail(at, "t%d is a %s tensor; only inputs are weights", len(tp.g.Tensors), role)
		}
		t.Weight = true
	}
	if isWord(tp.peek(), "pieces") {
		at := tp.next()
		for _, r := range tp.tensorRefs("packed inputs") {
			t.Pieces = append(t.Pieces, r.id)
		}
		if len(t.Pieces) > 0 {
			t.Alias = t.Pieces[0] + 1
		}
		tp.g.Tensors = append(tp.g.Tensors, t)
		if !verifyPieces(tp.g, len(tp.g.Tensors)-1) {
			tp.fail(at, "t%d cannot pack %s: a packed tensor is a temp of two or more earlier, distinct inputs of its dtype adding up to its bytes, each but the last whole GM granules", len(tp.g.Tensors)-1, tensorList(t.Pieces))
		}
		return
	}
	if isWord(tp.peek(), "alias") {
		tp.next()
		ref := tp.tensorRef("aliased tensor")
		src := tp.g.Tensors[ref.id]
		view := isWord(tp.peek(), "view")
		if src.Alias != 0 || (!view && src.Type.Bytes() != typ.Bytes()) || role == RoleInput {
			tp.fail(ref.tok, "t%d cannot alias t%d: an alias views an earlier tensor of its size that is no alias, and is not an input", len(tp.g.Tensors), ref.id)
		}
		t.Alias = ref.id + 1
		if view {
			tp.next()
			tp.key("offset", " after 'view'")
			m := affineMap{offset: tp.integer("view offset")}
			tp.key("strides", " after the view offset")
			at := tp.peek()
			if m.strides = tp.intList("view strides"); len(m.strides) != len(typ.Shape) {
				tp.fail(at, "expected %d view strides, one per axis of %s, found %d", len(typ.Shape), typ, len(m.strides))
			}
			t.View = &m
		}
	}
	tp.g.Tensors = append(tp.g.Tensors, t)
}

// tensorRef is a tensor named in the text, with where it was named.
type tensorRef struct {
	id  int
	tok token
}

// tensorRef reads tN naming a declared tensor.
func (tp *tileParser) tensorRef(what string) tensorRef {
	n, t := tp.numbered("t", what)
	if n >= len(tp.g.Tensors) {
		tp.fail(t, "expected %s, found t%d, which is not declared (the graph has %d tensors)", what, n, len(tp.g.Tensors))
	}
	return tensorRef{n, t}
}

// tensorRefs reads '(' [tN {',' tN}] ')'.
func (tp *tileParser) tensorRefs(what string) []tensorRef {
	tp.expectPunct("(", " opening the "+what+" list")
	var refs []tensorRef
	if isPunct(tp.peek(), ")") {
		tp.next()
		return refs
	}
	for {
		refs = append(refs, tp.tensorRef(what))
		t := tp.next()
		if isPunct(t, ")") {
			return refs
		}
		if !isPunct(t, ",") {
			tp.fail(t, "expected ',' or ')' in the %s list, found %s", what, t)
		}
	}
}

// op := opN ':' tN '=' name '(' [tN {',' tN}] ')' [attrs] tiling ['reason' '=' string]
//
//	['dynamic' 'rows' '=' tN '[' int ']'] ['weight_prep']
func (tp *tileParser) op() {
	i := len(tp.g.Ops)
	tp.numberedAs("op", i, "op")
	tp.expectPunct(":", " after the op name")
	out := tp.tensorRef("output tensor")
	tp.expectPunct("=", " after the output tensor")
	nameTok := tp.next()
	if nameTok.Kind != tokIdent {
		tp.fail(nameTok, "expected op name, found %s", nameTok)
	}
	op := &TileOp{Op: nameTok.Text, Output: out.id, Node: tp.g.Tensors[out.id].Value}
	for _, in := range tp.tensorRefs("input") {
		if !tp.produced[root(tp.g.Tensors, in.id)] {
			tp.fail(in.tok, "op%d reads t%d before it is produced", i, in.id)
		}
		op.Inputs = append(op.Inputs, in.id)
	}
	if tp.produced[out.id] && !(len(tp.g.Ops) > 0 && continuesPart(tp.g.Ops[len(tp.g.Ops)-1], op)) {
		tp.fail(out.tok, "op%d writes t%d, which already has a producer", i, out.id)
	}
	tp.produced[out.id] = true
	if isPunct(tp.peek(), "{") {
		op.Attrs = tp.attrs()
	}
	tp.tiling(op)
	if isWord(tp.peek(), "reason") {
		tp.key("reason", "")
		op.Reason = tp.name("reason")
	}
	if at := tp.peek(); isWord(at, "dynamic") {
		tp.next()
		tp.key("rows", " after 'dynamic'")
		sizes := tp.tensorRef("sizes tensor")
		idx := tp.intList("size index")
		if len(idx) != 1 {
			tp.fail(at, "expected one index of the sizes tensor, found %d", len(idx))
		}
		op.Dynamic = &DynamicRows{Sizes: sizes.id, Index: idx[0]}
		if isWord(tp.peek(), "k") {
			tp.key("k", " after the dynamic rows")
			at := tp.peek()
			if ks := tp.tensorRef("sizes tensor"); ks.id != sizes.id {
				tp.fail(at, "the dynamic K must be read from the rows' sizes tensor t%d, not t%d", sizes.id, ks.id)
			}
			kIdx := tp.intList("size index")
			if len(kIdx) != 1 {
				tp.fail(at, "expected one index of the sizes tensor, found %d", len(kIdx))
			}
			op.Dynamic.CutK, op.Dynamic.KIndex = true, kIdx[0]
		}
		if msg := checkDynamicRows(tp.g.Tensors, op); msg != "" {
			tp.fail(at, "%s", msg)
		}
	}
	if isWord(tp.peek(), "weight_prep") {
		tp.next()
		op.WeightPrep = true
	}
	tp.g.Ops = append(tp.g.Ops, op)
}

// tilingDims names the numbers of each tiling list, per tile kind. Their count is
// checked while parsing because the verifier indexes the lists by it.
var tilingDims = map[TileKind][3]string{
	TileMatmul:         {"[batch,m,n,k]", "[tm,tn,tk,stepk,kc]", "[batch,m/tm,n/tn,k/kc]"},
	TileMatmulEpilogue: {"[batch,m,n,k]", "[tm,tn,tk,stepk,kc]", "[batch,m/tm,n/tn,k/kc]"},
	TileElementwise:    {"[outer,rows,cols]", "[tr,tc]", "[outer,rows/tr,cols/tc]"},
	TileReduce:         {"[outer,r,inner]", "[tr,tc]", "[outer/tr,1] or [outer,inner/tc]"},
	TileScan:           {"[outer,a,inner]", "[1,tc]", "[outer/tc,1] or [outer,inner/tc]"},
	TileSort:           {"[rows,n,l]", "[tr,l]", "[rows/tr,1]"},
	TileRows:           {"[rows,C]", "[tr,tc,slots]", "[rows/tr,1]"},
	TileAttention:      {"[batch,l,s,e,ev]", "[br,hr,bc,copies]", "[batch,l/br,1]"},
	TileKernel:         {"[blocks]", "[1]", "[blocks]"},
	TileUpdate:         {"[outer,rows,cols]", "[tr,tc]", "[outer,rows/tr,cols/tc]"},
	TileConv:           {"[n,oh,ow,o,c1,kh,kw,s,h,w,pt,pl,pr]", "[rb,tn,gs,ra,sk]", "[o/tn,n,oh/(rb*ra)]"},
	TileScatter:        {"[outer,rows,cols]", "[tr,tc,writes]", "[outer,rows/tr,cols/tc]"},
	TileConvEpilogue:   {"[n,oh,ow,o,c1,kh,kw,s,h,w,pt,pl,pr]", "[rb,tn,gs,ra,sk]", "[o/tn,n,oh/(rb*ra)]"},
}

// tilingLen is the count of numbers dims names ("[a,b] or [c,d]": the alternatives
// have the same count).
func tilingLen(dims string) int {
	first, _, _ := strings.Cut(dims, " or ")
	return strings.Count(first, ",") + 1
}

// tiling := 'kind=' kind 'core=' core 'problem=' ints 'tile=' ints 'grid=' ints
func (tp *tileParser) tiling(op *TileOp) {
	at := tp.peek()
	tp.key("kind", " after the op's inputs and attributes")
	op.Kind = tp.tileKind()
	tp.key("core", " after the tile kind")
	op.Core = tp.coreKind()
	dims := tilingDims[op.Kind]
	op.Problem = tp.tilingList("problem", dims[0], op.Kind)
	op.Tile = tp.tilingList("tile", dims[1], op.Kind)
	op.Grid = tp.tilingList("grid", dims[2], op.Kind)
	if err := verifyTiling(tp.g.Tensors, op); err != nil {
		tp.fail(at, "%v", err)
	}
}

// tilingList := key '=' '[' ints ']' with as many numbers as dims names.
func (tp *tileParser) tilingList(key, dims string, kind TileKind) []int {
	tp.key(key, "")
	at := tp.peek()
	xs := tp.intList(key)
	if n := tilingLen(dims); len(xs) != n {
		tp.fail(at, "expected %d numbers %s in the %s of a %s op, found %d", n, dims, key, kind, len(xs))
	}
	return xs
}
