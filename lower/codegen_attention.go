package lower

import (
	"fmt"
	"math"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// Flash attention as one mixed task. A tile is br query rows of one batch index, cut
// into chunks of hr rows; chunk c belongs to vector core h = c % nv of the AI core's nv.
// Per key block of bc keys and per chunk:
//
//	cube:   S_c = Q_c K^T into L0C, pushed to vector core h              (queue h)
//	vector: online softmax of S_c: m' = max(m, rowmax S), alpha = exp(m - m'),
//	        P = exp(S - m'), l = l*alpha + rowsum P; P pushed back        (queue nv+h)
//	cube:   O_c = P_c V into L0C, pushed to vector core h                (queue 2nv+h)
//	vector: O = O*alpha + O_c
//
// and at the end O / l, rounded to the output dtype, is stored. K and V are loaded
// once per tile and key block, for all its chunks. The cube computes the next block's
// scores before this block's P V, and each vector core folds in a block's products
// after pushing the next block's probabilities, so both sides have work while the other
// computes. Statistics and the accumulator are fp32; P is rounded to the inputs' dtype
// for the cube. With is_causal the key blocks wholly above a tile's last row are
// skipped and the blocks crossing the diagonal masked; the key block past the last key
// is masked too. Queues are FIFOs, so both sides walk the chunks in the same order. A
// key block wider than maxPartCols goes through the queues in parts (scores, P and
// the P V products accumulated over them), which the vector core folds elementwise
// before its row reductions (block).

// The queues: each chunk's scores have a queue of their own when the queues suffice
// (then the cube runs two key blocks ahead, each queue holding both), else each
// vector core's; the probabilities and the products have one queue per vector core.
func (a attentionShape) scoresPerChunk() bool { return a.chunks()+2*a.nv <= isa.NumQueues }

func (a attentionShape) lookahead() int {
	if a.scoresPerChunk() {
		return 2
	}
	return 1
}

func (a attentionShape) scoresQueue(c int) isa.Operand {
	if a.scoresPerChunk() {
		return isa.ImmOp(float64(c))
	}
	return isa.ImmOp(float64(c % a.nv))
}

func (a attentionShape) probsQueue(h int) isa.Operand {
	if a.scoresPerChunk() {
		return isa.ImmOp(float64(a.chunks() + h))
	}
	return isa.ImmOp(float64(a.nv + h))
}

func (a attentionShape) productQueue(h int) isa.Operand {
	return isa.ImmOp(float64(a.probsQueue(h).Imm) + float64(a.nv))
}

// attentionInstructions lists what the kernel's programs use.
var attentionInstructions = []isa.Opcode{isa.TLOAD, isa.TMOV, isa.TEXTRACT, isa.TMATMUL, isa.TMATMUL_ACC, isa.TPUSH, isa.TPOP, isa.TFREE,
	isa.TEXPANDS, isa.TMULS, isa.TROWEXPANDMUL, isa.TRECIP, isa.TADD, isa.TCVT, isa.TCMPS, isa.TSELS, isa.TTRI,
	isa.TCI, isa.TREMS, isa.TROWMAX, isa.TMAX, isa.TSUB, isa.TEXP, isa.TROWEXPANDEXPDIF, isa.TROWSUM,
	isa.TMUL, isa.TROWEXPANDDIV, isa.TSTORE, isa.TSEL, isa.TROWEXPAND}

// attentionTileOf locates tile t: its batch index and query block.
func attentionTileOf(op *TileOp, t int) (b, qi int) { return t / op.Grid[1], t % op.Grid[1] }

// emitAttention generates one block of a flash_attention: the cube's program and each
// vector core's, over the same tiles.
func emitAttention(g *groupEmitter, tg *TileGraph, op *TileOp, tiles []int) {
	a := tiledAttentionShape(len(g.vec), op, tg.Tensors)
	emitAttentionCube(g.cube, tg, op, a, tiles)
	for h, e := range g.vec {
		emitAttentionVector(e, tg, op, a, tiles, h)
	}
}

// emitAttentionCube is the cube's program. Q's chunks stay in L1 for a tile (and in
// L0A when there are two); K^T and V blocks stream through L1 (double buffered) into
// L0B; the chunks' scores, probabilities and products alternate between two buffers.
func emitAttentionCube(e *emitter, tg *TileGraph, op *TileOp, a attentionShape, tiles []int) {
	out := attentionOutShape(tg, op)
	qv := operandView(e, tg, op.Inputs[0], out, false)
	kv := operandView(e, tg, op.Inputs[1], out, true)
	vv := operandView(e, tg, op.Inputs[2], out, false)
	l, s, eq, ev := op.Problem[1], op.Problem[2], op.Problem[3], op.Problem[4]
	nc := a.chunks()
	qMat := make([]int, nc)
	for c := range qMat {
		qMat[c] = e.tile(fmt.Sprintf("q%d_l1", c), isa.Mat, a.dt, a.hr, a.dp)
	}
	qL0 := e.pingPong("q_l0", isa.Left, a.dt, a.hr, a.dp)
	resident := nc <= 2 // Q's chunks fit L0A beside P's: moved once per tile
	np, w := a.parts(), a.partCols()
	pMat := e.pingPong("p_l1", isa.Mat, a.dt, a.hr, w)
	pL0 := e.pingPong("p_l0", isa.Left, a.dt, a.hr, w)
	sAcc := e.pingPong("s", isa.Acc, dtype.Float32, a.hr, w)
	oAcc := e.pingPong("o", isa.Acc, dtype.Float32, a.hr, a.dv)
	kMat := e.pingPong("kt_l1", isa.Mat, a.dt, a.dp, a.bc)
	vMat := e.pingPong("v_l1", isa.Mat, a.dt, a.bc, a.dv)
	kL0, vL0 := make([]int, np), make([]int, np)
	for j := range kL0 {
		suffix := ""
		if np > 1 {
			suffix = fmt.Sprintf("_%d", j)
		}
		kL0[j] = e.tile("kt_l0"+suffix, isa.Right, a.dt, a.dp, w)
		vL0[j] = e.tile("v_l0"+suffix, isa.Right, a.dt, w, a.dv)
	}
	// toL0 moves a block of K^T or V from L1 into L0B, whole or a part at a time (the
	// parts' columns of K^T, their rows of V).
	toL0 := func(dst []int, src int, rows bool) {
		if np == 1 {
			e.emit(isa.TMOV, isa.TileOp(dst[0]), isa.TileOp(src))
			return
		}
		for j, d := range dst {
			r, c := 0, j*w
			if rows {
				r, c = j*w, 0
			}
			e.emit(isa.TEXTRACT, isa.TileOp(d), isa.TileOp(src), isa.ImmOp(float64(r)), isa.ImmOp(float64(c)))
		}
	}
	causal := op.Attrs.Bool("is_causal", false)
	dyn := newAttentionRun(e, op)
	step := 0
	for _, t := range tiles {
		b, qi := attentionTileOf(op, t)
		dyn.begin(qi * a.rows())
		for c := 0; c < nc; c++ {
			r0 := qi*a.rows() + c*a.hr
			rows := max(0, min(a.hr, l-r0))
			e.emit(isa.TLOAD, isa.TileOp(qMat[c]), isa.GMOp(qv.window(b, min(r0, l), 0, rows, eq)))
			if resident {
				e.emit(isa.TMOV, isa.TileOp(qL0[c]), isa.TileOp(qMat[c]))
			}
		}
		nk := len(chunkMasks(op.Problem, a, causal, qi, 0))
		scores := func(kb int) {
			col0 := kb * a.bc
			km := kMat[(step+kb)%2]
			kw := kv.window(b, 0, col0, eq, min(a.bc, s-col0))
			kw.ColsReg = dyn.keys(col0, kw.Cols)
			e.emit(isa.TLOAD, isa.TileOp(km), isa.GMOp(kw))
			toL0(kL0, km, false)
			for c := 0; c < nc; c++ {
				if !resident {
					e.emit(isa.TMOV, isa.TileOp(qL0[c%2]), isa.TileOp(qMat[c]))
				}
				for j, k := range kL0 {
					acc := sAcc[(c*np+j)%2]
					e.emit(isa.TMATMUL, isa.TileOp(acc), isa.TileOp(qL0[c%2]), isa.TileOp(k))
					e.emit(isa.TPUSH, a.scoresQueue(c), isa.TileOp(acc))
				}
			}
		}
		ahead := a.lookahead()
		for kb := 0; kb < min(ahead, nk); kb++ {
			scores(kb)
		}
		for kb := 0; kb < nk; kb++ {
			// One block ahead, the next scores come before this block's products so
			// that the vector cores have them while the cube waits for P; two ahead,
			// they come after, so that the pops of P wait behind no load of K.
			if kb+ahead < nk && ahead == 1 {
				scores(kb + ahead)
			}
			col0 := kb * a.bc
			vm := vMat[(step+kb)%2]
			vw := vv.window(b, col0, 0, min(a.bc, s-col0), ev)
			vw.RowsReg = dyn.keys(col0, vw.Rows)
			e.emit(isa.TLOAD, isa.TileOp(vm), isa.GMOp(vw))
			toL0(vL0, vm, true)
			for c := 0; c < nc; c++ {
				h := c % a.nv
				for j, v := range vL0 {
					i := (c*np + j) % 2
					e.emit(isa.TPOP, isa.TileOp(pMat[i]), a.probsQueue(h))
					e.emit(isa.TFREE, a.probsQueue(h))
					e.emit(isa.TMOV, isa.TileOp(pL0[i]), isa.TileOp(pMat[i]))
					mm := isa.TMATMUL
					if j > 0 {
						mm = isa.TMATMUL_ACC
					}
					e.emit(mm, isa.TileOp(oAcc[c%2]), isa.TileOp(pL0[i]), isa.TileOp(v))
				}
				e.emit(isa.TPUSH, a.productQueue(h), isa.TileOp(oAcc[c%2]))
			}
			if kb+ahead < nk && ahead == 2 {
				scores(kb + ahead)
			}
		}
		step += nk
		dyn.end()
	}
}

// attentionRun is how a dynamic attention (TileOp.Dynamic) follows the run's sizes: it
// reads the run's query count (and key count, when its keys are cut) into registers,
// runs each tile in a loop of one iteration, or none when the tile's first row is past
// the run's queries, and cuts each key block's loads of K and V at the run's keys (the
// rest of the block zero-filled; the keys past the run never reach a valid query: the
// padding plan proves it, by causality or a key mask). The cube and the vector cores
// skip the same tiles, so their queues stay paired. A static attention's is a no-op.
type attentionRun struct {
	e                         *emitter
	dynamic, cut              bool
	queries, keyCount, runs   int // registers
	kReg, counter, nextKeyReg int
}

func newAttentionRun(e *emitter, op *TileOp) *attentionRun {
	r := &attentionRun{e: e}
	d := op.Dynamic
	if d == nil {
		return r
	}
	r.dynamic, r.cut = true, d.CutK
	size := func(reg, index int) {
		e.emit(isa.SLD, isa.RegOp(reg), isa.GMOp(isa.GMView{Param: e.params[d.Sizes], Offset: index, Rows: 1, Cols: 1, RowStride: 1, ColStride: 1}))
	}
	r.queries, r.runs, r.counter = e.reg("queries"), e.reg("tile_runs"), e.reg("tile")
	size(r.queries, d.Index)
	if r.cut {
		r.keyCount, r.kReg, r.nextKeyReg = e.reg("keys"), e.reg("block_keys"), e.reg("block_keys_v")
		size(r.keyCount, d.KIndex)
	}
	return r
}

// begin opens the loop of a tile whose first query row is row0: one iteration while
// row0 is below the run's queries.
func (r *attentionRun) begin(row0 int) {
	if !r.dynamic {
		return
	}
	e, ri, imm := r.e, isa.RegOp, func(v int) isa.Operand { return isa.ImmOp(float64(v)) }
	e.emit(isa.SSUB, ri(r.runs), ri(r.queries), imm(row0))
	e.emit(isa.SMAX, ri(r.runs), ri(r.runs), imm(0))
	e.emit(isa.SMIN, ri(r.runs), ri(r.runs), imm(1))
	e.emit(isa.LOOP, ri(r.counter), ri(r.runs))
}

// end closes the tile's loop.
func (r *attentionRun) end() {
	if r.dynamic {
		r.e.emit(isa.ENDLOOP)
	}
}

// keys is the register of a key block's valid keys from col0 (at most n, the block's
// static count), for the window of its load; 0 (no register) when the keys are not
// cut. Consecutive calls alternate between two registers, so that K's load of one
// block and V's of another may be computed before either issues.
func (r *attentionRun) keys(col0, n int) isa.RegRef {
	if !r.cut {
		return 0
	}
	e, ri, imm := r.e, isa.RegOp, func(v int) isa.Operand { return isa.ImmOp(float64(v)) }
	reg := r.kReg
	r.kReg, r.nextKeyReg = r.nextKeyReg, r.kReg
	e.emit(isa.SSUB, ri(reg), ri(r.keyCount), imm(col0))
	e.emit(isa.SMAX, ri(reg), ri(reg), imm(0))
	e.emit(isa.SMIN, ri(reg), ri(reg), imm(n))
	return isa.UseReg(reg)
}

// attentionVector holds a vector core's tiles.
type attentionVector struct {
	e                          *emitter
	a                          attentionShape
	h                          int     // the vector core: it owns chunks h, h+nv, ...
	s                          [][]int // scores / probabilities in fp32 (one or two copies, each in parts)
	p                          []int   // the probabilities rounded for the cube, by part
	fold                       int     // with parts: their elementwise max or sum, the max broadcast
	pv, res                    int
	chunks                     []chunkState
	mBlock, lBlock             int
	maskRaw, maskBits          []int // an explicit mask as loaded, as bits, by part
	maskI8                     int   // a bool mask as int8
	maskF32                    []int
	scale, fill                int // broadcast tiles of the scale and fill inputs, or 0
	blockMasks                 map[blockMask]int
	scaleImm, fillImm          float64
	scaleBy                    string
	view                       flatView // the explicit mask over the scores' space
	hasMask, boolMask, f32Mask bool
}

// chunkState is the online softmax of one chunk's rows: the running max before and
// after the current key block (they alternate), the rescale factors of the last two
// blocks, the running sum and the output accumulator.
type chunkState struct {
	m, alpha [2]int
	l, o     int
}

func (v *attentionVector) emit(op isa.Opcode, mode isa.Mode, args ...any) {
	ops := make([]isa.Operand, len(args), 8) // on the stack: the slab keeps the copy
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
	v.e.prog.Body = append(v.e.prog.Body, isa.Instr{Op: op, Mode: mode, Args: v.e.operands(ops)})
}

// column declares an hr x 1 statistics column.
func (v *attentionVector) column(name string) int {
	t := v.e.tile(name, isa.Vec, dtype.Float32, v.a.hr, 1)
	v.e.prog.Tiles[t].Layout = isa.LayoutDN
	return t
}

// emitAttentionVector is vector core h's program over the block's tiles.
func emitAttentionVector(e *emitter, tg *TileGraph, op *TileOp, a attentionShape, tiles []int, h int) {
	out := attentionOutShape(tg, op)
	l, s, ev := op.Problem[1], op.Problem[2], op.Problem[4]
	causal := op.Attrs.Bool("is_causal", false)
	v := &attentionVector{e: e, a: a, h: h, blockMasks: map[blockMask]int{}, scaleBy: op.Attrs.Str("scale_by", "")}
	v.scaleImm = core.AttentionScale(op.Attrs.Float("scale", 0), op.Problem[3])
	v.fillImm = op.Attrs.Float("fill", math.Inf(-1))
	w := a.partCols()
	for i := 0; i < op.Tile[3]; i++ {
		v.s = append(v.s, v.parted(fmt.Sprintf("s_%d", i), dtype.Float32, w))
	}
	v.p = v.parted("p", a.dt, w)
	if a.parts() > 1 {
		v.fold = e.tile("fold", isa.Vec, dtype.Float32, a.hr, w)
	}
	v.pv = e.tile("pv", isa.Vec, dtype.Float32, a.hr, a.dv)
	v.res = v.p[0]
	if !a.resultInProbs() {
		v.res = e.tile("res", isa.Vec, a.dt, a.hr, a.dv)
	}
	v.mBlock, v.lBlock = v.column("m_block"), v.column("l_block")
	var own []int // the chunks of this vector core
	for c := h; c < a.chunks(); c += a.nv {
		own = append(own, c)
		n := len(v.chunks)
		v.chunks = append(v.chunks, chunkState{
			m:     [2]int{v.column(fmt.Sprintf("m%d_0", n)), v.column(fmt.Sprintf("m%d_1", n))},
			alpha: [2]int{v.column(fmt.Sprintf("alpha%d_0", n)), v.column(fmt.Sprintf("alpha%d_1", n))},
			l:     v.column(fmt.Sprintf("l%d", n)),
			o:     e.tile(fmt.Sprintf("o%d", n), isa.Vec, dtype.Float32, a.hr, a.dv),
		})
	}
	if op.Attrs.Bool("mask", false) {
		v.hasMask = true
		mt := tg.Tensors[op.Inputs[3]].Type
		scores := append(out[:len(out)-2:len(out)-2], l, s)
		v.view = newFlatView(e.params[op.Inputs[3]], broadcastMap(mt.Shape, scores), scores)
		v.maskRaw = v.parted("mask", mt.DType, w)
		switch mt.DType {
		case dtype.Bool:
			v.boolMask = true
			v.maskI8 = e.tile("mask_i8", isa.Vec, dtype.Int8, a.hr, w)
			v.maskBits = v.parted("mask_bits", dtype.Int8, a.maskCols())
		case dtype.Float32:
			v.f32Mask = true
		default:
			v.maskF32 = v.parted("mask_f32", dtype.Float32, w)
		}
	}
	_, fill, scale, _ := core.FlashAttentionInputs(op.Attrs)
	if scale >= 0 {
		v.scale = v.scalar(tg, op.Inputs[scale], "scale")
		if v.scaleBy == "div" {
			v.emit(isa.TRECIP, isa.ModeNone, v.scale, v.scale)
		}
	}
	if fill >= 0 {
		col := v.scalar(tg, op.Inputs[fill], "fill")
		v.fill = e.tile("fill_block", isa.Vec, dtype.Float32, a.hr, w)
		v.emit(isa.TROWEXPAND, isa.ModeNone, v.fill, col)
	}
	for _, t := range tiles {
		_, qi := attentionTileOf(op, t)
		for _, c := range own {
			for _, bm := range chunkMasks(op.Problem, a, causal, qi, c) {
				for j := 0; j < a.parts(); j++ {
					if m := bm.part(j, w); m.needed && v.blockMasks[m] == 0 {
						v.blockMasks[m] = v.buildMask(m)
					}
				}
			}
		}
	}
	ov := attentionOutView(e, tg, op)
	dyn := newAttentionRun(e, op)
	dyn.cut = false // the vector cores load no keys
	step := 0
	for _, t := range tiles {
		b, qi := attentionTileOf(op, t)
		dyn.begin(qi * a.rows())
		masks := make([][]blockMask, len(own))
		for i, c := range own {
			cs := v.chunks[i]
			// The running max starts at the lowest finite value, not -inf: a row
			// with every score so far masked keeps a finite max (so exp gives 0,
			// not NaN, and no clamp per block is needed), and a row masked
			// everywhere ends 0/0, NaN, as the reference.
			v.emit(isa.TEXPANDS, isa.ModeNone, cs.m[0], -math.MaxFloat32)
			v.emit(isa.TEXPANDS, isa.ModeNone, cs.l, 0.0)
			v.emit(isa.TEXPANDS, isa.ModeNone, cs.o, 0.0)
			masks[i] = chunkMasks(op.Problem, a, causal, qi, c)
		}
		nk := len(masks[0])
		for kb := 0; kb < nk; kb++ {
			for i, c := range own {
				v.block(step, kb, b, c, qi*a.rows()+c*a.hr, masks[i][kb], v.chunks[i], l)
				step++
			}
			if kb > 0 {
				for _, cs := range v.chunks {
					v.absorb(kb-1, cs)
				}
			}
		}
		for i, c := range own {
			cs := v.chunks[i]
			v.absorb(nk-1, cs)
			v.emit(isa.TROWEXPANDDIV, isa.ModeNone, cs.o, cs.o, cs.l)
			v.emit(isa.TCVT, isa.ModeNone, v.res, cs.o)
			row0 := qi*a.rows() + c*a.hr
			if rows := min(a.hr, l-row0); rows > 0 {
				v.emit(isa.TSTORE, isa.ModeNone, isa.GMOp(ov.window(b, row0, 0, rows, ev)), v.res)
			}
		}
		dyn.end()
	}
}

// scalar loads the one-element tensor t into every row of an fp32 tile (a window of
// stride 0), for the row-wise broadcasts.
func (v *attentionVector) scalar(tg *TileGraph, t int, name string) int {
	raw := v.e.tile(name+"_in", isa.Vec, tg.Tensors[t].Type.DType, v.a.hr, 16)
	f := v.e.tile(name, isa.Vec, dtype.Float32, v.a.hr, 16)
	v.emit(isa.TLOAD, isa.ModeNone, raw, isa.GMOp(isa.GMView{Param: v.e.params[t], Rows: v.a.hr, Cols: 16}))
	v.emit(isa.TCVT, isa.ModeNone, f, raw)
	return f
}

// parted declares a tile of hr x cols per part of a key block, named name (one part)
// or name_j.
func (v *attentionVector) parted(name string, dt dtype.DType, cols int) []int {
	n := v.a.parts()
	out := make([]int, n)
	for j := range out {
		if n > 1 {
			out[j] = v.e.tile(fmt.Sprintf("%s_%d", name, j), isa.Vec, dt, v.a.hr, cols)
		} else {
			out[j] = v.e.tile(name, isa.Vec, dt, v.a.hr, cols)
		}
	}
	return out
}

// buildMask makes the bits of m, a part's mask: 1 where a score is kept. The allowed
// set starts as TTRI's triangle (or all ones) in fp32 scratch, the columns past vc are
// cleared with a column index (TCI then a remainder), and TCMPS packs the result.
func (v *attentionVector) buildMask(m blockMask) int {
	a := v.a
	w := a.partCols()
	bits := v.e.tile(fmt.Sprintf("keep_%d", len(v.blockMasks)), isa.Vec, dtype.Int8, a.hr, a.maskCols())
	scratch := v.s[0][0]
	if m.vc < w {
		v.emit(isa.TCI, isa.ModeNone, scratch, 0.0, 1.0)
		v.emit(isa.TREMS, isa.ModeNone, scratch, scratch, float64(w))
		v.emit(isa.TCMPS, isa.CmpLT, bits, scratch, float64(m.vc))
	}
	if m.causal {
		v.emit(isa.TTRI, isa.ModeNone, scratch, float64(m.d))
	} else {
		v.emit(isa.TEXPANDS, isa.ModeNone, scratch, 1.0)
	}
	if m.vc < w {
		v.emit(isa.TSELS, isa.ModeNone, scratch, bits, scratch, 0.0)
	}
	v.emit(isa.TCMPS, isa.CmpNE, bits, scratch, 0.0)
	return bits
}

// block is the online-softmax step of key block kb for chunk c (rows from row0):
// pop the scores, scale and mask them, update the max and the sum, and push the
// probabilities. A block in parts reduces their elementwise max (and sum) to a row
// instead of each part, and subtracts the max broadcast once.
func (v *attentionVector) block(step, kb, b, c, row0 int, m blockMask, cs chunkState, l int) {
	a := v.a
	w := a.partCols()
	st := v.s[step%len(v.s)]
	if v.hasMask {
		for j := range st {
			v.loadMask(kb, j, b, row0, m.part(j, w), l)
		}
	}
	for j, sj := range st {
		v.emit(isa.TPOP, isa.ModeNone, sj, a.scoresQueue(c))
		v.emit(isa.TFREE, isa.ModeNone, a.scoresQueue(c))
		v.scaleAndMask(j, sj, m.part(j, w))
	}
	whole := st[0] // what the row reductions read
	if len(st) > 1 {
		v.foldParts(isa.TMAX, st)
		whole = v.fold
	}
	old, cur := cs.m[kb%2], cs.m[(kb+1)%2]
	v.emit(isa.TROWMAX, isa.ModeNone, v.mBlock, whole)
	v.emit(isa.TMAX, isa.ModeNone, cur, old, v.mBlock)
	alpha := cs.alpha[kb%2]
	if len(st) == 1 {
		v.emit(isa.TROWEXPANDEXPDIF, isa.ModeNone, whole, whole, cur)
	} else {
		v.emit(isa.TROWEXPAND, isa.ModeNone, v.fold, cur)
		for _, sj := range st {
			v.emit(isa.TSUB, isa.ModeNone, sj, sj, v.fold)
			v.emit(isa.TEXP, isa.ModeNone, sj, sj)
		}
	}
	v.emit(isa.TSUB, isa.ModeNone, alpha, old, cur)
	v.emit(isa.TEXP, isa.ModeNone, alpha, alpha)
	// The probabilities go to the cube before their row sum is taken, so that the
	// cube's P V runs beside the reduction.
	for j, sj := range st {
		v.emit(isa.TCVT, isa.ModeNone, v.p[j], sj)
		v.emit(isa.TPUSH, isa.ModeNone, a.probsQueue(v.h), v.p[j])
	}
	if len(st) > 1 {
		v.foldParts(isa.TADD, st)
	}
	v.emit(isa.TROWSUM, isa.ModeNone, v.lBlock, whole)
	v.emit(isa.TMUL, isa.ModeNone, cs.l, cs.l, alpha)
	v.emit(isa.TADD, isa.ModeNone, cs.l, cs.l, v.lBlock)
}

// foldParts combines the parts elementwise into the fold tile.
func (v *attentionVector) foldParts(op isa.Opcode, st []int) {
	v.emit(op, isa.ModeNone, v.fold, st[0], st[1])
	for _, sj := range st[2:] {
		v.emit(op, isa.ModeNone, v.fold, v.fold, sj)
	}
}

// scaleAndMask scales part j of a block's scores, adds or applies the explicit mask
// and drops the keys the part's mask m excludes.
func (v *attentionVector) scaleAndMask(j, st int, m blockMask) {
	switch v.scaleBy {
	case "":
		v.emit(isa.TMULS, isa.ModeNone, st, st, v.scaleImm)
	default:
		v.emit(isa.TROWEXPANDMUL, isa.ModeNone, st, st, v.scale)
	}
	if v.hasMask {
		switch {
		case v.boolMask && v.fill != 0:
			v.emit(isa.TSEL, isa.ModeNone, st, v.maskBits[j], st, v.fill)
		case v.boolMask:
			v.emit(isa.TSELS, isa.ModeNone, st, v.maskBits[j], st, v.fillImm)
		case v.f32Mask:
			v.emit(isa.TADD, isa.ModeNone, st, st, v.maskRaw[j])
		default:
			v.emit(isa.TADD, isa.ModeNone, st, st, v.maskF32[j])
		}
	}
	if m.needed {
		v.emit(isa.TSELS, isa.ModeNone, st, v.blockMasks[m], st, math.Inf(-1))
	}
}

// loadMask loads the explicit mask's tile of part j of key block kb (its mask m) for
// the rows from row0 and converts it to what the scores need (bits for a bool mask,
// fp32 otherwise). It reads nothing the cube computes, so it comes before the scores'
// pop: the load and the conversion run while the vector core waits for the scores.
func (v *attentionVector) loadMask(kb, j, b, row0 int, m blockMask, l int) {
	a := v.a
	rows := max(0, min(a.hr, l-row0))
	col := kb*a.bc + j*a.partCols()
	v.emit(isa.TLOAD, isa.ModeNone, v.maskRaw[j], isa.GMOp(v.view.window(b, min(row0, l), col, rows, m.vc)))
	switch {
	case v.boolMask:
		v.emit(isa.TCVT, isa.ModeNone, v.maskI8, v.maskRaw[j])
		v.emit(isa.TCMPS, isa.CmpNE, v.maskBits[j], v.maskI8, 0.0)
	case !v.f32Mask:
		v.emit(isa.TCVT, isa.ModeNone, v.maskF32[j], v.maskRaw[j])
	}
}

// absorb folds a chunk's product of key block kb into its accumulator: O = O*alpha + P V.
func (v *attentionVector) absorb(kb int, cs chunkState) {
	q := v.a.productQueue(v.h)
	v.emit(isa.TPOP, isa.ModeNone, v.pv, q)
	v.emit(isa.TFREE, isa.ModeNone, q)
	v.emit(isa.TROWEXPANDMUL, isa.ModeNone, cs.o, cs.o, cs.alpha[kb%2])
	v.emit(isa.TADD, isa.ModeNone, cs.o, cs.o, v.pv)
}

func init() {
	lowerings["flash_attention"] = lowering{kind: TileAttention, core: isa.Cube}
	groupEmitters[TileAttention] = emitAttention
}

// attentionOutShape is the shape the kernel computes, [..., H, L, Ev], whichever way
// the output stores it.
func attentionOutShape(tg *TileGraph, op *TileOp) core.Shape {
	return attentionOutType(op, tg.Tensors).Shape
}

// attentionOutType is the output's type seen as the kernel computes it (attentionOutShape).
func attentionOutType(op *TileOp, tensors []GMTensor) core.TensorType {
	t := tensors[op.Output].Type
	if op.Attrs.Bool("heads_last", false) {
		t.Shape = core.SwapHeads(t.Shape)
	}
	return t
}

// attentionOutView addresses the output: row-major [..., H, L, Ev], or heads-last
// [..., L, H, Ev] storage seen with the heads and query axes exchanged.
func attentionOutView(e *emitter, tg *TileGraph, op *TileOp) matrixView {
	out := attentionOutShape(tg, op)
	st := tg.Tensors[op.Output].Type.Shape.Strides()
	if op.Attrs.Bool("heads_last", false) {
		n := len(st)
		st[n-3], st[n-2] = st[n-2], st[n-3]
	}
	return newStridedMatrixView(e.params[op.Output], out, affineMap{strides: st}, out, false)
}
