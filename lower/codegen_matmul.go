package lower

import (
	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// matrixView addresses op(X) for the matrices of a tensor X stored row-major as
// [batch..., rows, cols]: element (i, j) of op(X) in batch b is X[b, i, j], or X[b, j, i]
// when transposed. Transposition is a strided GM view, so it costs no separate pass
// over the data; batch dimensions broadcast like an elementwise op's (stride 0).
type matrixView struct {
	param        int
	cols         int // columns of the stored matrices
	transposed   bool
	batch        core.Shape // batch dims of the output
	batchStrides []int      // element stride of each output batch dim in X
}

func newMatrixView(param int, x, out core.Shape, transposed bool) matrixView {
	nb := len(out) - 2
	rows, cols := x[len(x)-2], x[len(x)-1]
	st := core.BroadcastStrides(x[:len(x)-2], out[:nb])
	for i := range st {
		st[i] *= rows * cols
	}
	return matrixView{param: param, cols: cols, transposed: transposed, batch: out[:nb], batchStrides: st}
}

// window is the rows x cols window at (i0, j0) of op(X) in batch b (row-major index
// over the output's batch dims).
func (v matrixView) window(b, i0, j0, rows, cols int) isa.GMView {
	base := 0
	for ax := len(v.batch) - 1; ax >= 0; ax-- {
		base += (b % v.batch[ax]) * v.batchStrides[ax]
		b /= v.batch[ax]
	}
	if v.transposed {
		return isa.GMView{Param: v.param, Offset: base + j0*v.cols + i0, Rows: rows, Cols: cols, RowStride: 1, ColStride: v.cols}
	}
	return isa.GMView{Param: v.param, Offset: base + i0*v.cols + j0, Rows: rows, Cols: cols, RowStride: v.cols, ColStride: 1}
}

// outTile is one output tile of a matmul block: its batch index, first row and column,
// valid rows and columns, and its position among the block's tiles.
type outTile struct {
	batch, i0, j0, rows, cols int
	seq                       int
}

// matmulOutTile locates flat tile index t of a matmul op's grid.
func matmulOutTile(op *TileOp, t, seq int) outTile {
	tm, tn := op.Tile[0], op.Tile[1]
	perBatch := op.Grid[1] * op.Grid[2]
	bi, mi, ni := t/perBatch, (t%perBatch)/op.Grid[2], t%op.Grid[2]
	i0, j0 := mi*tm, ni*tn
	return outTile{batch: bi, i0: i0, j0: j0, rows: min(tm, op.Problem[1]-i0), cols: min(tn, op.Problem[2]-j0), seq: seq}
}

// emitPlainMatmul is a matmul block whose accumulators are stored through the
// fixpipe, which rounds to the output dtype.
func emitPlainMatmul(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	out := tg.Tensors[op.Output].Type.Shape
	cv := newMatrixView(e.params[op.Output], out, out, false)
	emitMatmul(e, tg, op, tiles, func(acc int, t outTile) {
		e.emit(isa.TSTORE, isa.GMOp(cv.window(t.batch, t.i0, t.j0, t.rows, t.cols)), isa.TileOp(acc))
	})
}

// emitMatmul generates a cube block: for each output tile, loop over K tiles loading
// the A and B windows into L1, moving them to L0A/L0B and accumulating in L0C, then
// hand the accumulator to store (a fixpipe store, or a push to an epilogue). Edge
// windows are smaller than the tiles; TLOAD zero-fills the rest, so padded K columns
// contribute nothing.
func emitMatmul(e *emitter, tg *TileGraph, op *TileOp, tiles []int, store func(acc int, t outTile)) {
	a, b := tg.Tensors[op.Inputs[0]].Type, tg.Tensors[op.Inputs[1]].Type
	k := op.Problem[3]
	out := tg.Tensors[op.Output].Type.Shape
	tm, tn, tk := op.Tile[0], op.Tile[1], op.Tile[2]
	dt := a.DType
	accType := dtype.Float32
	if core.MatmulResultDType(dt) == dtype.Int32 {
		accType = dtype.Int32
	}
	av := newMatrixView(e.params[op.Inputs[0]], a.Shape, out, op.Attrs.Bool("transpose_a", false))
	bv := newMatrixView(e.params[op.Inputs[1]], b.Shape, out, op.Attrs.Bool("transpose_b", false))

	aMat := e.pingPong("a_l1", isa.Mat, dt, tm, tk)
	bMat := e.pingPong("b_l1", isa.Mat, dt, tk, tn)
	aL0 := e.pingPong("a_l0", isa.Left, dt, tm, tk)
	bL0 := e.pingPong("b_l0", isa.Right, dt, tk, tn)
	acc := e.tile("acc", isa.Acc, accType, tm, tn)

	kTiles := max(1, ceilDiv(k, tk)) // k == 0 still stores a zero tile
	step := 0
	for seq, t := range tiles {
		ot := matmulOutTile(op, t, seq)
		bi, i0, j0, vm, vn := ot.batch, ot.i0, ot.j0, ot.rows, ot.cols
		for kt := 0; kt < kTiles; kt++ {
			s := step % 2
			step++
			p0 := kt * tk
			vk := max(0, min(tk, k-p0))
			e.emit(isa.TLOAD, isa.TileOp(aMat[s]), isa.GMOp(av.window(bi, i0, p0, vm, vk)))
			e.emit(isa.TLOAD, isa.TileOp(bMat[s]), isa.GMOp(bv.window(bi, p0, j0, vk, vn)))
			e.emit(isa.TMOV, isa.TileOp(aL0[s]), isa.TileOp(aMat[s]))
			e.emit(isa.TMOV, isa.TileOp(bL0[s]), isa.TileOp(bMat[s]))
			mm := isa.TMATMUL
			if kt > 0 {
				mm = isa.TMATMUL_ACC
			}
			e.emit(mm, isa.TileOp(acc), isa.TileOp(aL0[s]), isa.TileOp(bL0[s]))
		}
		store(acc, ot)
	}
}
