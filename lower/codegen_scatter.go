package lower

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// emitScatter generates a block of an index_put or scatter (see lowering_scatter.go):
// per tile, the values are loaded, the destinations built, and MSCATTER (.add when the
// writes accumulate) writes the values into the tile's window of the result.
//
// A destination is rowCoef*r + colCoef*c (TCI along one row, spread down the tile,
// plus a TCI column in fp32 converted to int32) plus, per index, index*coef: with the
// index a tile of the iteration space's shape, or, for index_put's rows, a column (one
// index per row of values) added along each row. Each index is first brought into its
// axis ([-n, n) wraps for index_put, [0, n) for scatter); one outside gets the window's
// size instead of its term, so that MSCATTER refuses the element.
func emitScatter(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	p := scatterPlanOf(op, tg.Tensors)
	if op.Tile[2] == writeRows {
		emitRowStores(e, tg, op, tiles, p)
		return
	}
	tr, tc := op.Tile[0], op.Tile[1]
	dt := tg.Tensors[op.Output].Type.DType
	src := newFlatView(e.params[op.Inputs[op.srcInput()]], p.src, p.iter)
	idx := make([]flatView, len(p.indices))
	for j, in := range p.indices {
		idx[j] = newFlatView(e.params[op.Inputs[in]], p.idxMaps[j], p.iter)
	}
	mode := isa.ModeNone
	if p.add {
		mode = isa.AtomicAdd
	}
	rowsOfIdx := p.mode == putRows
	idxCols := tc
	if rowsOfIdx {
		idxCols = 8 // one int32 per row: a 32-byte column block
	}
	maskCols := func(cols int) int { return roundUp(ceilDiv(cols, 8), 32) }
	for step, t := range tiles {
		s := step % 2
		name := func(n string) string { return fmt.Sprintf("%s_%d", n, s) }
		o, rt, ct, vr, vc := tileAt(op, t)
		r0, c0 := rt*tr, ct*tc
		w, _ := p.tileWindow(op, t)
		w.view.Param = e.params[op.Output]
		big := float64(w.view.Rows * w.view.Cols)

		vals := e.variant(name("sc_values"), dt, tr, tc, vr, vc)
		e.emit(isa.TLOAD, isa.TileOp(vals), isa.GMOp(src.window(o, r0, c0, vr, vc)))

		col := e.variant(name("sc_col"), dtype.Int32, 1, tc, 0, 0)
		spread := e.variant(name("sc_spread"), dtype.Int32, tr, tc, 0, 0)
		rowF := e.variant(name("sc_rowf"), dtype.Float32, tr, 8, 0, 0)
		row := e.variant(name("sc_row"), dtype.Int32, tr, 8, 0, 0)
		dest := e.variant(name("sc_dest"), dtype.Int32, tr, tc, 0, 0)
		e.emit(isa.TCI, isa.TileOp(col), isa.ImmOp(0), isa.ImmOp(float64(w.colCoef)))
		e.emit(isa.TCOLEXPAND, isa.TileOp(spread), isa.TileOp(col))
		e.emit(isa.TCI, isa.TileOp(rowF), isa.ImmOp(0), isa.ImmOp(float64(w.rowCoef)/8)) // column 0 steps rowCoef per row
		e.emit(isa.TCVT, isa.TileOp(row), isa.TileOp(rowF))

		ix := e.variant(name("sc_index"), dtype.Int32, tr, idxCols, 0, 0)
		term := e.variant(name("sc_term"), dtype.Int32, tr, idxCols, 0, 0)
		neg := e.variant(name("sc_neg"), dtype.Int8, tr, maskCols(idxCols), 0, 0)
		below := e.variant(name("sc_below"), dtype.Int8, tr, maskCols(idxCols), 0, 0)
		ok := e.variant(name("sc_ok"), dtype.Int8, tr, maskCols(idxCols), 0, 0)
		sum := dest // the index terms add into the destinations, or for rows into the row part
		if rowsOfIdx {
			sum = row
		} else {
			e.emit(isa.TROWEXPANDADD, isa.TileOp(dest), isa.TileOp(spread), isa.TileOp(row))
		}
		for j := range idx {
			n := float64(p.idxLens[j])
			v := idx[j].window(o, r0, c0, vr, vc)
			if rowsOfIdx {
				v = isa.GMView{Param: idx[j].param, Offset: r0, Rows: vr, Cols: 1, RowStride: 1, ColStride: 1}
			}
			e.emit(isa.TLOAD, isa.TileOp(ix), isa.GMOp(v))
			if p.wrap {
				e.emitMode(isa.TCMPS, isa.CmpLT, isa.TileOp(neg), isa.TileOp(ix), isa.ImmOp(0))
				e.emit(isa.TADDS, isa.TileOp(term), isa.TileOp(ix), isa.ImmOp(n))
				e.emit(isa.TSEL, isa.TileOp(ix), isa.TileOp(neg), isa.TileOp(term), isa.TileOp(ix))
			}
			e.emitMode(isa.TCMPS, isa.CmpLT, isa.TileOp(below), isa.TileOp(ix), isa.ImmOp(n))
			e.emitMode(isa.TCMPS, isa.CmpGE, isa.TileOp(neg), isa.TileOp(ix), isa.ImmOp(0))
			e.emit(isa.TAND, isa.TileOp(ok), isa.TileOp(below), isa.TileOp(neg))
			e.emit(isa.TMULS, isa.TileOp(term), isa.TileOp(ix), isa.ImmOp(float64(w.idxCoef[j])))
			e.emit(isa.TSELS, isa.TileOp(term), isa.TileOp(ok), isa.TileOp(term), isa.ImmOp(big))
			e.emit(isa.TADD, isa.TileOp(sum), isa.TileOp(sum), isa.TileOp(term))
		}
		if rowsOfIdx {
			e.emit(isa.TROWEXPANDADD, isa.TileOp(dest), isa.TileOp(spread), isa.TileOp(row))
		}
		e.emitMode(isa.MSCATTER, mode, isa.GMOp(w.view), isa.TileOp(vals), isa.TileOp(dest))
	}
}

// srcInput is the position in op.Inputs of the values a scatter op writes.
func (op *TileOp) srcInput() int {
	if op.Op == "scatter" {
		return 2
	}
	return 1
}

// emitRowStores generates a block of an index_put whose rows are stored one at a
// time (tiles of one row, see rowStoresPay), as a loop over the rows of each column
// tile the block has (in row order: duplicates are written in index order). Per row,
// each index is read into a register (SLD), wrapped from [-n, n) and clamped into its
// axis, and the row offset summed; the row is loaded and stored (tstore.add when
// accumulating) at that offset. As in slice_update, an index outside its axis adds
// (index - clamped) whole tensors to the offset, which moves the store outside the
// result's param: the device refuses it and the reference names the index.
func emitRowStores(e *emitter, tg *TileGraph, op *TileOp, tiles []int, p scatterPlan) {
	tc := op.Tile[1]
	dt := tg.Tensors[op.Output].Type.DType
	elems := p.x.NumElements()
	mode := isa.ModeNone
	if p.add {
		mode = isa.AtomicAdd
	}
	src := newFlatView(e.params[op.Inputs[op.srcInput()]], p.src, p.iter)
	type slot struct{ row, off, from, ix, c, t, tile int }
	var slots [2]slot // two rows per loop trip, in registers and tiles of their own, so that one's loads overlap the other's stores
	for k := range slots {
		r := func(n string) int { return e.reg(fmt.Sprintf("%s%d", n, k)) }
		slots[k] = slot{r("row"), r("off"), r("from"), r("index"), r("clamped"), r("neg"), e.tile(fmt.Sprintf("values%d", k), isa.Vec, dt, 1, tc)}
	}
	rowAt := func(s slot, c0, vc int) { // stores row s.row of the values' column tile at c0
		e.emit(isa.SMOV, isa.RegOp(s.off), isa.ImmOp(float64(c0)))
		for j, in := range p.indices {
			n := float64(p.idxLens[j])
			e.emit(isa.SLD, isa.RegOp(s.ix), isa.GMOp(isa.GMView{Param: e.params[op.Inputs[in]], Rows: 1, Cols: 1, RowStride: 1, ColStride: 1, OffsetReg: isa.UseReg(s.row)}))
			e.emit(isa.SSUB, isa.RegOp(s.t), isa.ImmOp(0), isa.RegOp(s.ix)) // 1 when the index is negative, else 0
			e.emit(isa.SMAX, isa.RegOp(s.t), isa.RegOp(s.t), isa.ImmOp(0))
			e.emit(isa.SMIN, isa.RegOp(s.t), isa.RegOp(s.t), isa.ImmOp(1))
			e.emit(isa.SMUL, isa.RegOp(s.t), isa.RegOp(s.t), isa.ImmOp(n))
			e.emit(isa.SADD, isa.RegOp(s.ix), isa.RegOp(s.ix), isa.RegOp(s.t))
			e.emit(isa.SMAX, isa.RegOp(s.c), isa.RegOp(s.ix), isa.ImmOp(0))
			e.emit(isa.SMIN, isa.RegOp(s.c), isa.RegOp(s.c), isa.ImmOp(n-1))
			e.emit(isa.SSUB, isa.RegOp(s.ix), isa.RegOp(s.ix), isa.RegOp(s.c))
			e.emit(isa.SMUL, isa.RegOp(s.ix), isa.RegOp(s.ix), isa.ImmOp(float64(elems)))
			e.emit(isa.SMUL, isa.RegOp(s.c), isa.RegOp(s.c), isa.ImmOp(float64(p.idxRows[j]*p.rowElems)))
			e.emit(isa.SADD, isa.RegOp(s.off), isa.RegOp(s.off), isa.RegOp(s.c))
			e.emit(isa.SADD, isa.RegOp(s.off), isa.RegOp(s.off), isa.RegOp(s.ix))
		}
		v := src.window(0, 0, 0, 1, vc)
		e.emit(isa.SMUL, isa.RegOp(s.from), isa.RegOp(s.row), isa.ImmOp(float64(v.RowStride)))
		e.emit(isa.SADD, isa.RegOp(s.from), isa.RegOp(s.from), isa.ImmOp(float64(c0*v.ColStride)))
		v.OffsetReg = isa.UseReg(s.from)
		e.emit(isa.TLOAD, isa.TileOp(s.tile), isa.GMOp(v))
		dst := isa.GMView{Param: e.params[op.Output], Rows: 1, Cols: vc, RowStride: vc, ColStride: 1, OffsetReg: isa.UseReg(s.off)}
		e.emitMode(isa.TSTORE, mode, isa.GMOp(dst), isa.TileOp(s.tile))
	}
	var cols []int // the block's column tiles, in order
	seen := map[int]bool{}
	for _, tile := range tiles {
		if _, _, ct, _, _ := tileAt(op, tile); !seen[ct] {
			seen[ct] = true
			cols = append(cols, ct)
		}
	}
	rows := op.Problem[1]
	i := e.reg("i")
	for _, ct := range cols {
		c0, vc := ct*tc, min(tc, op.Problem[2]-ct*tc)
		if rows >= 2 {
			e.emit(isa.LOOP, isa.RegOp(i), isa.ImmOp(float64(rows/2)))
			e.emit(isa.SMUL, isa.RegOp(slots[0].row), isa.RegOp(i), isa.ImmOp(2))
			e.emit(isa.SADD, isa.RegOp(slots[1].row), isa.RegOp(slots[0].row), isa.ImmOp(1))
			rowAt(slots[0], c0, vc)
			rowAt(slots[1], c0, vc)
			e.emit(isa.ENDLOOP)
		}
		if rows%2 == 1 {
			e.emit(isa.SMOV, isa.RegOp(slots[0].row), isa.ImmOp(float64(rows-1)))
			rowAt(slots[0], c0, vc)
		}
	}
}

// emitMode appends an instruction with a mode.
func (e *emitter) emitMode(op isa.Opcode, mode isa.Mode, args ...isa.Operand) {
	e.prog.Body = append(e.prog.Body, isa.Instr{Op: op, Mode: mode, Args: e.operands(args)})
}
