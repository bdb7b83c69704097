package lower

import (
	"fmt"

	"pypto/isa"
)

// Matmuls whose rows are known when the program runs (TileOp.Dynamic). The program is
// one loop over the block's share of the output tiles that hold valid rows:
//
//	sld   rows, sizes[i]                 the valid rows of the output
//	row_tiles = ceil(rows / tm); tiles = row_tiles * gn
//	start = b*tiles/nb; count = (b+1)*tiles/nb - start
//	loop  j, count
//	  o = start + j: its row and column of tiles in matmulTileOrder's bands of w columns
//	  i0, j0, and the tile's valid rows min(tm, rows - i0) and columns
//	  the tile's K stages, its windows moved by registers and cut to the valid rows
//	endloop
//
// so that each block's share follows the run's size as the blocks of a program
// compiled for that size would (matmulBlocks cuts matmulTileOrder the same way, and at
// the bound both give the same tiles), and tiles past the valid rows are never run.
// The K stages of a tile are the static program's (matmulStages), so the sums are
// added in the same order and the results have the same bits. An epilogue's vector
// cores run the same loop, each taking its row part of every tile.

// dynamicInstructions are the scalar instructions of the tile loop.
var dynamicInstructions = []isa.Opcode{isa.SLD, isa.SADD, isa.SSUB, isa.SMUL, isa.SDIV, isa.SREM, isa.SMIN, isa.SMAX, isa.LOOP, isa.ENDLOOP}

// dynTile is the current tile of a dynamic tile loop, in registers.
type dynTile struct {
	l      *dynTileLoop
	i0, j0 int        // its first row and column
	vr, vc isa.RegRef // its valid rows and columns (vc zero when every tile has tn)
}

// dynTileLoop is block b's share (of nb blocks) of the output tiles of a dynamic
// matmul that hold valid rows: their count and the first, in registers.
type dynTileLoop struct {
	e           *emitter
	op          *TileOp
	rows, count int // registers: the valid rows, the block's tiles
	start, band int // registers: the block's first tile, tiles per band of w columns
	w           int
	named       map[string]int
	d           dynTile
	o, mi, ni   int
}

// openDynamicTiles emits the scalar code that counts block b's tiles (of nb blocks).
func openDynamicTiles(e *emitter, op *TileOp, b, nb int) *dynTileLoop {
	tm, gn := op.Tile[0], op.Grid[2]
	l := &dynTileLoop{e: e, op: op, w: matmulBandWidth(op, nb), named: map[string]int{}}
	r := l.reg
	l.rows, l.count, l.start, l.band = r("rows"), r("count"), r("start"), r("band")
	rowTiles, tiles, end := r("row_tiles"), r("tiles"), r("end")
	reg, imm := isa.RegOp, func(v int) isa.Operand { return isa.ImmOp(float64(v)) }
	e.emit(isa.SLD, reg(l.rows), isa.GMOp(isa.GMView{Param: e.params[op.Dynamic.Sizes], Offset: op.Dynamic.Index, Rows: 1, Cols: 1, RowStride: 1, ColStride: 1}))
	e.emit(isa.SADD, reg(rowTiles), reg(l.rows), imm(tm-1))
	e.emit(isa.SDIV, reg(rowTiles), reg(rowTiles), imm(tm))
	e.emit(isa.SMUL, reg(tiles), reg(rowTiles), imm(gn))
	e.emit(isa.SMUL, reg(l.start), reg(tiles), imm(b))
	e.emit(isa.SDIV, reg(l.start), reg(l.start), imm(nb))
	e.emit(isa.SMUL, reg(end), reg(tiles), imm(b+1))
	e.emit(isa.SDIV, reg(end), reg(end), imm(nb))
	e.emit(isa.SSUB, reg(l.count), reg(end), reg(l.start))
	e.emit(isa.SMUL, reg(l.band), reg(rowTiles), imm(l.w))
	l.o, l.mi, l.ni = r("o"), r("mi"), r("ni")
	l.d = dynTile{l: l, i0: r("i0"), j0: r("j0"), vr: isa.UseReg(r("vr"))}
	if op.Problem[2]%op.Tile[1] != 0 {
		l.d.vc = isa.UseReg(r("vc"))
	}
	return l
}

// reg is the register called name, declared on first use.
func (l *dynTileLoop) reg(name string) int {
	if r, ok := l.named[name]; ok {
		return r
	}
	l.named[name] = l.e.reg(name)
	return l.named[name]
}

// each emits the loop over the block's tiles, body emitting each tile's work (no
// loop when want rejects position 0: a core with nothing to do).
func (l *dynTileLoop) each(want func(s int) bool, body func(d dynTile)) {
	groupedLoop(l.e, l.reg, l.count, 1, want, func(_ int, j isa.RegRef) {
		l.locate(j)
		body(l.d)
	})
}

// locate emits the registers of the tile j (a register) of the block: its place in
// matmulTileOrder's bands, first row and column, valid rows and columns.
func (l *dynTileLoop) locate(j isa.RegRef) {
	e, d := l.e, l.d
	tm, tn, n := l.op.Tile[0], l.op.Tile[1], l.op.Problem[2]
	reg, imm := isa.RegOp, func(v int) isa.Operand { return isa.ImmOp(float64(v)) }
	bi, rem := l.reg("band_index"), l.reg("in_band")
	e.emit(isa.SADD, reg(l.o), reg(l.start), reg(int(j)-1))
	e.emit(isa.SDIV, reg(bi), reg(l.o), reg(l.band))
	e.emit(isa.SREM, reg(rem), reg(l.o), reg(l.band))
	e.emit(isa.SDIV, reg(l.mi), reg(rem), imm(l.w))
	e.emit(isa.SREM, reg(l.ni), reg(rem), imm(l.w))
	e.emit(isa.SMUL, reg(bi), reg(bi), imm(l.w))
	e.emit(isa.SADD, reg(l.ni), reg(l.ni), reg(bi))
	e.emit(isa.SMUL, reg(d.i0), reg(l.mi), imm(tm))
	e.emit(isa.SMUL, reg(d.j0), reg(l.ni), imm(tn))
	vr := int(d.vr) - 1
	e.emit(isa.SSUB, reg(vr), reg(l.rows), reg(d.i0))
	e.emit(isa.SMIN, reg(vr), reg(vr), imm(tm))
	if d.vc != 0 {
		vc := int(d.vc) - 1
		e.emit(isa.SSUB, reg(vc), imm(n), reg(d.j0))
		e.emit(isa.SMIN, reg(vc), reg(vc), imm(tn))
	}
}

// offset emits into the register called name the element offset of the tile's
// window in a view whose offset grows by dRow per row and dCol per column.
func (d dynTile) offset(e *emitter, name string, dRow, dCol int) isa.RegRef {
	off, col := d.l.reg(name), d.l.reg(name+"_col")
	e.emit(isa.SMUL, isa.RegOp(off), isa.RegOp(d.i0), isa.ImmOp(float64(dRow)))
	e.emit(isa.SMUL, isa.RegOp(col), isa.RegOp(d.j0), isa.ImmOp(float64(dCol)))
	e.emit(isa.SADD, isa.RegOp(off), isa.RegOp(off), isa.RegOp(col))
	return isa.UseReg(off)
}

// cut sets the register-given valid rows and columns of a window of at most rows x
// cols elements, and the register that moves it.
func cut(v isa.GMView, off, rows, cols isa.RegRef) isa.GMView {
	v.OffsetReg, v.RowsReg, v.ColsReg = off, rows, cols
	return v
}

// matrixSteps are how far the windows of a matrix view move per row and per column of
// op(X).
func matrixSteps(v matrixView) (dRow, dCol int) {
	o := v.window(0, 0, 0, 1, 1).Offset
	return v.window(0, 1, 0, 1, 1).Offset - o, v.window(0, 0, 1, 1, 1).Offset - o
}

// emitDynamicMatmul is block b (of nb) of a matmul with dynamic rows: the cube's tile
// loop, each tile's accumulator (in parts of tm/parts rows) going to store.
//
// The loop body is one tile (a loop's trip count in a register makes the backend
// bracket it with barriers, so a body of two tiles would need a tail loop and its
// barriers). The L1 copies alternate by K stage, so a tile of an odd number of stages
// would start on the copy the previous tile ended on and wait for it: evenStages
// splits one stage in two instead.
func emitDynamicMatmul(e *emitter, tg *TileGraph, op *TileOp, b, nb, parts int, store func(acc []int, d dynTile)) {
	k := op.Problem[3]
	t := matmulTilingOf(op.Tile)
	out := matmulOutShape(tg, op)
	av := operandView(e, tg, op.Inputs[0], out, op.Attrs.Bool("transpose_a", false))
	bv := operandView(e, tg, op.Inputs[1], out, op.Attrs.Bool("transpose_b", false))
	st := newMatmulStages(e, t, tg.Tensors[op.Inputs[0]].Type.DType, parts, 0)
	l := openDynamicTiles(e, op, b, nb)
	aRow, _ := matrixSteps(av)
	_, bCol := matrixSteps(bv)
	kS := t.stageK()
	// The windows' static sizes bound the register-given ones and lie inside the
	// operands wherever the registers move them.
	rows, cols := min(t.tm, op.Problem[1]), min(t.tn, op.Problem[2])
	stages := kStages(k, kS)
	if ceilDiv(op.NumTiles(), nb) > 1 { // a block runs tiles one after another
		stages = evenStages(stages, t.tk)
	}
	vks := validK(e, op, stages)
	l.each(nil, func(d dynTile) {
		aoff, boff := d.offset(e, "aoff", aRow, 0), d.offset(e, "boff", 0, bCol)
		for i, sg := range stages {
			aw := cut(av.window(0, 0, sg.p0, rows, sg.vk), aoff, d.vr, vks[i])
			bw := cut(bv.window(0, sg.p0, 0, sg.vk, cols), boff, vks[i], d.vc)
			st.run(aw, bw, sg.vk, sg.p0 == 0, 0)
		}
		store(st.acc, d)
	})
}

// validK is, per K stage, the register holding how deep the stage is valid when the
// op cuts its K at the run's size (DynamicRows.CutK): min(vk, max(0, kvalid - p0)),
// computed once before the tile loop; all zero (no register) otherwise. A stage past
// the valid K loads nothing and multiplies zeros, as the padded program's zeros there
// add nothing.
func validK(e *emitter, op *TileOp, stages []kStage) []isa.RegRef {
	out := make([]isa.RegRef, len(stages))
	if !op.Dynamic.CutK {
		return out
	}
	reg, imm := isa.RegOp, func(v int) isa.Operand { return isa.ImmOp(float64(v)) }
	kv := e.reg("k_valid")
	e.emit(isa.SLD, reg(kv), isa.GMOp(isa.GMView{Param: e.params[op.Dynamic.Sizes], Offset: op.Dynamic.KIndex, Rows: 1, Cols: 1, RowStride: 1, ColStride: 1}))
	for i, sg := range stages {
		r := e.reg(fmt.Sprintf("vk%d", i))
		e.emit(isa.SSUB, reg(r), reg(kv), imm(sg.p0))
		e.emit(isa.SMAX, reg(r), reg(r), imm(0))
		e.emit(isa.SMIN, reg(r), reg(r), imm(sg.vk))
		out[i] = isa.UseReg(r)
	}
	return out
}

// kStage is one L1 load of K: vk deep from p0.
type kStage struct{ p0, vk int }

// kStages cuts K (k deep) into stages of kS, as the static code does (one empty stage
// for k 0).
func kStages(k, kS int) []kStage {
	var out []kStage
	for p0 := 0; p0 < max(k, 1); p0 += kS {
		out = append(out, kStage{p0, max(0, min(kS, k-p0))})
	}
	return out
}

// evenStages cuts K again, when its stages are odd in number, into one stage more of
// (nearly) equal numbers of base blocks (of tk), so that a tile ends on the L1 copy
// the next one does not start on and the copies stream as the static code's do (one
// more load per tile: it pays where a block runs several tiles); equal stages keep
// every load as far ahead of its use as the others. The base blocks and their order
// stay the same, and so do the sums.
func evenStages(stages []kStage, tk int) []kStage {
	if len(stages)%2 == 0 {
		return stages
	}
	k := 0
	for _, s := range stages {
		k += s.vk
	}
	blocks, n := ceilDiv(k, tk), len(stages)+1
	if blocks < n {
		return stages
	}
	out := make([]kStage, 0, n)
	p0 := 0
	for i := range n {
		b := blocks / n
		if i < blocks%n {
			b++
		}
		out = append(out, kStage{p0, min(b*tk, k-p0)})
		p0 += b * tk
	}
	return out
}

// emitDynamicPlainMatmul is a dynamic matmul block storing its tiles through the
// fixpipe.
func emitDynamicPlainMatmul(e *emitter, tg *TileGraph, op *TileOp, b, nb int) {
	out := matmulOutShape(tg, op)
	cv := newMatrixView(e.params[op.Output], out, out, false)
	dRow, dCol := matrixSteps(cv)
	t := matmulTilingOf(op.Tile)
	emitDynamicMatmul(e, tg, op, b, nb, 1, func(acc []int, d dynTile) {
		off := d.offset(e, "coff", dRow, dCol)
		w := cv.window(0, 0, 0, min(t.tm, op.Problem[1]), min(t.tn, op.Problem[2]))
		e.emit(isa.TSTORE, isa.GMOp(cut(w, off, d.vr, d.vc)), isa.TileOp(acc[0]))
	})
}

// emitDynamicMatmulEpilogue is block b (of nb) of a fused_matmul with dynamic rows.
// With each tile split between the vector cores (epilogueParts), part p goes to
// vector core p, as in the static code; with whole tiles (one part), every tile goes
// to vector core 0, as tiles cannot alternate between the queues in a loop of one
// tile (emitDynamicMatmul): the cube spends far longer on a tile than the vector core
// on its epilogue.
func emitDynamicMatmulEpilogue(g *groupEmitter, tg *TileGraph, op *TileOp, b, nb int) {
	nv := len(g.vec)
	parts := epilogueParts(op.Tile[0], nv)
	emitDynamicMatmul(g.cube, tg, op, b, nb, parts, func(acc []int, _ dynTile) {
		for p, a := range acc {
			g.cube.emit(isa.TPUSH, isa.ImmOp(float64(p)), isa.TileOp(a))
		}
	})
	for v, e := range g.vec {
		emitDynamicEpilogueVector(e, tg, op, b, nb, v, parts)
	}
}

// emitDynamicEpilogueVector is vector core v's part of a dynamic fused_matmul block
// (emitEpilogueVector's work, per tile of the loop): part v of every tile, if the
// tiles have that many parts.
func emitDynamicEpilogueVector(e *emitter, tg *TileGraph, op *TileOp, b, nb, v, parts int) {
	pm, tn := op.Tile[0]/parts, op.Tile[1]
	ep := declareEpilogue(e, tg, op, pm, tn)
	prod, res, ov := ep.prod, ep.res, ep.out
	vb := &vecBody{e: e, attrs: op.Attrs, tr: pm, tc: tn, space: ep.space, vr: pm, vc: tn}
	q := isa.ImmOp(float64(v))
	rows, cols := min(pm, op.Problem[1]), min(tn, op.Problem[2]) // static bounds of the windows
	p := v
	l := openDynamicTiles(e, op, b, nb)
	l.each(func(int) bool { return v < parts }, func(d dynTile) {
		// The part's first row and valid rows: min(pm, max(0, vr - p*pm)).
		part := dynTile{l: l, i0: l.reg("part_i0"), j0: d.j0, vr: isa.UseReg(l.reg("part_rows")), vc: d.vc}
		pr := int(part.vr) - 1
		e.emit(isa.SADD, isa.RegOp(part.i0), isa.RegOp(d.i0), isa.ImmOp(float64(p*pm)))
		e.emit(isa.SSUB, isa.RegOp(pr), isa.RegOp(int(d.vr)-1), isa.ImmOp(float64(p*pm)))
		e.emit(isa.SMAX, isa.RegOp(pr), isa.RegOp(pr), isa.ImmOp(0))
		e.emit(isa.SMIN, isa.RegOp(pr), isa.RegOp(pr), isa.ImmOp(float64(pm)))
		e.emit(isa.TPOP, isa.TileOp(prod), q)
		srcs := []int{prod}
		for i, x := range ep.extras {
			dRow, dCol := flatSteps(x.view)
			off := part.offset(e, fmt.Sprintf("in%d_off", i+2), dRow, dCol)
			srcs = append(srcs, loadWindow(e, 0, x.loaded, cut(x.view.window(0, 0, 0, rows, cols), off, part.vr, part.vc)))
		}
		fusedBody(vb, res, srcs)
		e.emit(isa.TFREE, q)
		dRow, dCol := flatSteps(ov)
		off := part.offset(e, "out_off", dRow, dCol)
		e.emit(isa.TSTORE, isa.GMOp(cut(ov.window(0, 0, 0, rows, cols), off, part.vr, part.vc)), isa.TileOp(res))
	})
}

// flatSteps are how far the windows of a flat view move per row and per column.
func flatSteps(v flatView) (dRow, dCol int) { return v.rowStride, v.colStride }
