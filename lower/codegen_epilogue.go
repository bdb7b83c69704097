package lower

import (
	"fmt"

	"pypto/core"
	"pypto/isa"
)

// emitMatmulEpilogue generates one block of a fused_matmul: the cube program computes
// the block's output tiles as a plain matmul does and pushes each accumulator to
// vector core seq % V through queue seq % V; each vector program pops its tiles, runs
// the epilogue and stores them.
func emitMatmulEpilogue(g *groupEmitter, tg *TileGraph, op *TileOp, tiles []int) {
	nv := len(g.vec)
	emitMatmul(g.cube, tg, op, tiles, func(acc int, t outTile) {
		g.cube.emit(isa.TPUSH, isa.ImmOp(float64(t.seq%nv)), isa.TileOp(acc))
	})
	for v, e := range g.vec {
		emitEpilogueVector(e, tg, op, tiles, v, nv)
	}
}

// emitEpilogueVector is vector core v's part of a fused_matmul block: the tiles whose
// position in the block is v modulo nv. The product arrives rounded to the matmul's
// dtype (TPOP converts as the fixpipe store does); the other operands of the epilogue
// are loaded through broadcasting views of the output's iteration space.
func emitEpilogueVector(e *emitter, tg *TileGraph, op *TileOp, tiles []int, v, nv int) {
	body, err := core.FusedBody(op.Attrs)
	if err != nil {
		panic(fmt.Sprintf("fused_matmul with a bad body reached code generation: %v", err)) // verified before
	}
	out := tg.Tensors[op.Output].Type
	space := out.Shape
	tm, tn := op.Tile[0], op.Tile[1]
	prod := e.pingPong("prod", isa.Vec, body.Type(body.Params[0]).DType, tm, tn)
	type operand struct {
		view   flatView
		loaded [2]int
	}
	extras := make([]operand, len(op.Inputs)-2)
	for i, t := range op.Inputs[2:] {
		typ := tg.Tensors[t].Type
		extras[i].view = newFlatView(e.params[t], broadcastMap(typ.Shape, space), space)
		extras[i].loaded = e.pingPong(fmt.Sprintf("in%d", i+2), isa.Vec, typ.DType, tm, tn)
	}
	res := e.pingPong("out", isa.Vec, out.DType, tm, tn)
	ov := newFlatView(e.params[op.Output], reshapeMap(space), space)
	vb := &vecBody{e: e, attrs: op.Attrs, tr: tm, tc: tn, scratch: map[string]int{}, space: space}
	q := isa.ImmOp(float64(v))
	step := 0
	for seq, t := range tiles {
		if seq%nv != v {
			continue
		}
		s := step % 2
		step++
		ot := matmulOutTile(op, t, seq)
		e.emit(isa.TPOP, isa.TileOp(prod[s]), q)
		srcs := []int{prod[s]}
		for i := range extras {
			x := &extras[i]
			srcs = append(srcs, loadWindow(e, s, x.loaded[s], x.view.window(ot.batch, ot.i0, ot.j0, ot.rows, ot.cols)))
		}
		vb.o, vb.r0, vb.c0, vb.vr, vb.vc = ot.batch, ot.i0, ot.j0, ot.rows, ot.cols
		fusedBody(vb, res[s], srcs)
		e.emit(isa.TFREE, q)
		e.emit(isa.TSTORE, isa.GMOp(ov.window(ot.batch, ot.i0, ot.j0, ot.rows, ot.cols)), isa.TileOp(res[s]))
	}
}
