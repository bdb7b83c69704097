package lower

import (
	"fmt"
	"math"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// Flash attention as one mixed task. A tile is br query rows of one batch index; the
// nv vector cores of the AI core own hr = br/nv rows each. Per key block of bc keys:
//
//	cube:   S_h = Q_h K^T into L0C, pushed to vector core h           (queue h)
//	vector: online softmax of S_h: m' = max(m, rowmax S), alpha = exp(m - m'),
//	        P = exp(S - m'), l = l*alpha + rowsum P; P pushed back     (queue nv+h)
//	cube:   O_h = P_h V into L0C, pushed to vector core h             (queue 2nv+h)
//	vector: O = O*alpha + O_h
//
// and at the end O / l, rounded to the output dtype, is stored. The cube computes the
// next block's scores before this block's P V, and each vector core folds in a block's
// product after pushing the next block's probabilities, so both sides have work while
// the other computes. Statistics and the accumulator are fp32; P is rounded to the
// inputs' dtype for the cube. With is_causal the key blocks wholly above a tile's last
// row are skipped and the blocks crossing the diagonal masked; the key block past the
// last key is masked too.

// Queue numbers of vector core h's three streams.
func scoresQueue(h, nv int) isa.Operand  { return isa.ImmOp(float64(h)) }
func probsQueue(h, nv int) isa.Operand   { return isa.ImmOp(float64(nv + h)) }
func productQueue(h, nv int) isa.Operand { return isa.ImmOp(float64(2*nv + h)) }

// attentionInstructions lists what the kernel's programs use.
var attentionInstructions = []isa.Opcode{isa.TLOAD, isa.TMOV, isa.TMATMUL, isa.TPUSH, isa.TPOP, isa.TFREE,
	isa.TEXPANDS, isa.TMULS, isa.TROWEXPANDMUL, isa.TRECIP, isa.TADD, isa.TCVT, isa.TCMPS, isa.TSELS, isa.TTRI,
	isa.TCI, isa.TREMS, isa.TROWMAX, isa.TMAX, isa.TMAXS, isa.TSUB, isa.TEXP, isa.TROWEXPANDEXPDIF, isa.TROWSUM,
	isa.TMUL, isa.TROWEXPANDDIV, isa.TSTORE}

// attentionTileOf locates tile t: its batch index and query block.
func attentionTileOf(op *TileOp, t int) (b, qi int) { return t / op.Grid[1], t % op.Grid[1] }

func emitAttention(g *groupEmitter, tg *TileGraph, op *TileOp, tiles []int) {
	a := tiledAttentionShape(len(g.vec), op, tg.Tensors)
	emitAttentionCube(g.cube, tg, op, a, tiles)
	for h, e := range g.vec {
		emitAttentionVector(e, tg, op, a, tiles, h)
	}
}

// emitAttentionCube is the cube's program: Q's halves stay in L0A for a tile; K^T and
// V blocks stream through L1 (double buffered) into L0B.
func emitAttentionCube(e *emitter, tg *TileGraph, op *TileOp, a attentionShape, tiles []int) {
	out := tg.Tensors[op.Output].Type.Shape
	qv := newMatrixView(e.params[op.Inputs[0]], tg.Tensors[op.Inputs[0]].Type.Shape, out, false)
	kv := newMatrixView(e.params[op.Inputs[1]], tg.Tensors[op.Inputs[1]].Type.Shape, out, true)
	vv := newMatrixView(e.params[op.Inputs[2]], tg.Tensors[op.Inputs[2]].Type.Shape, out, false)
	l, s, ev := op.Problem[1], op.Problem[2], op.Problem[4]
	eq := op.Problem[3]
	br := a.nv * a.hr
	var qMat, qL0, pMat, pL0, sAcc, oAcc []int
	for h := 0; h < a.nv; h++ {
		qMat = append(qMat, e.tile(fmt.Sprintf("q%d_l1", h), isa.Mat, a.dt, a.hr, a.dp))
		qL0 = append(qL0, e.tile(fmt.Sprintf("q%d_l0", h), isa.Left, a.dt, a.hr, a.dp))
		pMat = append(pMat, e.tile(fmt.Sprintf("p%d_l1", h), isa.Mat, a.dt, a.hr, a.bc))
		pL0 = append(pL0, e.tile(fmt.Sprintf("p%d_l0", h), isa.Left, a.dt, a.hr, a.bc))
		sAcc = append(sAcc, e.tile(fmt.Sprintf("s%d", h), isa.Acc, dtype.Float32, a.hr, a.bc))
		oAcc = append(oAcc, e.tile(fmt.Sprintf("o%d", h), isa.Acc, dtype.Float32, a.hr, a.dv))
	}
	kMat := e.pingPong("kt_l1", isa.Mat, a.dt, a.dp, a.bc)
	vMat := e.pingPong("v_l1", isa.Mat, a.dt, a.bc, a.dv)
	kL0 := e.tile("kt_l0", isa.Right, a.dt, a.dp, a.bc)
	vL0 := e.tile("v_l0", isa.Right, a.dt, a.bc, a.dv)
	causal := op.Attrs.Bool("is_causal", false)
	step := 0
	for _, t := range tiles {
		b, qi := attentionTileOf(op, t)
		for h := 0; h < a.nv; h++ {
			r0 := qi*br + h*a.hr
			rows := max(0, min(a.hr, l-r0))
			e.emit(isa.TLOAD, isa.TileOp(qMat[h]), isa.GMOp(qv.window(b, min(r0, l), 0, rows, eq)))
			e.emit(isa.TMOV, isa.TileOp(qL0[h]), isa.TileOp(qMat[h]))
		}
		nk := len(unitMasks(op.Problem, a, causal, qi, 0))
		scores := func(kb int) {
			col0 := kb * a.bc
			vc := min(a.bc, s-col0)
			km := kMat[(step+kb)%2]
			e.emit(isa.TLOAD, isa.TileOp(km), isa.GMOp(kv.window(b, 0, col0, eq, vc)))
			e.emit(isa.TMOV, isa.TileOp(kL0), isa.TileOp(km))
			for h := 0; h < a.nv; h++ {
				e.emit(isa.TMATMUL, isa.TileOp(sAcc[h]), isa.TileOp(qL0[h]), isa.TileOp(kL0))
				e.emit(isa.TPUSH, scoresQueue(h, a.nv), isa.TileOp(sAcc[h]))
			}
		}
		scores(0)
		for kb := 0; kb < nk; kb++ {
			if kb+1 < nk {
				scores(kb + 1)
			}
			col0 := kb * a.bc
			vm := vMat[(step+kb)%2]
			e.emit(isa.TLOAD, isa.TileOp(vm), isa.GMOp(vv.window(b, col0, 0, min(a.bc, s-col0), ev)))
			e.emit(isa.TMOV, isa.TileOp(vL0), isa.TileOp(vm))
			for h := 0; h < a.nv; h++ {
				e.emit(isa.TPOP, isa.TileOp(pMat[h]), probsQueue(h, a.nv))
				e.emit(isa.TFREE, probsQueue(h, a.nv))
				e.emit(isa.TMOV, isa.TileOp(pL0[h]), isa.TileOp(pMat[h]))
				e.emit(isa.TMATMUL, isa.TileOp(oAcc[h]), isa.TileOp(pL0[h]), isa.TileOp(vL0))
				e.emit(isa.TPUSH, productQueue(h, a.nv), isa.TileOp(oAcc[h]))
			}
		}
		step += nk
	}
}

// attentionVector holds a vector core's tiles.
type attentionVector struct {
	e                          *emitter
	a                          attentionShape
	h                          int   // the vector core: its rows are h*hr.. of a tile
	s                          []int // scores / probabilities in fp32 (one or two copies)
	p, o, pv, res              int
	m                          [2]int // running max before and after the current block
	mBlock, l, lBlock          int
	alpha                      [2]int // the rescale factors of the last two blocks
	maskRaw, maskI8, maskBits  int    // an explicit mask as loaded, as int8, as bits
	maskF32                    int
	scaleRaw, scale            int
	blockMasks                 map[blockMask]int
	scaleImm                   float64
	scaleBy                    string
	view                       flatView // the explicit mask over the scores' space
	hasMask, boolMask, f32Mask bool
}

func (v *attentionVector) emit(op isa.Opcode, mode isa.Mode, args ...any) {
	ops := make([]isa.Operand, len(args))
	for i, x := range args {
		switch x := x.(type) {
		case int:
			ops[i] = isa.TileOp(x)
		case float64:
			ops[i] = isa.ImmOp(x)
		case isa.Operand:
			ops[i] = x
		default:
			panic(fmt.Sprintf("attention: operand %T", x))
		}
	}
	v.e.prog.Body = append(v.e.prog.Body, isa.Instr{Op: op, Mode: mode, Args: ops})
}

// column declares an hr x 1 statistics column.
func (v *attentionVector) column(name string) int {
	t := v.e.tile(name, isa.Vec, dtype.Float32, v.a.hr, 1)
	v.e.prog.Tiles[t].Layout = isa.LayoutDN
	return t
}

// emitAttentionVector is vector core h's program over the block's tiles.
func emitAttentionVector(e *emitter, tg *TileGraph, op *TileOp, a attentionShape, tiles []int, h int) {
	out := tg.Tensors[op.Output].Type.Shape
	l, s, ev := op.Problem[1], op.Problem[2], op.Problem[4]
	br := a.nv * a.hr
	causal := op.Attrs.Bool("is_causal", false)
	v := &attentionVector{e: e, a: a, h: h, blockMasks: map[blockMask]int{}, scaleBy: op.Attrs.Str("scale_by", "")}
	v.scaleImm = core.AttentionScale(op.Attrs.Float("scale", 0), op.Problem[3])
	for i := 0; i < op.Tile[2]; i++ {
		v.s = append(v.s, e.tile(fmt.Sprintf("s_%d", i), isa.Vec, dtype.Float32, a.hr, a.bc))
	}
	v.p = e.tile("p", isa.Vec, a.dt, a.hr, a.bc)
	v.o = e.tile("o", isa.Vec, dtype.Float32, a.hr, a.dv)
	v.pv = e.tile("pv", isa.Vec, dtype.Float32, a.hr, a.dv)
	v.res = e.tile("res", isa.Vec, a.dt, a.hr, a.dv)
	v.m = [2]int{v.column("m_0"), v.column("m_1")}
	v.alpha = [2]int{v.column("alpha_0"), v.column("alpha_1")}
	v.mBlock, v.l, v.lBlock = v.column("m_block"), v.column("l"), v.column("l_block")
	if op.Attrs.Bool("mask", false) {
		v.hasMask = true
		mt := tg.Tensors[op.Inputs[3]].Type
		scores := append(out[:len(out)-2:len(out)-2], l, s)
		v.view = newFlatView(e.params[op.Inputs[3]], broadcastMap(mt.Shape, scores), scores)
		v.maskRaw = e.tile("mask", isa.Vec, mt.DType, a.hr, a.bc)
		switch mt.DType {
		case dtype.Bool:
			v.boolMask = true
			v.maskI8 = e.tile("mask_i8", isa.Vec, dtype.Int8, a.hr, a.bc)
			v.maskBits = e.tile("mask_bits", isa.Vec, dtype.Int8, a.hr, a.maskCols())
		case dtype.Float32:
			v.f32Mask = true
		default:
			v.maskF32 = e.tile("mask_f32", isa.Vec, dtype.Float32, a.hr, a.bc)
		}
	}
	if v.scaleBy != "" {
		st := tg.Tensors[op.Inputs[len(op.Inputs)-1]].Type
		v.scaleRaw = e.tile("scale_in", isa.Vec, st.DType, a.hr, 16)
		v.scale = e.tile("scale", isa.Vec, dtype.Float32, a.hr, 16)
		// every row of the tile holds the one scale: a window of stride 0
		v.emit(isa.TLOAD, isa.ModeNone, v.scaleRaw, isa.GMOp(isa.GMView{Param: e.params[op.Inputs[len(op.Inputs)-1]], Rows: a.hr, Cols: 16}))
		v.emit(isa.TCVT, isa.ModeNone, v.scale, v.scaleRaw)
		if v.scaleBy == "div" {
			v.emit(isa.TRECIP, isa.ModeNone, v.scale, v.scale)
		}
	}
	for _, t := range tiles {
		_, qi := attentionTileOf(op, t)
		for _, m := range unitMasks(op.Problem, a, causal, qi, h) {
			if m.needed && v.blockMasks[m] == 0 {
				v.blockMasks[m] = v.buildMask(m)
			}
		}
	}
	ov := newMatrixView(e.params[op.Output], out, out, false)
	step := 0
	for _, t := range tiles {
		b, qi := attentionTileOf(op, t)
		row0 := qi*br + h*a.hr
		v.emit(isa.TEXPANDS, isa.ModeNone, v.m[0], math.Inf(-1))
		v.emit(isa.TEXPANDS, isa.ModeNone, v.l, 0.0)
		v.emit(isa.TEXPANDS, isa.ModeNone, v.o, 0.0)
		masks := unitMasks(op.Problem, a, causal, qi, h)
		for kb, m := range masks {
			v.block(step, kb, b, row0, m, l, s)
			if kb > 0 {
				v.absorb(kb - 1)
			}
			step++
		}
		v.absorb(len(masks) - 1)
		v.emit(isa.TROWEXPANDDIV, isa.ModeNone, v.o, v.o, v.l)
		v.emit(isa.TCVT, isa.ModeNone, v.res, v.o)
		if rows := min(a.hr, l-row0); rows > 0 {
			v.emit(isa.TSTORE, isa.ModeNone, isa.GMOp(ov.window(b, row0, 0, rows, ev)), v.res)
		}
	}
}

// buildMask makes the bits of m: 1 where a score is kept. The allowed set starts as
// TTRI's triangle (or all ones) in fp32 scratch, the columns past vc are cleared with a
// column index (TCI then a remainder), and TCMPS packs the result.
func (v *attentionVector) buildMask(m blockMask) int {
	a := v.a
	bits := v.e.tile(fmt.Sprintf("keep_%d", len(v.blockMasks)), isa.Vec, dtype.Int8, a.hr, a.maskCols())
	scratch := v.s[0]
	if m.vc < a.bc {
		v.emit(isa.TCI, isa.ModeNone, scratch, 0.0, 1.0)
		v.emit(isa.TREMS, isa.ModeNone, scratch, scratch, float64(a.bc))
		v.emit(isa.TCMPS, isa.CmpLT, bits, scratch, float64(m.vc))
	}
	if m.causal {
		v.emit(isa.TTRI, isa.ModeNone, scratch, float64(m.d))
	} else {
		v.emit(isa.TEXPANDS, isa.ModeNone, scratch, 1.0)
	}
	if m.vc < a.bc {
		v.emit(isa.TSELS, isa.ModeNone, scratch, bits, scratch, 0.0)
	}
	v.emit(isa.TCMPS, isa.CmpNE, bits, scratch, 0.0)
	return bits
}

// block is the online-softmax step of key block kb: pop the scores, scale and mask
// them, update the max and the sum, and push the probabilities.
func (v *attentionVector) block(step, kb, b, row0 int, m blockMask, l, s int) {
	a := v.a
	st := v.s[step%len(v.s)]
	v.emit(isa.TPOP, isa.ModeNone, st, scoresQueue(v.h, a.nv))
	v.emit(isa.TFREE, isa.ModeNone, scoresQueue(v.h, a.nv))
	switch v.scaleBy {
	case "":
		v.emit(isa.TMULS, isa.ModeNone, st, st, v.scaleImm)
	default:
		v.emit(isa.TROWEXPANDMUL, isa.ModeNone, st, st, v.scale)
	}
	if v.hasMask {
		col0 := kb * a.bc
		rows := max(0, min(a.hr, l-row0))
		v.emit(isa.TLOAD, isa.ModeNone, v.maskRaw, isa.GMOp(v.view.window(b, min(row0, l), col0, rows, m.vc)))
		switch {
		case v.boolMask:
			v.emit(isa.TCVT, isa.ModeNone, v.maskI8, v.maskRaw)
			v.emit(isa.TCMPS, isa.CmpNE, v.maskBits, v.maskI8, 0.0)
			v.emit(isa.TSELS, isa.ModeNone, st, v.maskBits, st, math.Inf(-1))
		case v.f32Mask:
			v.emit(isa.TADD, isa.ModeNone, st, st, v.maskRaw)
		default:
			v.emit(isa.TCVT, isa.ModeNone, v.maskF32, v.maskRaw)
			v.emit(isa.TADD, isa.ModeNone, st, st, v.maskF32)
		}
	}
	if m.needed {
		v.emit(isa.TSELS, isa.ModeNone, st, v.blockMasks[m], st, math.Inf(-1))
	}
	old, cur := v.m[kb%2], v.m[(kb+1)%2]
	v.emit(isa.TROWMAX, isa.ModeNone, v.mBlock, st)
	v.emit(isa.TMAX, isa.ModeNone, cur, old, v.mBlock)
	// A row with every score so far masked keeps a finite max, so that exp gives 0
	// rather than NaN; a row masked everywhere ends 0/0, NaN, as the reference.
	v.emit(isa.TMAXS, isa.ModeNone, cur, cur, -math.MaxFloat32)
	alpha := v.alpha[kb%2]
	v.emit(isa.TSUB, isa.ModeNone, alpha, old, cur)
	v.emit(isa.TEXP, isa.ModeNone, alpha, alpha)
	v.emit(isa.TROWEXPANDEXPDIF, isa.ModeNone, st, st, cur)
	v.emit(isa.TROWSUM, isa.ModeNone, v.lBlock, st)
	v.emit(isa.TMUL, isa.ModeNone, v.l, v.l, alpha)
	v.emit(isa.TADD, isa.ModeNone, v.l, v.l, v.lBlock)
	v.emit(isa.TCVT, isa.ModeNone, v.p, st)
	v.emit(isa.TPUSH, isa.ModeNone, probsQueue(v.h, a.nv), v.p)
}

// absorb folds block kb's product into the accumulator: O = O*alpha + P V.
func (v *attentionVector) absorb(kb int) {
	q := productQueue(v.h, v.a.nv)
	v.emit(isa.TPOP, isa.ModeNone, v.pv, q)
	v.emit(isa.TFREE, isa.ModeNone, q)
	v.emit(isa.TROWEXPANDMUL, isa.ModeNone, v.o, v.o, v.alpha[kb%2])
	v.emit(isa.TADD, isa.ModeNone, v.o, v.o, v.pv)
}

func init() {
	lowerings["flash_attention"] = lowering{kind: TileAttention, core: isa.Cube}
	groupEmitters[TileAttention] = emitAttention
}
