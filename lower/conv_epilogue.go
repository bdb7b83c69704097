package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// Convolution epilogues: a cube convolution (conv2d_5hd) whose one reader is
// elementwise over its result (a residual add and the activation after it, a cast, or
// a fused chain of them) runs as one mixed kernel, as a matmul's epilogue does
// (fuse_epilogue.go): the cube core pushes each output tile's accumulator through a
// queue to a vector core of the same AI core, which pops it rounded to the
// convolution's dtype (as the fixpipe store would round it), runs the epilogue with
// the other operands loaded through the same windows of their GM tensors, and stores
// the result. The convolution's result never makes a round trip through GM, and the
// rounding steps are the unfused program's, so the bytes are the same.

// runFuseConvEpilogue rewrites every such conv2d_5hd and its reader into a
// fused_conv2d_5hd.
func runFuseConvEpilogue(c *compilation) error {
	if c.chip == nil {
		return nil // tiles are sized for a chip's buffers
	}
	return fuseEpilogues(c, epilogueFusion{
		producer: "conv2d_5hd",
		first: func(n *core.Node) func(*core.Builder, core.Value) (core.Value, error) {
			if !n.Attrs.Bool("relu", false) {
				return nil
			}
			return func(b *core.Builder, x core.Value) (core.Value, error) { // the fixpipe's relu, now the epilogue's first step
				return b.Op("relu", []core.Value{x}, nil, core.Location{})
			}
		},
		fits: convEpilogueFits,
		build: func(cn *core.Node, body string) (string, core.Attrs) {
			attrs := core.Attrs{}
			for k, a := range cn.Attrs {
				attrs[k] = a
			}
			attrs["relu"], attrs["bias"], attrs["body"] = false, len(cn.Inputs) == 3, body
			return "fused_conv2d_5hd", attrs
		},
	})
}

// convEpilogueFits reports whether convolution v's epilogue (reader u, as body with
// extras) can run on the vector cores: every extra operand has the convolution's
// shape (it is read through the output tile's own window), no step depends on an
// element's position (the tile's rows are pixels, not the result's last axes), and a
// tile of the kernel fits with the epilogue's part in a vector core's UB.
func convEpilogueFits(c *compilation, g *core.Graph, v, u core.Value, body string, extras []core.Value) bool {
	n := g.Nodes[v]
	for _, x := range extras {
		if !g.Type(x).Shape.Equal(n.Type.Shape) {
			return false
		}
	}
	bg, err := core.FusedBody(core.Attrs{"body": body})
	if err != nil {
		return false
	}
	for _, bn := range bg.Nodes {
		if positionalOps[bn.Op] {
			return false
		}
	}
	ins := []dtype.DType{n.Type.DType}
	for _, x := range extras {
		ins = append(ins, g.Type(x).DType)
	}
	epi, err := convEpilogueOf(core.Attrs{"body": body}, ins, g.Type(u).DType)
	if err != nil {
		return false
	}
	x := g.Type(n.Inputs[0])
	_, _, err = convTile(c.chip, conv5HDProblem(x, n.Type, n.Attrs), x.DType, epi)
	return err == nil
}

// convEpilogue is what an epilogue asks of a convolution's tile: the bytes of a vector
// core's UB per element and the column alignment of its steps (a packed mask's); zero
// for none.
type convEpilogue struct{ bytes, colAlign int }

// convEpilogueOf is the convEpilogue of the body in attrs, whose params have the
// dtypes ins, with result dtype out.
func convEpilogueOf(attrs core.Attrs, ins []dtype.DType, out dtype.DType) (convEpilogue, error) {
	n, err := epilogueBytes(attrs, ins, out)
	if err != nil {
		return convEpilogue{}, err
	}
	align, _ := fusedShape(attrs)
	return convEpilogue{bytes: n, colAlign: align}, nil
}

// convEpilogueFor is a tile op's convEpilogue: a fused_conv2d_5hd's, zero for a
// conv2d_5hd.
func convEpilogueFor(op *TileOp, tensors []GMTensor) convEpilogue {
	if op.Kind != TileConvEpilogue {
		return convEpilogue{}
	}
	body, err := core.FusedBody(op.Attrs)
	if err != nil {
		return convEpilogue{} // verified before
	}
	ins := []dtype.DType{body.Type(body.Params[0]).DType}
	for _, t := range op.Inputs[core.FusedConvOperands(op.Attrs):] {
		ins = append(ins, tensors[t].Type.DType)
	}
	epi, _ := convEpilogueOf(op.Attrs, ins, tensors[op.Output].Type.DType)
	return epi
}

// emitConvEpilogue generates one block of a fused_conv2d_5hd: the cube program
// computes the block's tiles as a conv2d_5hd does and pushes the accumulator at
// position seq (convPieces: a tile's sub-blocks in order) to queue seq mod V; vector
// core v pops queue v, runs the epilogue on it and stores it.
func emitConvEpilogue(g *groupEmitter, tg *TileGraph, op *TileOp, tiles []int) {
	nv := len(g.vec)
	emitConvCube(g.cube, tg, op, tiles, func(acc int, _ isa.GMView, seq int) {
		g.cube.emit(isa.TPUSH, isa.ImmOp(float64(seq%nv)), isa.TileOp(acc))
	})
	for v, e := range g.vec {
		emitConvEpilogueVector(e, tg, op, tiles, v, nv)
	}
}

// emitConvEpilogueVector is vector core v's part of a fused_conv2d_5hd block. The
// other operands' loads come before the pop, so they run while the cube computes the
// tile; tiles are single-buffered, as a matmul epilogue's.
func emitConvEpilogueVector(e *emitter, tg *TileGraph, op *TileOp, tiles []int, v, nv int) {
	body, err := core.FusedBody(op.Attrs)
	if err != nil {
		panic(fmt.Sprintf("fused_conv2d_5hd with a bad body reached code generation: %v", err)) // verified before
	}
	p := convProblemOf(op.Problem)
	t := convTilingOf(op.Tile)
	pix, tn := t.pix(p), t.tn
	out := tg.Tensors[op.Output].Type
	prod := e.tile("prod", isa.Vec, body.Type(body.Params[0]).DType, pix, tn)
	extraIns := op.Inputs[core.FusedConvOperands(op.Attrs):]
	extras := make([]int, len(extraIns))
	for i, t := range extraIns {
		extras[i] = e.tile(fmt.Sprintf("in%d", i+1), isa.Vec, tg.Tensors[t].Type.DType, pix, tn)
	}
	res := e.tile("out", isa.Vec, out.DType, pix, tn)
	vb := &vecBody{e: e, attrs: op.Attrs, tr: pix, tc: tn, space: out.Shape}
	q := isa.ImmOp(float64(v))
	for seq, pc := range convPieces(p, op, tiles) {
		if seq%nv != v {
			continue
		}
		b, r0, j0, vr, vc := pc.b, pc.r0, pc.j0, pc.vr, pc.vc
		srcs := []int{prod}
		for i, x := range extraIns {
			srcs = append(srcs, loadWindow(e, 0, extras[i], convOutView(p, op.Attrs, e.params[x], b, r0, j0, vr, vc)))
		}
		e.emit(isa.TPOP, isa.TileOp(prod), q)
		vb.vr, vb.vc = vr*p.ow, vc
		fusedBody(vb, res, srcs)
		e.emit(isa.TFREE, q)
		e.emit(isa.TSTORE, isa.GMOp(convOutView(p, op.Attrs, e.params[op.Output], b, r0, j0, vr, vc)), isa.TileOp(res))
	}
}
