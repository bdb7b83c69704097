package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// matrixView addresses op(X) for the matrices of a tensor X [batch..., rows, cols]:
// element (i, j) of op(X) in batch b is X[b, i, j], or X[b, j, i] when transposed, at
// offset + b's batch offset + i*rowStride + j*colStride of the param (swapped when
// transposed). A contiguous X has rowStride = cols and colStride = 1; a folded view
// (a slice or transpose of another tensor, fold_views.go) has its own strides.
// Transposition is a strided GM view, so it costs no separate pass over the data;
// batch dimensions broadcast like an elementwise op's (stride 0).
type matrixView struct {
	param                int
	offset               int
	rowStride, colStride int
	transposed           bool
	batch                core.Shape // batch dims of the output
	batchStrides         []int      // element stride of each output batch dim in X
}

// newMatrixView views a contiguous X of shape x for an output of shape out.
func newMatrixView(param int, x, out core.Shape, transposed bool) matrixView {
	return newStridedMatrixView(param, x, affineMap{strides: x.Strides()}, out, transposed)
}

// newStridedMatrixView views X of shape x whose element index k lies at m.offset +
// sum(k_i * m.strides_i) of the param.
func newStridedMatrixView(param int, x core.Shape, m affineMap, out core.Shape, transposed bool) matrixView {
	nb, r := len(out)-2, len(x)
	st := make([]int, nb)
	for ax := range nb { // X's batch dims align with the output's last ones; size 1 broadcasts
		if k := r - 2 - (nb - ax); k >= 0 && x[k] != 1 {
			st[ax] = m.strides[k]
		}
	}
	return matrixView{param: param, offset: m.offset, rowStride: m.strides[r-2], colStride: m.strides[r-1],
		transposed: transposed, batch: out[:nb], batchStrides: st}
}

// operandView is the matrix view of input t of a matrix kernel: t's own param, or
// the owner's for a folded view.
func operandView(e *emitter, tg *TileGraph, t int, out core.Shape, transposed bool) matrixView {
	x := tg.Tensors[t]
	if x.View != nil {
		return newStridedMatrixView(e.params[t], x.Type.Shape, *x.View, out, transposed)
	}
	return newMatrixView(e.params[t], x.Type.Shape, out, transposed)
}

// window is the rows x cols window at (i0, j0) of op(X) in batch b (row-major index
// over the output's batch dims).
func (v matrixView) window(b, i0, j0, rows, cols int) isa.GMView {
	base := v.offset
	for ax := len(v.batch) - 1; ax >= 0; ax-- {
		base += (b % v.batch[ax]) * v.batchStrides[ax]
		b /= v.batch[ax]
	}
	if v.transposed { // element (r, c) of the window is X[j0+c, i0+r]
		return isa.GMView{Param: v.param, Offset: base + j0*v.rowStride + i0*v.colStride, Rows: rows, Cols: cols, RowStride: v.colStride, ColStride: v.rowStride}
	}
	return isa.GMView{Param: v.param, Offset: base + i0*v.rowStride + j0*v.colStride, Rows: rows, Cols: cols, RowStride: v.rowStride, ColStride: v.colStride}
}

// outTile is one output tile of a matmul block: its batch index, first row and column,
// valid rows and columns, the K chunk it sums (0 unless K is split) and its position
// among the block's tiles.
type outTile struct {
	batch, i0, j0, rows, cols int
	kChunk                    int
	seq                       int
}

// matmulOutTile locates flat tile index t of a matmul op's grid [batch, m/tm, n/tn,
// k/kc] (row-major).
func matmulOutTile(op *TileOp, t, seq int) outTile {
	tm, tn := op.Tile[0], op.Tile[1]
	gm, gn, gk := op.Grid[1], op.Grid[2], op.Grid[3]
	ki, ni, mi, bi := t%gk, t/gk%gn, t/(gk*gn)%gm, t/(gk*gn*gm)
	i0, j0 := mi*tm, ni*tn
	return outTile{batch: bi, i0: i0, j0: j0, rows: min(tm, op.Problem[1]-i0), cols: min(tn, op.Problem[2]-j0), kChunk: ki, seq: seq}
}

// matmulOutShape is the shape of the matmul's result: its output tensor's, or with K
// split the workspace's without its leading axis, the K chunk.
func matmulOutShape(tg *TileGraph, op *TileOp) core.Shape {
	out := tg.Tensors[op.Output].Type.Shape
	if op.Grid[3] > 1 {
		return out[1:]
	}
	return out
}

// emitPlainMatmul is a matmul block whose accumulators are stored through the
// fixpipe, which rounds to the output dtype; with K split, each chunk's partial sum
// goes to its plane of the fp32 workspace (split_k.go adds them).
func emitPlainMatmul(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	out := matmulOutShape(tg, op)
	cv := newMatrixView(e.params[op.Output], out, out, false)
	emitMatmul(e, tg, op, tiles, 1, func(acc []int, t outTile) {
		view := cv.window(t.batch, t.i0, t.j0, t.rows, t.cols)
		view.Offset += t.kChunk * out.NumElements()
		e.emit(isa.TSTORE, isa.GMOp(view), isa.TileOp(acc[0]))
	})
}

// emitMatmul generates a cube block with the structure of the hand-tuned kernel
// (device/calib): per output tile, K advances in stages; a stage loads stepK base
// blocks of A (tm x stepK*tk) and B (stepK*tk x tn) into L1 with one TLOAD each, then
// extracts each base block into L0A / L0B and accumulates it in L0C. The two L1
// copies alternate by stage and the two L0A / L0B pairs by base block, so the
// backend's flags let the loads of the next stage run under this stage's matmuls and
// the extracts of the next block under this block's; the code is straight-line, so
// the next tile's first loads also start before this tile's store. Each finished
// accumulator goes to store (a fixpipe store, or a push to an epilogue). With parts
// > 1 the accumulator is parts tiles of tm/parts rows each (each A base block is
// extracted to L0A in as many row parts, each multiplied by the same B block), so that
// an epilogue can give each part to another vector core.
//
// Edge windows are smaller than the tiles: TLOAD zero-fills the rest, so padded K
// columns add nothing, and base blocks wholly past K are skipped. With K split
// (kc < k) each grid point covers one chunk of K.
func emitMatmul(e *emitter, tg *TileGraph, op *TileOp, tiles []int, parts int, store func(acc []int, t outTile)) {
	a := tg.Tensors[op.Inputs[0]].Type
	k := op.Problem[3]
	t := matmulTilingOf(op.Tile)
	out := matmulOutShape(tg, op)
	dt := a.DType
	av := operandView(e, tg, op.Inputs[0], out, op.Attrs.Bool("transpose_a", false))
	bv := operandView(e, tg, op.Inputs[1], out, op.Attrs.Bool("transpose_b", false))

	kS := t.stageK()
	// Straight-line code of the whole block: per tile and stage two loads and per base
	// block the extracts and matmuls, each with about one flag.
	stages := max(1, ceilDiv(min(t.kc, max(k, 1)), kS))
	perStage := 2 + ceilDiv(kS, t.tk)*(2*parts+1)
	kLoops := loopsPay(e.codeBudget, 2*len(tiles)*stages*perStage)
	resident := 0
	if residentA(e, op, t, tiles, stages, dt.Size(), kLoops) {
		resident = stages
	}
	st := newMatmulStages(e, t, dt, parts, resident)
	// emitStage loads the stage of K at p0 (vk deep) into L1 and runs its base blocks;
	// a loop's stages move their GM windows by the registers aoff and boff.
	emitStage := func(ot outTile, p0, vk int, first bool, aoff, boff isa.RegRef) {
		aw, bw := av.window(ot.batch, ot.i0, p0, ot.rows, vk), bv.window(ot.batch, p0, ot.j0, vk, ot.cols)
		aw.OffsetReg, bw.OffsetReg = aoff, boff
		st.run(aw, bw, vk, first, (p0-ot.kChunk*t.kc)/kS)
	}
	var loopRegs *kLoopRegs
	var prev outTile
	for seq, ti := range tiles {
		ot := matmulOutTile(op, ti, seq)
		st.loadA = resident == 0 || seq == 0 || ot.batch != prev.batch || ot.i0 != prev.i0
		prev = ot
		k0, k1 := ot.kChunk*t.kc, min(k, (ot.kChunk+1)*t.kc)
		// k == 0 still runs one (empty) stage, so that the tile stores zeros.
		emitStage(ot, k0, max(0, min(kS, k1-k0)), true, 0, 0)
		p0 := k0 + kS
		if iters := (k1 - p0) / (2 * kS); kLoops && iters >= minKLoopTrips {
			// Full stages, two per iteration (the L1 copies ping-pong by stage, and a
			// stage has an even or odd number of base blocks alike every time, so every
			// iteration uses the same tiles).
			if loopRegs == nil {
				loopRegs = &kLoopRegs{e.reg("ks"), e.reg("aoff"), e.reg("boff")}
			}
			r := loopRegs
			da := av.window(ot.batch, ot.i0, p0+2*kS, ot.rows, kS).Offset - av.window(ot.batch, ot.i0, p0, ot.rows, kS).Offset
			db := bv.window(ot.batch, p0+2*kS, ot.j0, kS, ot.cols).Offset - bv.window(ot.batch, p0, ot.j0, kS, ot.cols).Offset
			e.emit(isa.LOOP, isa.RegOp(r.counter), isa.ImmOp(float64(iters)))
			e.emit(isa.SMUL, isa.RegOp(r.aoff), isa.RegOp(r.counter), isa.ImmOp(float64(da)))
			e.emit(isa.SMUL, isa.RegOp(r.boff), isa.RegOp(r.counter), isa.ImmOp(float64(db)))
			for h := range 2 {
				emitStage(ot, p0+h*kS, kS, false, isa.UseReg(r.aoff), isa.UseReg(r.boff))
			}
			e.emit(isa.ENDLOOP)
			p0 += 2 * iters * kS
		}
		for ; p0 < k1; p0 += kS {
			emitStage(ot, p0, min(kS, k1-p0), false, 0, 0)
		}
		store(st.acc, ot)
	}
}

// matmulStages are a matmul block's L1, L0 and accumulator tiles, and which copy the
// next stage of K and the next base block use.
type matmulStages struct {
	e          *emitter
	t          matmulTiling
	parts, pm  int
	aMat, bMat [2]int
	// aStages, when A stays resident in L1 (residentA), are a tile of its own per K
	// stage of a tile, loaded by the first tile of a row of output tiles (loadA) and
	// read again by the others; otherwise A ping-pongs in aMat like B.
	aStages      []int
	loadA        bool
	aL0          [][2]int
	bL0          [2]int
	acc          []int
	stage, block int
}

// newMatmulStages declares the tiles of a matmul block whose accumulator is parts
// tiles of tm/parts rows, with A's resident K stages in L1 (none: A ping-pongs).
func newMatmulStages(e *emitter, t matmulTiling, dt dtype.DType, parts, resident int) *matmulStages {
	kS := t.stageK()
	s := &matmulStages{e: e, t: t, parts: parts, pm: t.tm / parts, loadA: true}
	if resident > 0 {
		for i := range resident {
			s.aStages = append(s.aStages, e.tile(fmt.Sprintf("a_l1_k%d", i), isa.Mat, dt, t.tm, kS))
		}
	} else {
		s.aMat = e.pingPong("a_l1", isa.Mat, dt, t.tm, kS)
	}
	s.bMat = e.pingPong("b_l1", isa.Mat, dt, kS, t.tn)
	s.aL0 = make([][2]int, parts)
	for p := range parts {
		s.aL0[p] = e.pingPong(partName("a_l0", p, parts), isa.Left, dt, s.pm, t.tk)
	}
	s.bL0 = e.pingPong("b_l0", isa.Right, dt, t.tk, t.tn)
	s.acc = make([]int, parts)
	for p := range parts {
		s.acc[p] = e.tile(partName("acc", p, parts), isa.Acc, accType(dt), s.pm, t.tn)
	}
	return s
}

// run loads one stage of K, vk deep, from the windows aw (of A) and bw (of B) into L1
// and runs its base blocks; first starts the accumulation (at least one base block
// runs then, so that an empty K stores zeros). i is the stage's index in its tile's
// K (which resident tile holds A).
func (s *matmulStages) run(aw, bw isa.GMView, vk int, first bool, i int) {
	e, t := s.e, s.t
	m := s.stage % 2
	s.stage++
	aTile := s.aMat[m]
	if s.aStages != nil {
		aTile = s.aStages[i]
	}
	if s.loadA {
		e.emit(isa.TLOAD, isa.TileOp(aTile), isa.GMOp(aw))
	}
	e.emit(isa.TLOAD, isa.TileOp(s.bMat[m]), isa.GMOp(bw))
	for j := 0; j*t.tk < vk || first; j++ {
		l := s.block % 2
		s.block++
		for p := range s.parts {
			e.emit(isa.TEXTRACT, isa.TileOp(s.aL0[p][l]), isa.TileOp(aTile), isa.ImmOp(float64(p*s.pm)), isa.ImmOp(float64(j*t.tk)))
		}
		e.emit(isa.TEXTRACT, isa.TileOp(s.bL0[l]), isa.TileOp(s.bMat[m]), isa.ImmOp(float64(j*t.tk)), isa.ImmOp(0))
		mm := isa.TMATMUL_ACC
		if first {
			mm = isa.TMATMUL
		}
		for p := range s.parts {
			e.emit(mm, isa.TileOp(s.acc[p]), isa.TileOp(s.aL0[p][l]), isa.TileOp(s.bL0[l]))
		}
		first = false
	}
}

// residentA reports whether a matmul block keeps A's K stages in L1 for the tiles of
// a row of output tiles, loading them once per row instead of once per tile: when
// consecutive tiles of the block share their rows, K is not split, the code is
// straight-line (loops reuse one pair of L1 tiles) and the stages fit the cube core's
// L1 beside the two B stages.
func residentA(e *emitter, op *TileOp, t matmulTiling, tiles []int, stages, size int, kLoops bool) bool {
	if kLoops || op.Grid[3] > 1 || e.l1Bytes == 0 || stages*t.tm*t.stageK()*size+2*t.stageK()*t.tn*size > e.l1Bytes {
		return false
	}
	for seq := 1; seq < len(tiles); seq++ {
		a, b := matmulOutTile(op, tiles[seq-1], seq-1), matmulOutTile(op, tiles[seq], seq)
		if a.batch == b.batch && a.i0 == b.i0 {
			return true
		}
	}
	return false
}

// minKLoopTrips is the fewest iterations (two stages each) for which a tile's K
// stages become a loop (when loops pay, codegen_loops.go): from two on, the loop is
// the smaller code.
const minKLoopTrips = 2

// kLoopRegs are the registers of a matmul's K loops: the counter and the offsets
// its GM windows move by.
type kLoopRegs struct{ counter, aoff, boff int }

// partName names row part p of a tile cut into parts ("acc", or "acc_p1").
func partName(base string, p, parts int) string {
	if parts == 1 {
		return base
	}
	return fmt.Sprintf("%s_p%d", base, p)
}
