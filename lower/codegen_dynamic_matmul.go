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
	i0, j0 int        // its first row and column
	vr, vc isa.RegRef // its valid rows and columns (vc zero when every tile has tn)
}

// openDynamicTiles emits the header of block b's loop (of nb) over the output tiles of
// op that hold valid rows, and the registers of the current tile. The caller emits the
// tile's work and closes the loop with ENDLOOP.
func openDynamicTiles(e *emitter, op *TileOp, b, nb int) dynTile {
	tm, tn, gn, n := op.Tile[0], op.Tile[1], op.Grid[2], op.Problem[2]
	w := matmulBandWidth(op, nb)
	r := e.reg
	rows, rowTiles, tiles, start, end, count, band := r("rows"), r("row_tiles"), r("tiles"), r("start"), r("end"), r("count"), r("band")
	j, o, bi, rem, mi, ni := r("j"), r("o"), r("band_index"), r("in_band"), r("mi"), r("ni")
	d := dynTile{i0: r("i0"), j0: r("j0"), vr: isa.UseReg(r("vr"))}
	reg, imm := isa.RegOp, func(v int) isa.Operand { return isa.ImmOp(float64(v)) }
	e.emit(isa.SLD, reg(rows), isa.GMOp(isa.GMView{Param: e.params[op.Dynamic.Sizes], Offset: op.Dynamic.Index, Rows: 1, Cols: 1, RowStride: 1, ColStride: 1}))
	e.emit(isa.SADD, reg(rowTiles), reg(rows), imm(tm-1))
	e.emit(isa.SDIV, reg(rowTiles), reg(rowTiles), imm(tm))
	e.emit(isa.SMUL, reg(tiles), reg(rowTiles), imm(gn))
	e.emit(isa.SMUL, reg(start), reg(tiles), imm(b))
	e.emit(isa.SDIV, reg(start), reg(start), imm(nb))
	e.emit(isa.SMUL, reg(end), reg(tiles), imm(b+1))
	e.emit(isa.SDIV, reg(end), reg(end), imm(nb))
	e.emit(isa.SSUB, reg(count), reg(end), reg(start))
	e.emit(isa.SMUL, reg(band), reg(rowTiles), imm(w)) // tiles per band of w columns
	e.emit(isa.LOOP, reg(j), reg(count))
	e.emit(isa.SADD, reg(o), reg(start), reg(j))
	e.emit(isa.SDIV, reg(bi), reg(o), reg(band))
	e.emit(isa.SREM, reg(rem), reg(o), reg(band))
	e.emit(isa.SDIV, reg(mi), reg(rem), imm(w))
	e.emit(isa.SREM, reg(ni), reg(rem), imm(w))
	e.emit(isa.SMUL, reg(bi), reg(bi), imm(w))
	e.emit(isa.SADD, reg(ni), reg(ni), reg(bi))
	e.emit(isa.SMUL, reg(d.i0), reg(mi), imm(tm))
	e.emit(isa.SMUL, reg(d.j0), reg(ni), imm(tn))
	vr := int(d.vr) - 1
	e.emit(isa.SSUB, reg(vr), reg(rows), reg(d.i0))
	e.emit(isa.SMIN, reg(vr), reg(vr), imm(tm))
	if n%tn != 0 {
		vc := r("vc")
		d.vc = isa.UseReg(vc)
		e.emit(isa.SSUB, reg(vc), imm(n), reg(d.j0))
		e.emit(isa.SMIN, reg(vc), reg(vc), imm(tn))
	}
	return d
}

// offset emits into a new register the element offset of the tile's window in a view
// whose offset grows by dRow per row and dCol per column.
func (d dynTile) offset(e *emitter, name string, dRow, dCol int) isa.RegRef {
	off, col := e.reg(name), e.reg(name+"_col")
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
func emitDynamicMatmul(e *emitter, tg *TileGraph, op *TileOp, b, nb, parts int, store func(acc []int, d dynTile)) {
	k := op.Problem[3]
	t := matmulTilingOf(op.Tile)
	out := matmulOutShape(tg, op)
	av := operandView(e, tg, op.Inputs[0], out, op.Attrs.Bool("transpose_a", false))
	bv := operandView(e, tg, op.Inputs[1], out, op.Attrs.Bool("transpose_b", false))
	st := newMatmulStages(e, t, tg.Tensors[op.Inputs[0]].Type.DType, parts, 0)
	d := openDynamicTiles(e, op, b, nb)
	aRow, _ := matrixSteps(av)
	_, bCol := matrixSteps(bv)
	aoff, boff := d.offset(e, "aoff", aRow, 0), d.offset(e, "boff", 0, bCol)
	kS := t.stageK()
	// The windows' static sizes bound the register-given ones and lie inside the
	// operands wherever the registers move them.
	rows, cols := min(t.tm, op.Problem[1]), min(t.tn, op.Problem[2])
	for p0 := 0; p0 < max(k, 1); p0 += kS {
		vk := max(0, min(kS, k-p0))
		aw := cut(av.window(0, 0, p0, rows, vk), aoff, d.vr, 0)
		bw := cut(bv.window(0, p0, 0, vk, cols), boff, 0, d.vc)
		st.run(aw, bw, vk, p0 == 0, 0)
	}
	store(st.acc, d)
	e.emit(isa.ENDLOOP)
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

// emitDynamicMatmulEpilogue is block b (of nb) of a fused_matmul with dynamic rows:
// the cube pushes row part p of every tile to vector core p (dynamicRowsOf makes the
// parts one per vector core), which runs the same tile loop and the epilogue on its
// part, cut to the part's valid rows.
func emitDynamicMatmulEpilogue(g *groupEmitter, tg *TileGraph, op *TileOp, b, nb int) {
	nv := len(g.vec)
	emitDynamicMatmul(g.cube, tg, op, b, nb, nv, func(acc []int, _ dynTile) {
		for p, a := range acc {
			g.cube.emit(isa.TPUSH, isa.ImmOp(float64(p)), isa.TileOp(a))
		}
	})
	for v, e := range g.vec {
		emitDynamicEpilogueVector(e, tg, op, b, nb, v, nv)
	}
}

// emitDynamicEpilogueVector is vector core v's part of a dynamic fused_matmul block
// (emitEpilogueVector's work, per tile of the loop).
func emitDynamicEpilogueVector(e *emitter, tg *TileGraph, op *TileOp, b, nb, v, nv int) {
	pm, tn := op.Tile[0]/nv, op.Tile[1]
	ep := declareEpilogue(e, tg, op, pm, tn)
	prod, res, ov := ep.prod, ep.res, ep.out
	vb := &vecBody{e: e, attrs: op.Attrs, tr: pm, tc: tn, space: ep.space, vr: pm, vc: tn}
	q := isa.ImmOp(float64(v))
	rows, cols := min(pm, op.Problem[1]), min(tn, op.Problem[2]) // static bounds of the windows
	d := openDynamicTiles(e, op, b, nb)
	// The part's first row and valid rows: min(pm, max(0, vr - v*pm)).
	part := dynTile{i0: e.reg("part_i0"), j0: d.j0, vr: isa.UseReg(e.reg("part_rows")), vc: d.vc}
	pr := int(part.vr) - 1
	e.emit(isa.SADD, isa.RegOp(part.i0), isa.RegOp(d.i0), isa.ImmOp(float64(v*pm)))
	e.emit(isa.SSUB, isa.RegOp(pr), isa.RegOp(int(d.vr)-1), isa.ImmOp(float64(v*pm)))
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
	e.emit(isa.ENDLOOP)
}

// flatSteps are how far the windows of a flat view move per row and per column.
func flatSteps(v flatView) (dRow, dCol int) { return v.rowStride, v.colStride }
