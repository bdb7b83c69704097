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
		store := isa.GMView{Param: dst, Offset: r0 * n, Rows: vr, Cols: n, RowStride: n, ColStride: 1}
		if inT.DType == dtype.Int32 {
			sortInt32Rows(e, x, vr, n, l, tr, ascending, indices, store)
			continue
		}
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
			res = e.variant("out", outT.DType, tr, l, 0, 0)
			e.emit(isa.TCVT, isa.TileOp(res), isa.TileOp(picked))
		}
		e.emit(isa.TSTORE, isa.GMOp(store), isa.TileOp(res))
	}
}

// sortRuns sorts the (key, payload) rows of keys (fp32, padded) with TSORT32 and
// TMRGSORT and returns the pair buffer holding the result.
func sortRuns(e *emitter, keys, payload int, pairs [2]int, l int) int {
	e.emit(isa.TSORT32, isa.TileOp(pairs[0]), isa.TileOp(keys), isa.TileOp(payload))
	cur := 0
	for run := 32; run < l; run *= 4 {
		e.emit(isa.TMRGSORT, isa.TileOp(pairs[1-cur]), isa.TileOp(pairs[cur]), isa.ImmOp(float64(run)))
		cur = 1 - cur
	}
	return pairs[cur]
}

// rowOffsets returns an int32 [tr, 8] tile whose first column is r*stride.
func rowOffsets(e *emitter, name string, tr, stride int) int {
	f := e.variant(name+"_f", dtype.Float32, tr, 8, 0, 0)
	i := e.variant(name, dtype.Int32, tr, 8, 0, 0)
	e.emit(isa.TCI, isa.TileOp(f), isa.ImmOp(0), isa.ImmOp(float64(stride)/8))
	e.emit(isa.TCVT, isa.TileOp(i), isa.TileOp(f))
	return i
}

// pickIndex returns an int32 [tr, l] tile of flat indices r*rowStride + max(start +
// c*step, 0), for TGATHER.
func pickIndex(e *emitter, name string, tr, l, rowStride int, start, step float64) int {
	row := e.variant(name+"_row", dtype.Int32, 1, l, 0, 0)
	spread := e.variant(name+"_spread", dtype.Int32, tr, l, 0, 0)
	clamped := e.variant(name+"_clamped", dtype.Int32, tr, l, 0, 0)
	out := e.variant(name, dtype.Int32, tr, l, 0, 0)
	e.emit(isa.TCI, isa.TileOp(row), isa.ImmOp(start), isa.ImmOp(step))
	e.emit(isa.TCOLEXPAND, isa.TileOp(spread), isa.TileOp(row))
	e.emit(isa.TMAXS, isa.TileOp(clamped), isa.TileOp(spread), isa.ImmOp(0))
	e.emit(isa.TROWEXPANDADD, isa.TileOp(out), isa.TileOp(clamped), isa.TileOp(rowOffsets(e, name+"_rows", tr, rowStride)))
	return out
}

// sortInt32Rows sorts int32 rows exactly: the sort unit compares fp32, exact only below
// 2^24, so values are sorted by two 16-bit digits, least significant first (a radix
// sort: the second, stable pass by the signed high digit keeps the first pass's order
// among equal high digits). Payloads are positions in the loaded row; the values and
// (for argsort) the original indices are gathered by them at the end. x is the loaded
// row tile (reversed for an ascending sort, as in emitSort).
func sortInt32Rows(e *emitter, x, vr, n, l, tr int, ascending, indices bool, store isa.GMView) {
	i32 := func(name string) int { return e.variant(name, dtype.Int32, tr, l, 0, 0) }
	f32 := func(name string) int { return e.variant(name, dtype.Float32, tr, l, 0, 0) }
	pairs := [2]int{e.variant("pairs_0", dtype.Float32, tr, 2*l, 0, 0), e.variant("pairs_1", dtype.Float32, tr, 2*l, 0, 0)}
	posRow := e.variant("pos_row", dtype.Int32, 1, l, 0, 0)
	pos := i32("pos")
	e.emit(isa.TCI, isa.TileOp(posRow), isa.ImmOp(0), isa.ImmOp(1))
	e.emit(isa.TCOLEXPAND, isa.TileOp(pos), isa.TileOp(posRow))

	digit := func(name string, op isa.Opcode, imm float64) int { // a digit as padded fp32 keys
		d, df := i32(name), e.variant(name+"_f32", dtype.Float32, tr, l, vr, n)
		keys := f32(name + "_keys")
		e.emit(op, isa.TileOp(d), isa.TileOp(x), isa.ImmOp(imm))
		e.emit(isa.TCVT, isa.TileOp(df), isa.TileOp(d))
		e.emit(isa.TFILLPAD, isa.TileOp(keys), isa.TileOp(df), isa.ImmOp(math.Inf(-1)))
		return keys
	}
	lo := digit("lo", isa.TANDS, 65535)
	hi := digit("hi", isa.TSHRS, 16)

	// Pass 1 by the low digit; the positions in its order.
	first := sortRuns(e, lo, pos, pairs, l)
	orderF, order := f32("order_f"), i32("order")
	e.emit(isa.TGATHER, isa.TileOp(orderF), isa.TileOp(first), isa.TileOp(pickIndex(e, "pick_payload", tr, l, 2*l, 1, 2)))
	e.emit(isa.TCVT, isa.TileOp(order), isa.TileOp(orderF))
	// Pass 2 by the high digit, taken in pass 1's order.
	at, hiOrdered := i32("hi_at"), f32("hi_ordered")
	e.emit(isa.TROWEXPANDADD, isa.TileOp(at), isa.TileOp(order), isa.TileOp(rowOffsets(e, "rows_l", tr, l)))
	e.emit(isa.TGATHER, isa.TileOp(hiOrdered), isa.TileOp(hi), isa.TileOp(at))
	second := sortRuns(e, hiOrdered, order, pairs, l)

	// Output column c reads sorted position c (descending) or n-1-c (ascending).
	start, step := 1.0, 2.0
	if ascending {
		start, step = float64(2*(n-1)+1), -2
	}
	srtF, srt := f32("sorted_f"), i32("sorted")
	e.emit(isa.TGATHER, isa.TileOp(srtF), isa.TileOp(second), isa.TileOp(pickIndex(e, "pick_sorted", tr, l, 2*l, start, step)))
	e.emit(isa.TCVT, isa.TileOp(srt), isa.TileOp(srtF))
	res := i32("result")
	if indices { // positions of a reversed row count from its end
		if ascending {
			neg := i32("neg_pos")
			e.emit(isa.TMULS, isa.TileOp(neg), isa.TileOp(srt), isa.ImmOp(-1))
			e.emit(isa.TADDS, isa.TileOp(res), isa.TileOp(neg), isa.ImmOp(float64(n-1)))
		} else {
			e.emit(isa.TADDS, isa.TileOp(res), isa.TileOp(srt), isa.ImmOp(0))
		}
	} else {
		// columns past n read whatever the clamped picks gave: keep them inside the row
		inRow, lowBound := i32("in_row"), i32("low_bound")
		e.emit(isa.TMINS, isa.TileOp(inRow), isa.TileOp(srt), isa.ImmOp(float64(l-1)))
		e.emit(isa.TMAXS, isa.TileOp(lowBound), isa.TileOp(inRow), isa.ImmOp(0))
		e.emit(isa.TROWEXPANDADD, isa.TileOp(at), isa.TileOp(lowBound), isa.TileOp(rowOffsets(e, "rows_l", tr, l)))
		e.emit(isa.TGATHER, isa.TileOp(res), isa.TileOp(x), isa.TileOp(at))
	}
	e.emit(isa.TSTORE, isa.GMOp(store), isa.TileOp(res))
}
