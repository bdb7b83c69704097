package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// epilogueParts is the number of row parts each output tile of a fused_matmul is cut
// into: one per vector core when the tile's rows split into whole fractals, so that
// the AI core's vector cores share every tile; else one, and whole tiles alternate
// between them.
func epilogueParts(tm, vectors int) int {
	if vectors > 1 && tm%(cubeAlign*vectors) == 0 {
		return vectors
	}
	return 1
}

// emitMatmulEpilogue generates one block of a fused_matmul: the cube program computes
// the block's output tiles as a plain matmul does, in row parts (epilogueParts), and
// pushes part p of the tile at position seq to queue (seq*parts + p) mod V; vector
// core v pops queue v, runs the epilogue on the part and stores it.
func emitMatmulEpilogue(g *groupEmitter, tg *TileGraph, op *TileOp, tiles []int) {
	nv := len(g.vec)
	parts := epilogueParts(op.Tile[0], nv)
	emitMatmul(g.cube, tg, op, tiles, parts, func(acc []int, t outTile) {
		for p, a := range acc {
			g.cube.emit(isa.TPUSH, isa.ImmOp(float64((t.seq*parts+p)%nv)), isa.TileOp(a))
		}
	})
	for v, e := range g.vec {
		emitEpilogueVector(e, tg, op, tiles, parts, v, nv)
	}
}

// emitEpilogueVector is vector core v's part of a fused_matmul block. The product
// arrives rounded to the matmul's dtype (TPOP converts as the fixpipe store does); the
// other operands of the epilogue are loaded through broadcasting views of the
// output's iteration space. Tiles are single-buffered: the cube spends far longer on a
// tile than the vector core on its epilogue.
func emitEpilogueVector(e *emitter, tg *TileGraph, op *TileOp, tiles []int, parts, v, nv int) {
	pm, tn := op.Tile[0]/parts, op.Tile[1]
	ep := declareEpilogue(e, tg, op, pm, tn)
	prod, extras, res, ov := ep.prod, ep.extras, ep.res, ep.out
	vb := &vecBody{e: e, attrs: op.Attrs, tr: pm, tc: tn, space: ep.space}
	q := isa.ImmOp(float64(v))
	for seq, t := range tiles {
		ot := matmulOutTile(op, t, seq)
		for p := range parts {
			if (seq*parts+p)%nv != v {
				continue
			}
			r0, rows := ot.i0+p*pm, min(pm, ot.rows-p*pm)
			if rows <= 0 { // the part lies below the matrix: nothing to store
				e.emit(isa.TPOP, isa.TileOp(prod), q)
				e.emit(isa.TFREE, q)
				continue
			}
			// The other operands first: their loads need no product, so they run
			// while the cube computes it.
			srcs := []int{prod}
			for i := range extras {
				x := &extras[i]
				srcs = append(srcs, loadWindow(e, 0, x.loaded, x.view.window(ot.batch, r0, ot.j0, rows, ot.cols)))
			}
			e.emit(isa.TPOP, isa.TileOp(prod), q)
			vb.o, vb.r0, vb.c0, vb.vr, vb.vc = ot.batch, r0, ot.j0, rows, ot.cols
			fusedBody(vb, res, srcs)
			e.emit(isa.TFREE, q)
			e.emit(isa.TSTORE, isa.GMOp(ov.window(ot.batch, r0, ot.j0, rows, ot.cols)), isa.TileOp(res))
		}
	}
}

// epilogueTiles are the tiles and views of a fused_matmul block's vector program: the
// popped product, each further operand's view and tile, the result and its view.
type epilogueTiles struct {
	prod, res int
	extras    []epilogueOperand
	out       flatView
	space     core.Shape // the output's shape, the epilogue's iteration space
}

// epilogueOperand is an operand of the epilogue beyond the product: read through a
// view broadcasting it to the output, loaded into its tile.
type epilogueOperand struct {
	view   flatView
	loaded int
}

// declareEpilogue declares the tiles of a fused_matmul's vector program whose parts
// are pm x tn.
func declareEpilogue(e *emitter, tg *TileGraph, op *TileOp, pm, tn int) epilogueTiles {
	body, err := core.FusedBody(op.Attrs)
	if err != nil {
		panic(fmt.Sprintf("fused_matmul with a bad body reached code generation: %v", err)) // verified before
	}
	out := tg.Tensors[op.Output].Type
	ep := epilogueTiles{space: out.Shape}
	ep.prod = e.tile("prod", isa.Vec, body.Type(body.Params[0]).DType, pm, tn)
	ep.extras = make([]epilogueOperand, len(op.Inputs)-2)
	for i, t := range op.Inputs[2:] {
		typ := tg.Tensors[t].Type
		ep.extras[i].view = newFlatView(e.params[t], broadcastMap(typ.Shape, ep.space), ep.space)
		ep.extras[i].loaded = e.tile(fmt.Sprintf("in%d", i+2), isa.Vec, typ.DType, pm, tn)
	}
	ep.res = e.tile("out", isa.Vec, out.DType, pm, tn)
	ep.out = newFlatView(e.params[op.Output], reshapeMap(ep.space), ep.space)
	return ep
}

// epilogueBytes is the UB an epilogue needs per element of its tile: the popped
// product, the loaded operands, the result, the slots its intermediates and converted
// arguments share (bodyPlan), and the scratch tiles of every kind of step (extraLive
// counts them in pairs of 4-byte tiles; see fusedShape for why kinds add up).
func epilogueBytes(attrs core.Attrs, ins []dtype.DType, out dtype.DType) (int, error) {
	plan, body, err := planBody(attrs)
	if err != nil {
		return 0, err
	}
	n := out.Size() + plan.slotBytes()
	for _, d := range ins {
		n += d.Size()
	}
	scratchOf := map[string]int{}
	for i, nd := range body.Nodes {
		if nd.Op == core.OpParam || plan.constImm[core.Value(i)] {
			continue
		}
		if l := lowerings[nd.Op]; l.extraLive != nil {
			scratchOf[nd.Op] = max(scratchOf[nd.Op], l.extraLive(nd.Attrs))
		}
	}
	for _, pairs := range scratchOf {
		n += 2 * 4 * pairs
	}
	return n, nil
}
