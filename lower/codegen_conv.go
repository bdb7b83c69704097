package lower

import (
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// The cube convolution (conv2d_5hd, made by the conv-to-cube pass): an implicit GEMM
// in the hardware's way. Its output tiles are rb output rows (rb*OW pixels) of one
// image by tn output channels. For each channel group c1 a tile loads the input rows
// its outputs need from the 5HD activations into L1 (one contiguous window: the
// group's rows are H x W*C0), expands them on chip with TIMG2COL into the L0A matrix
// [pixels, KH*KW*C0], takes the group's rows of the weight into L0B and accumulates
// their product in L0C; the first product adds the bias from the bias table and the
// fixpipe applies relu on the way out. The weight columns of the tile's channels stay
// in L1 for every tile of a block that shares them (blocks are contiguous runs of
// tiles in (channel tile, image, row band) order), so the activations are the only
// operand streamed from GM, and nothing of the im2col matrix ever reaches GM.

// convProblem is [n, oh, ow, o, c1, kh, kw, s, wp] (wp: the padded input width).
type convProblem struct{ n, oh, ow, o, c1, kh, kw, s, wp int }

func convProblemOf(p []int) convProblem {
	return convProblem{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]}
}

func (p convProblem) list() []int { return []int{p.n, p.oh, p.ow, p.o, p.c1, p.kh, p.kw, p.s, p.wp} }

// kc is the K of one channel group: KH*KW*C0.
func (p convProblem) kc() int { return p.kh * p.kw * core.ConvC0 }

// inRows is the input rows rb output rows read.
func (p convProblem) inRows(rb int) int { return (rb-1)*p.s + p.kh }

// convTile chooses [rb, tn] for the chip: the L0A copies hold rb*OW pixels (at most
// maxConvPixels) of one group's K, the L0B copies a group's K by tn, the two
// accumulators rb*OW by tn, and L1 the tile's weight columns of every group beside
// two input bands; tn is at most the bias table's. Among the shapes that fit it takes
// the one with the most MACs per operand element moved into L0 (pix*tn / (pix+tn),
// the cube's arithmetic intensity), tn evened out over the channel tiles, ties to the
// larger tn. It fails when not even one output row fits.
func convTile(chip *device.Chip, p convProblem, dt dtype.DType) ([]int, string, error) {
	size := dt.Size()
	kc := p.kc()
	pixA := chip.Capacity(isa.Left) / 2 / (kc * size) / 16 * 16
	pixMax := min(pixA, maxConvPixels)
	if roundUp(p.ow, 16) > pixMax {
		return nil, "", fmt.Errorf("an output row of %d pixels by K %d (KH*KW*C0) does not fit the L0A's double buffer (%d pixels)", p.ow, kc, pixA)
	}
	tnMax := min(roundUp(p.o, 16), chip.Capacity(isa.Bias)/4/16*16, chip.Capacity(isa.Right)/2/(kc*size)/16*16)
	best, bestScore := []int(nil), 0.0
	for rb := 1; rb <= p.oh && roundUp(rb*p.ow, 16) <= pixMax; rb++ {
		pix := roundUp(rb*p.ow, 16)
		band := 2 * p.inRows(rb) * p.wp * core.ConvC0 * size
		for t := 16; t <= tnMax; t += 16 {
			tn := roundUp(ceilDiv(p.o, ceilDiv(p.o, t)), 16)
			if p.c1*kc*tn*size+band+tn*4 > chip.Capacity(isa.Mat) || 2*pix*tn*4 > chip.Capacity(isa.Acc) {
				continue
			}
			useful := float64(rb*p.ow) * float64(min(tn, p.o))
			if score := useful / float64(pix+tn); score > bestScore || score == bestScore && tn > best[1] {
				best, bestScore = []int{rb, tn}, score
			}
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("16 output channels of the %d x %d weight do not fit L1 (%d bytes) beside two input bands, or one output row's accumulators L0C", p.c1*kc, p.o, chip.Capacity(isa.Mat))
	}
	reason := fmt.Sprintf("%d output rows of %d pixels (L0A holds %d pixels of K %d twice), %d of %d output channels (weight columns resident in L1): the most MACs per element moved into L0", best[0], p.ow, pixA, kc, best[1], p.o)
	return best, reason, nil
}

// maxConvPixels bounds the pixels of a tile: 128 rows of the accumulator are as many
// as the hand-tuned GEMM's base block has (baseM, npu-facts.md), so a convolution's
// matmuls have the GEMM's shape.
const maxConvPixels = 128

func convGrid(p convProblem, tile []int) []int {
	return []int{ceilDiv(p.o, tile[1]), p.n, ceilDiv(p.oh, tile[0])}
}

// emitConv generates one block of a conv2d_5hd: the tiles in order, each the loop over
// channel groups described above, then its store.
func emitConv(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	p := convProblemOf(op.Problem)
	rb, tn := op.Tile[0], op.Tile[1]
	x := tg.Tensors[op.Inputs[0]].Type
	dt := x.DType
	hp := x.Shape[2]
	kc := p.kc()
	rowLen := p.wp * core.ConvC0 // elements of one input row of a group
	pix := roundUp(rb*p.ow, 16)
	bias := len(op.Inputs) == 3
	relu := op.Attrs.Bool("relu", false)

	xMat := e.pingPong("x_l1", isa.Mat, dt, p.inRows(rb), rowLen)
	wMat := e.tile("w_l1", isa.Mat, dt, p.c1*kc, tn)
	aL0 := e.pingPong("a_l0", isa.Left, dt, pix, kc)
	bL0 := e.pingPong("b_l0", isa.Right, dt, kc, tn)
	acc := e.pingPong("acc", isa.Acc, dtype.Float32, pix, tn)
	var bMat, bt int
	if bias {
		bMat = e.tile("bias_l1", isa.Mat, dtype.Float32, 1, tn)
		bt = e.tile("bias_bt", isa.Bias, dtype.Float32, 1, tn)
	}
	xp, wp, outp := e.params[op.Inputs[0]], e.params[op.Inputs[1]], e.params[op.Output]
	grid := op.Grid
	ni0 := -1
	step := 0
	for seq, t := range tiles {
		bi, b, ni := t%grid[2], t/grid[2]%grid[1], t/(grid[2]*grid[1])
		j0, r0 := ni*tn, bi*rb
		vc, vr := min(tn, p.o-j0), min(rb, p.oh-r0)
		if ni != ni0 { // the weight columns of this channel tile, for every group
			ni0 = ni
			e.emit(isa.TLOAD, isa.TileOp(wMat), isa.GMOp(isa.GMView{Param: wp, Offset: j0, Rows: p.c1 * kc, Cols: vc, RowStride: p.o, ColStride: 1}))
			if bias {
				e.emit(isa.TLOAD, isa.TileOp(bMat), isa.GMOp(isa.GMView{Param: e.params[op.Inputs[2]], Offset: j0, Rows: 1, Cols: vc, RowStride: vc, ColStride: 1}))
				e.emit(isa.TMOV, isa.TileOp(bt), isa.TileOp(bMat))
			}
		}
		a := acc[seq%2]
		inRows := min(p.inRows(rb), hp-r0*p.s)
		for g := range p.c1 {
			l := step % 2
			step++
			off := ((b*p.c1+g)*hp + r0*p.s) * rowLen
			e.emit(isa.TLOAD, isa.TileOp(xMat[l]), isa.GMOp(isa.GMView{Param: xp, Offset: off, Rows: inRows, Cols: rowLen, RowStride: rowLen, ColStride: 1}))
			e.emit(isa.TIMG2COL, isa.TileOp(aL0[l]), isa.TileOp(xMat[l]), isa.ImmOp(core.ConvC0), isa.ImmOp(float64(p.kh)), isa.ImmOp(float64(p.kw)), isa.ImmOp(float64(p.s)), isa.ImmOp(0))
			e.emit(isa.TEXTRACT, isa.TileOp(bL0[l]), isa.TileOp(wMat), isa.ImmOp(float64(g*kc)), isa.ImmOp(0))
			switch {
			case g > 0:
				e.emit(isa.TMATMUL_ACC, isa.TileOp(a), isa.TileOp(aL0[l]), isa.TileOp(bL0[l]))
			case bias:
				e.emit(isa.TMATMUL_BIAS, isa.TileOp(a), isa.TileOp(aL0[l]), isa.TileOp(bL0[l]), isa.TileOp(bt))
			default:
				e.emit(isa.TMATMUL, isa.TileOp(a), isa.TileOp(aL0[l]), isa.TileOp(bL0[l]))
			}
		}
		out := isa.GMView{Param: outp, Offset: (b*p.oh + r0) * p.ow * p.o, Rows: vr * p.ow, Cols: vc, RowStride: p.o, ColStride: 1}
		out.Offset += j0
		mode := isa.ModeNone
		if relu {
			mode = isa.StoreRelu
		}
		e.prog.Body = append(e.prog.Body, isa.Instr{Op: isa.TSTORE, Mode: mode, Args: e.operands([]isa.Operand{isa.GMOp(out), isa.TileOp(a)})})
	}
}

// convBlocks cuts the tiles into nb contiguous runs in (channel tile, image, row band)
// order, so that a block reloads the weight only when its channel tile changes.
func convBlocks(op *TileOp, nb int) [][]int {
	n := op.NumTiles()
	blocks := make([][]int, nb)
	for b := range blocks {
		for t := b * n / nb; t < (b+1)*n/nb; t++ {
			blocks[b] = append(blocks[b], t)
		}
	}
	return blocks
}

func init() {
	lowerings["conv2d_5hd"] = lowering{kind: TileConv, core: isa.Cube}
}
