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
// its outputs need straight from the NCHW or NHWC activations into L1 as one 5HD band
// (pixel-major, the group's 16 channels a 32-byte row: a load of the transposed view
// for NCHW, of 32-byte runs for NHWC), expands it on chip with TIMG2COL into the L0A
// matrix [pixels, KH*KW*C0], applying the convolution's padding there (the rows above
// and the columns at the sides are zero, the rows below lie past the band), takes the
// group's rows of the weight into L0B and accumulates their product in L0C; the first
// product adds the bias from the bias table and the fixpipe applies relu on the way
// out, writing NHWC rows or NCHW columns. The weight columns of the tile's channels
// stay in L1 for every tile of a block that shares them (blocks are contiguous runs of
// tiles in (channel tile, image, row band) order), so the activations are the only
// operand streamed from GM, no layout conversion of them runs as a kernel of its own,
// and nothing of the im2col matrix ever reaches GM.

// convProblem is [n, oh, ow, o, c1, kh, kw, s, h, w, pt, pl, pr]: the output's sizes,
// the channel groups, the kernel and stride, the input's rows and columns and the
// padding above, left and right (below is what the output rows leave).
type convProblem struct{ n, oh, ow, o, c1, kh, kw, s, h, w, pt, pl, pr int }

func convProblemOf(p []int) convProblem {
	return convProblem{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12]}
}

func (p convProblem) list() []int {
	return []int{p.n, p.oh, p.ow, p.o, p.c1, p.kh, p.kw, p.s, p.h, p.w, p.pt, p.pl, p.pr}
}

// newConvProblem is the problem of a convolution of n images of c channels, h x w, to
// o channels with a kh x kw kernel, stride s and pads (top, bottom, left, right).
func newConvProblem(n, c, h, w, o, kh, kw, s int, pads []int) convProblem {
	return convProblem{n: n, oh: (h+pads[0]+pads[1]-kh)/s + 1, ow: (w+pads[2]+pads[3]-kw)/s + 1, o: o, c1: ceilDiv(c, core.ConvC0),
		kh: kh, kw: kw, s: s, h: h, w: w, pt: pads[0], pl: pads[2], pr: pads[3]}
}

// conv5HDProblem is the problem of a conv2d_5hd with input x, result out and attrs.
func conv5HDProblem(x, out core.TensorType, attrs core.Attrs) convProblem {
	n, c, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	if core.Conv5HDLayoutNHWC(attrs, false) {
		c, h, w = x.Shape[3], x.Shape[1], x.Shape[2]
	}
	o := out.Shape[1]
	if core.Conv5HDLayoutNHWC(attrs, true) {
		o = out.Shape[3]
	}
	k := attrs.Ints("kernel")
	return newConvProblem(n, c, h, w, o, k[0], k[1], attrs.Int("stride", 1), attrs.Ints("pads"))
}

// kc is the K of one channel group: KH*KW*C0.
func (p convProblem) kc() int { return p.kh * p.kw * core.ConvC0 }

// inRows is the input rows rb output rows read (at most: padding needs fewer).
func (p convProblem) inRows(rb int) int { return (rb-1)*p.s + p.kh }

// band is the input rows [lo, hi) that output rows r0 .. r0+vr-1 read, and the rows
// of padding above the first of them.
func (p convProblem) band(r0, vr int) (lo, hi, pt int) {
	first := r0*p.s - p.pt
	lo, hi = max(0, first), min(p.h, (r0+vr-1)*p.s-p.pt+p.kh)
	return lo, hi, lo - first
}

// convTile chooses [rb, tn, gs] for the chip: gs channel groups go to the cube per
// step (more than one only for a 1x1 kernel, whose patch rows are the channels in
// order, so gs groups are one K of gs*16: as many as divide C1 up to maxConvStepK);
// the L0A copies hold rb*OW pixels (at most maxConvPixels) of a step's K, the L0B
// copies a step's K by tn, the two accumulators rb*OW by tn, and L1 the tile's weight
// columns of every group beside two input bands; tn is at most the bias table's.
// Among the shapes that fit it takes the one with the most MACs per operand element
// moved into L0 (pix*tn / (pix+tn), the cube's arithmetic intensity), tn evened out
// over the channel tiles, ties to the larger tn. An epilogue on the vector cores
// (fused_conv2d_5hd) needs epi.bytes of a vector core's UB per element of the tile,
// which bounds pixels by channels too, and tn a multiple of its steps' column
// alignment. It fails when not even one output row fits.
func convTile(chip *device.Chip, p convProblem, dt dtype.DType, epi convEpilogue) ([]int, string, error) {
	size := dt.Size()
	gs := 1
	if p.kh*p.kw == 1 {
		for d := 1; d <= p.c1 && d*core.ConvC0 <= maxConvStepK; d++ {
			if p.c1%d == 0 {
				gs = d
			}
		}
	}
	var pixA int
	for ; gs >= 1; gs-- {
		if p.c1%gs != 0 {
			continue
		}
		if pixA = chip.Capacity(isa.Left) / 2 / (gs * p.kc() * size) / 16 * 16; roundUp(p.ow, 16) <= min(pixA, maxConvPixels) {
			break
		}
	}
	ks := max(gs, 1) * p.kc()
	if gs < 1 {
		return nil, "", fmt.Errorf("an output row of %d pixels by K %d (KH*KW*C0) does not fit the L0A's double buffer (%d pixels)", p.ow, p.kc(), pixA)
	}
	pixMax := min(pixA, maxConvPixels)
	tnMax := min(roundUp(p.o, 16), chip.Capacity(isa.Bias)/4/16*16, chip.Capacity(isa.Right)/2/(ks*size)/16*16)
	best, bestScore := []int(nil), 0.0
	for rb := 1; rb <= p.oh && roundUp(rb*p.ow, 16) <= pixMax; rb++ {
		pix := roundUp(rb*p.ow, 16)
		band := 2 * p.inRows(rb) * p.w * gs * core.ConvC0 * size
		step := max(16, epi.colAlign)
		for t := step; t <= tnMax; t += step {
			tn := roundUp(ceilDiv(p.o, ceilDiv(p.o, t)), step)
			if p.c1*p.kc()*tn*size+band+tn*4 > chip.Capacity(isa.Mat) || 2*pix*tn*4 > chip.Capacity(isa.Acc) || pix*tn*epi.bytes > chip.Capacity(isa.Vec) {
				continue
			}
			useful := float64(rb*p.ow) * float64(min(tn, p.o))
			if score := useful / float64(pix+tn); score > bestScore || score == bestScore && tn > best[1] {
				best, bestScore = []int{rb, tn, gs}, score
			}
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("16 output channels of the %d x %d weight do not fit L1 (%d bytes) beside two input bands, or one output row's accumulators L0C or its epilogue a vector core's UB", p.c1*p.kc(), p.o, chip.Capacity(isa.Mat))
	}
	reason := fmt.Sprintf("%d output rows of %d pixels (L0A holds %d pixels of K %d twice), %d of %d output channels (weight columns resident in L1), %d channel groups a step: the most MACs per element moved into L0", best[0], p.ow, pixA, ks, best[1], p.o, gs)
	if epi.bytes > 0 {
		reason += fmt.Sprintf("; the epilogue's %d bytes an element fit a vector core's UB", epi.bytes)
	}
	return best, reason, nil
}

// maxConvStepK bounds the K of one step of a 1x1 convolution: the hand-tuned GEMM's
// base block K (baseK, docs/sources.md "gemm-table").
const maxConvStepK = 128

// maxConvPixels bounds the pixels of a tile: 128 rows of the accumulator are as many
// as the hand-tuned GEMM's base block has (baseM, docs/sources.md "gemm-table"), so a convolution's
// matmuls have the GEMM's shape.
const maxConvPixels = 128

func convGrid(p convProblem, tile []int) []int {
	return []int{ceilDiv(p.o, tile[1]), p.n, ceilDiv(p.oh, tile[0])}
}

// emitConv generates one block of a conv2d_5hd: the tiles in order, each the loop over
// channel groups described above, then its store (the fixpipe's relu when set).
func emitConv(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	mode := isa.ModeNone
	if op.Attrs.Bool("relu", false) {
		mode = isa.StoreRelu
	}
	emitConvCube(e, tg, op, tiles, func(acc int, out isa.GMView, _ int) {
		e.prog.Body = append(e.prog.Body, isa.Instr{Op: isa.TSTORE, Mode: mode, Args: e.operands([]isa.Operand{isa.GMOp(out), isa.TileOp(acc)})})
	})
}

// convOutView is the GM window of the output tile of vr rows of pixels from row r0
// by vc channels from j0 of image b: NHWC rows of channels, or NCHW with each
// channel's OH*OW plane a column.
func convOutView(p convProblem, attrs core.Attrs, param, b, r0, j0, vr, vc int) isa.GMView {
	if core.Conv5HDLayoutNHWC(attrs, true) {
		return isa.GMView{Param: param, Offset: (b*p.oh+r0)*p.ow*p.o + j0, Rows: vr * p.ow, Cols: vc, RowStride: p.o, ColStride: 1}
	}
	return isa.GMView{Param: param, Offset: (b*p.o+j0)*p.oh*p.ow + r0*p.ow, Rows: vr * p.ow, Cols: vc, RowStride: 1, ColStride: p.oh * p.ow}
}

// emitConvCube generates the cube's part of a block of a convolution: per tile the
// loop over channel groups into an accumulator, then store(acc, the tile's output
// window, the tile's position in the block).
func emitConvCube(e *emitter, tg *TileGraph, op *TileOp, tiles []int, store func(acc int, out isa.GMView, seq int)) {
	p := convProblemOf(op.Problem)
	rb, tn, gs := op.Tile[0], op.Tile[1], op.Tile[2]
	x := tg.Tensors[op.Inputs[0]].Type
	dt := x.DType
	c0 := core.ConvC0
	kc := p.kc()
	ks := gs * kc // a step's K: gs channel groups (gs > 1 only for a 1x1 kernel)
	pix := roundUp(rb*p.ow, 16)
	bias := convHasBias(op)
	// The input's strides in elements: a pixel's, a channel's and an image's.
	ch := x.Shape[1]
	pixStride, chStride := 1, p.h*p.w
	if core.Conv5HDLayoutNHWC(op.Attrs, false) {
		ch = x.Shape[3]
		pixStride, chStride = ch, 1
	}
	image := ch * p.h * p.w

	xMat := e.pingPong("x_l1", isa.Mat, dt, p.inRows(rb)*p.w, gs*c0)
	wMat := e.tile("w_l1", isa.Mat, dt, p.c1*kc, tn)
	aL0 := e.pingPong("a_l0", isa.Left, dt, pix, ks)
	bL0 := e.pingPong("b_l0", isa.Right, dt, ks, tn)
	acc := e.pingPong("acc", isa.Acc, dtype.Float32, pix, tn)
	var bMat, bt int
	if bias {
		bMat = e.tile("bias_l1", isa.Mat, dtype.Float32, 1, tn)
		bt = e.tile("bias_bt", isa.Bias, dtype.Float32, 1, tn)
	}
	xp, wp, outp := e.params[op.Inputs[0]], e.params[op.Inputs[1]], e.params[op.Output]
	ni0 := -1
	step := 0
	for seq, t := range tiles {
		b, r0, j0, vr, vc := convTileAt(p, op, t)
		if ni := j0 / tn; ni != ni0 { // the weight columns of this channel tile, for every group
			ni0 = ni
			e.emit(isa.TLOAD, isa.TileOp(wMat), isa.GMOp(isa.GMView{Param: wp, Offset: j0, Rows: p.c1 * kc, Cols: vc, RowStride: p.o, ColStride: 1}))
			if bias {
				e.emit(isa.TLOAD, isa.TileOp(bMat), isa.GMOp(isa.GMView{Param: e.params[op.Inputs[2]], Offset: j0, Rows: 1, Cols: vc, RowStride: vc, ColStride: 1}))
				e.emit(isa.TMOV, isa.TileOp(bt), isa.TileOp(bMat))
			}
		}
		a := acc[seq%2]
		lo, hi, pt := p.band(r0, vr)
		for g := 0; g < p.c1; g += gs {
			l := step % 2
			step++
			in := isa.GMView{Param: xp, Offset: b*image + g*c0*chStride + lo*p.w*pixStride, Rows: (hi - lo) * p.w, Cols: min(gs*c0, ch-g*c0), RowStride: pixStride, ColStride: chStride}
			e.emit(isa.TLOAD, isa.TileOp(xMat[l]), isa.GMOp(in))
			e.emit(isa.TIMG2COL, isa.TileOp(aL0[l]), isa.TileOp(xMat[l]), isa.ImmOp(float64(p.w)), isa.ImmOp(float64(p.kh)), isa.ImmOp(float64(p.kw)), isa.ImmOp(float64(p.s)),
				isa.ImmOp(float64(p.pl)), isa.ImmOp(float64(p.pr)), isa.ImmOp(float64(pt)), isa.ImmOp(float64(vr)))
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
		store(a, convOutView(p, op.Attrs, outp, b, r0, j0, vr, vc), seq)
	}
}

// convTileAt is tile t of a convolution: its image b, its first output row r0 and
// channel j0, and its valid rows and channels.
func convTileAt(p convProblem, op *TileOp, t int) (b, r0, j0, vr, vc int) {
	rb, tn, grid := op.Tile[0], op.Tile[1], op.Grid
	bi, ni := t%grid[2], t/(grid[2]*grid[1])
	b, j0, r0 = t/grid[2]%grid[1], ni*tn, bi*rb
	return b, r0, j0, min(rb, p.oh-r0), min(tn, p.o-j0)
}

// convHasBias reports whether a convolution tile op has a bias input: conv2d_5hd's
// third input, or fused_conv2d_5hd's when its attribute says so.
func convHasBias(op *TileOp) bool {
	if op.Kind == TileConvEpilogue {
		return op.Attrs.Bool("bias", false)
	}
	return len(op.Inputs) == 3
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
	lowerings["fused_conv2d_5hd"] = lowering{kind: TileConvEpilogue, core: isa.Cube}
	groupEmitters[TileConvEpilogue] = emitConvEpilogue
}
