package lower

import (
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// emitSort generates a vector block that sorts whole rows on chip. TSORT32 sorts runs
// of 32 (value, index) pairs descending and TMRGSORT merges four runs at a time, both
// stable, NaN first. A descending sort uses them as they are. An ascending sort feeds
// each row reversed (gathered from GM backwards, with its original indices) and reads
// the result backwards: the reversal of a stable descending sort of the reversed row is
// the stable ascending sort, with NaN last, which is the reference's order. Rows are
// padded with -inf past their n elements, which sort behind every real element.
// sort stores the values, argsort the indices (carried as fp32, exact below 2^24).
func emitSort(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	inT, outT := tg.Tensors[op.Inputs[0]].Type, tg.Tensors[op.Output].Type
	rows, n, l := op.Problem[0], op.Problem[1], op.Problem[2]
	tr := op.Tile[0]
	ascending := !op.Attrs.Bool("descending", false)
	indices := op.Op == "argsort"
	src, dst := e.params[op.Inputs[0]], e.params[op.Output]

	idxRow := e.tile("idx_row", isa.Vec, dtype.Int32, 1, l)
	idx := e.tile("idx", isa.Vec, dtype.Int32, tr, l)
	padded := e.tile("padded", isa.Vec, dtype.Float32, tr, l)
	pairs := [2]int{e.tile("pairs_0", isa.Vec, dtype.Float32, tr, 2*l), e.tile("pairs_1", isa.Vec, dtype.Float32, tr, 2*l)}
	pick := e.tile("pick", isa.Vec, dtype.Int32, tr, l)
	spread := e.tile("pick_spread", isa.Vec, dtype.Int32, tr, l)
	shifted := e.tile("pick_shifted", isa.Vec, dtype.Int32, tr, l)
	pickRow := e.tile("pick_row", isa.Vec, dtype.Int32, 1, l)
	rowF := e.tile("pick_rowf", isa.Vec, dtype.Float32, tr, 8)
	rowI := e.tile("pick_rowi", isa.Vec, dtype.Int32, tr, 8)
	picked := e.tile("picked", isa.Vec, dtype.Float32, tr, l)

	// The index each position carries, and where output column c is read from.
	start, step := 0.0, 1.0
	if ascending {
		start, step = float64(n-1), -1
	}
	e.emit(isa.TCI, isa.TileOp(idxRow), isa.ImmOp(start), isa.ImmOp(step))
	e.emit(isa.TCOLEXPAND, isa.TileOp(idx), isa.TileOp(idxRow))
	pickStart, pickStep := 0.0, 2.0
	if ascending {
		pickStart, pickStep = float64(2*(n-1)), -2
	}
	if indices {
		pickStart++
	}
	e.emit(isa.TCI, isa.TileOp(pickRow), isa.ImmOp(pickStart), isa.ImmOp(pickStep))
	e.emit(isa.TCI, isa.TileOp(rowF), isa.ImmOp(0), isa.ImmOp(float64(2*l)/8)) // row r starts at r*2l
	e.emit(isa.TCVT, isa.TileOp(rowI), isa.TileOp(rowF))
	e.emit(isa.TCOLEXPAND, isa.TileOp(spread), isa.TileOp(pickRow))
	e.emit(isa.TMAXS, isa.TileOp(shifted), isa.TileOp(spread), isa.ImmOp(0)) // past n, ascending reads would go below the row
	e.emit(isa.TROWEXPANDADD, isa.TileOp(pick), isa.TileOp(shifted), isa.TileOp(rowI))

	for _, t := range tiles {
		r0 := t * tr
		vr := min(tr, rows-r0)
		view := isa.GMView{Param: src, Offset: r0 * n, Rows: vr, Cols: n, RowStride: n, ColStride: 1}
		if ascending {
			view.Offset, view.ColStride = r0*n+n-1, -1
		}
		x := loadWindow(e, 0, e.variant("x", inT.DType, tr, l, vr, n), view)
		if inT.DType != dtype.Float32 {
			xf := e.variant("x_f32", dtype.Float32, tr, l, vr, n)
			e.emit(isa.TCVT, isa.TileOp(xf), isa.TileOp(x))
			x = xf
		}
		e.emit(isa.TFILLPAD, isa.TileOp(padded), isa.TileOp(x), isa.ImmOp(math.Inf(-1)))
		e.emit(isa.TSORT32, isa.TileOp(pairs[0]), isa.TileOp(padded), isa.TileOp(idx))
		cur := 0
		for run := 32; run < l; run *= 4 {
			e.emit(isa.TMRGSORT, isa.TileOp(pairs[1-cur]), isa.TileOp(pairs[cur]), isa.ImmOp(float64(run)))
			cur = 1 - cur
		}
		e.emit(isa.TGATHER, isa.TileOp(picked), isa.TileOp(pairs[cur]), isa.TileOp(pick))
		res := picked
		if outT.DType != dtype.Float32 {
			res = e.tile("out", isa.Vec, outT.DType, tr, l)
			e.emit(isa.TCVT, isa.TileOp(res), isa.TileOp(picked))
		}
		store := isa.GMView{Param: dst, Offset: r0 * n, Rows: vr, Cols: n, RowStride: n, ColStride: 1}
		e.emit(isa.TSTORE, isa.GMOp(store), isa.TileOp(res))
	}
}
