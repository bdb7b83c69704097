package lower

import (
	"fmt"

	"pypto/core"
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

// convPiece is one accumulator a convolution's block stores: sub-block rows r0 ..
// r0+vr-1 of image b by channels j0 .. j0+vc-1.
type convPiece struct{ b, r0, j0, vr, vc int }

// convPieces lists the accumulators of the block's tiles in the order the kernel
// stores them: per tile, its sub-blocks with rows (the last tile of an image may have
// fewer).
func convPieces(p convProblem, op *TileOp, tiles []int) []convPiece {
	rb := op.Tile[0]
	var out []convPiece
	for _, t := range tiles {
		b, r0, j0, vr, vc := convTileAt(p, op, t)
		for a := 0; a*rb < vr; a++ {
			out = append(out, convPiece{b, r0 + a*rb, j0, min(rb, vr-a*rb), vc})
		}
	}
	return out
}

// emitConvCube generates the cube's part of a block of a convolution (convTiling):
// per tile, its K steps, each an L0B operand of the weight extracted from its L1 stage
// and, per sub-block, the input rows its outputs need loaded into L1 as a 5HD band,
// expanded by TIMG2COL into an L0A operand (the padding applied there) and multiplied
// into the sub-block's accumulator (the first step adding the bias from the bias
// table); then store(acc, the sub-block's output window, its position in the block)
// for each sub-block. The weight's rows come a step at a time into a ring of sk steps
// in L1, each loaded sk-1 steps ahead (or the tile's weight columns are resident,
// loaded when the channel tile changes); bands, L0A and L0B operands alternate, so
// loads and moves overlap the cube.
func emitConvCube(e *emitter, tg *TileGraph, op *TileOp, tiles []int, store func(acc int, out isa.GMView, seq int)) {
	p := convProblemOf(op.Problem)
	t := convTilingOf(op.Tile)
	x := tg.Tensors[op.Inputs[0]].Type
	dt := x.DType
	c0 := core.ConvC0
	ks, pix, steps := t.ks(p), t.pix(p), t.steps(p)
	resident := t.resident(p)
	bias := convHasBias(op)
	// The input's strides in elements: a pixel's, a channel's and an image's.
	ch := x.Shape[1]
	pixStride, chStride := 1, p.h*p.w
	if core.Conv5HDLayoutNHWC(op.Attrs, false) {
		ch = x.Shape[3]
		pixStride, chStride = ch, 1
	}
	image := ch * p.h * p.w

	xMat := make([][2]int, t.ra) // each sub-block's bands, alternating by step
	for a := range xMat {
		xMat[a] = e.pingPong(fmt.Sprintf("x%d_l1", a), isa.Mat, dt, p.inRows(t.rb)*p.w, t.gs*c0)
	}
	var wMat []int // the resident weight columns, or a ring of sk steps' weight rows
	if resident {
		wMat = []int{e.tile("w_l1", isa.Mat, dt, steps*ks, t.tn)}
	} else {
		for i := range t.sk {
			wMat = append(wMat, e.tile(fmt.Sprintf("w_l1_%d", i), isa.Mat, dt, ks, t.tn))
		}
	}
	aL0 := e.pingPong("a_l0", isa.Left, dt, pix, ks)
	bL0 := e.pingPong("b_l0", isa.Right, dt, ks, t.tn)
	accs := make([][]int, t.accSets(e.l0cBytes, p))
	for s := range accs {
		for a := range t.ra {
			accs[s] = append(accs[s], e.tile(fmt.Sprintf("acc%d_%d", s, a), isa.Acc, dtype.Float32, pix, t.tn))
		}
	}
	var bMat, bt int
	if bias {
		bMat = e.tile("bias_l1", isa.Mat, dtype.Float32, 1, t.tn)
		bt = e.tile("bias_bt", isa.Bias, dtype.Float32, 1, t.tn)
	}
	xp, wp, outp := e.params[op.Inputs[0]], e.params[op.Inputs[1]], e.params[op.Output]
	// loadSteps loads the weight rows of steps s .. s+n-1 of the channels from j0 (vc
	// of them) into L1 tile w, the window moved by register off (0: none).
	loadSteps := func(w, s, n, j0, vc int, off isa.RegRef) {
		e.emit(isa.TLOAD, isa.TileOp(w), isa.GMOp(isa.GMView{Param: wp, Offset: s*ks*p.o + j0, Rows: min(n, steps-s) * ks, Cols: vc, RowStride: p.o, ColStride: 1, OffsetReg: off}))
	}
	// Where straight-line code would not fit the instruction cache, each tile's steps
	// become a loop of period steps an iteration (codegen_loops.go).
	period := lcm(max(t.sk, 1), 2)
	loops := loopsPay(e.codeBudget, len(tiles)*steps*(6+3*t.ra))
	var regs *[3]int
	// A step's loads go back to back, its bands and the weight rows it fetches ahead,
	// and one flag of the program's own covers them all: MTE2 drains once a step (a set
	// waits for its pipe's transfers) instead of once per load, so their latencies
	// overlap. The flag's id alternates by step, as one-bit flags need. In a loop the
	// backend orders each L1 buffer's reuse with a loop-carried sync from MTE1 to MTE2,
	// which holds an event id for the whole loop: the bands' two copies per sub-block
	// and the ring's slots must fit the chip's ids, else the steps stay straight-line.
	loaded := func(l int) []isa.Operand {
		return []isa.Operand{isa.PipeOp(isa.PipeMTE2), isa.PipeOp(isa.PipeMTE1), isa.ImmOp(float64(l))}
	}
	loops = loops && 2*t.ra+t.sk <= e.flagIDs
	ahead := t.sk - 1 // the steps a weight load runs ahead of its use
	ni0, step, aSeq, piece := -1, 0, 0, 0
	for seq, tile := range tiles {
		b, r0, j0, vr, vc := convTileAt(p, op, tile)
		acc := accs[seq%len(accs)]
		subs := ceilDiv(vr, t.rb)
		if ni := j0 / t.tn; ni != ni0 {
			if bias {
				e.emit(isa.TLOAD, isa.TileOp(bMat), isa.GMOp(isa.GMView{Param: e.params[op.Inputs[2]], Offset: j0, Rows: 1, Cols: vc, RowStride: vc, ColStride: 1}))
				e.emit(isa.TMOV, isa.TileOp(bt), isa.TileOp(bMat))
			}
			if resident {
				loadSteps(wMat[0], 0, steps, j0, vc, 0)
			}
			ni0 = ni
		}
		if !resident { // the ring's first steps; each step then loads the one ahead of it
			for s := range min(ahead, steps) {
				loadSteps(wMat[s%t.sk], s, 1, j0, vc, 0)
			}
		}
		// emitStep emits step s; in a loop, its GM windows move by the registers xoff
		// (the bands) and woff (the weight rows loaded ahead).
		emitStep := func(s int, xoff, woff isa.RegRef) {
			w, row := wMat[0], s*ks
			if !resident {
				w, row = wMat[s%t.sk], 0
			}
			l := step % 2
			step++
			g := s * t.gs
			for a := range subs {
				ra0, va := r0+a*t.rb, min(t.rb, vr-a*t.rb)
				lo, hi, _ := p.band(ra0, va)
				in := isa.GMView{Param: xp, Offset: b*image + g*c0*chStride + lo*p.w*pixStride, Rows: (hi - lo) * p.w, Cols: min(t.gs*c0, ch-g*c0), RowStride: pixStride, ColStride: chStride, OffsetReg: xoff}
				e.emit(isa.TLOAD, isa.TileOp(xMat[a][l]), isa.GMOp(in))
			}
			if next := s + ahead; !resident && next < steps { // into the slot step s-1 read
				loadSteps(wMat[next%t.sk], next, 1, j0, vc, woff)
			}
			e.emit(isa.SET_FLAG, loaded(l)...)
			e.emit(isa.WAIT_FLAG, loaded(l)...)
			e.emit(isa.TEXTRACT, isa.TileOp(bL0[l]), isa.TileOp(w), isa.ImmOp(float64(row)), isa.ImmOp(0))
			for a := range subs {
				ra0, va := r0+a*t.rb, min(t.rb, vr-a*t.rb)
				_, _, pt := p.band(ra0, va)
				al := aL0[aSeq%2]
				aSeq++
				e.emit(isa.TIMG2COL, isa.TileOp(al), isa.TileOp(xMat[a][l]), isa.ImmOp(float64(p.w)), isa.ImmOp(float64(p.kh)), isa.ImmOp(float64(p.kw)), isa.ImmOp(float64(p.s)),
					isa.ImmOp(float64(p.pl)), isa.ImmOp(float64(p.pr)), isa.ImmOp(float64(pt)), isa.ImmOp(float64(va)))
				switch {
				case s > 0:
					e.emit(isa.TMATMUL_ACC, isa.TileOp(acc[a]), isa.TileOp(al), isa.TileOp(bL0[l]))
				case bias:
					e.emit(isa.TMATMUL_BIAS, isa.TileOp(acc[a]), isa.TileOp(al), isa.TileOp(bL0[l]), isa.TileOp(bt))
				default:
					e.emit(isa.TMATMUL, isa.TileOp(acc[a]), isa.TileOp(al), isa.TileOp(bL0[l]))
				}
			}
		}
		emitStep(0, 0, 0)
		s := 1
		// Steps with weight rows to load ahead, period steps an iteration, so that
		// every iteration uses the same L1 and L0 tiles and flag ids.
		if iters := (steps - 1 - ahead) / period; loops && !resident && iters >= minConvLoopTrips {
			if regs == nil {
				regs = &[3]int{e.reg("steps"), e.reg("xoff"), e.reg("woff")}
			}
			e.emit(isa.LOOP, isa.RegOp(regs[0]), isa.ImmOp(float64(iters)))
			e.emit(isa.SMUL, isa.RegOp(regs[1]), isa.RegOp(regs[0]), isa.ImmOp(float64(period*t.gs*c0*chStride)))
			e.emit(isa.SMUL, isa.RegOp(regs[2]), isa.RegOp(regs[0]), isa.ImmOp(float64(period*ks*p.o)))
			for h := range period {
				emitStep(s+h, isa.UseReg(regs[1]), isa.UseReg(regs[2]))
			}
			e.emit(isa.ENDLOOP)
			s += iters * period
		}
		for ; s < steps; s++ {
			emitStep(s, 0, 0)
		}
		for a := range subs {
			ra0, va := r0+a*t.rb, min(t.rb, vr-a*t.rb)
			store(acc[a], convOutView(p, op.Attrs, outp, b, ra0, j0, va, vc), piece)
			piece++
		}
	}
}

// minConvLoopTrips is the fewest iterations for which a tile's steps become a loop
// (when loops pay): from two on, the loop is the smaller code.
const minConvLoopTrips = 2

// lcm is the least common multiple of a and b (positive).
func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// convTileAt is tile t of a convolution: its image b, its first output row r0 and
// channel j0, and its valid rows (over its sub-blocks) and channels.
func convTileAt(p convProblem, op *TileOp, t int) (b, r0, j0, vr, vc int) {
	rows, tn, grid := op.Tile[0]*op.Tile[3], op.Tile[1], op.Grid
	bi, ni := t%grid[2], t/(grid[2]*grid[1])
	b, j0, r0 = t/grid[2]%grid[1], ni*tn, bi*rows
	return b, r0, j0, min(rows, p.oh-r0), min(tn, p.o-j0)
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
