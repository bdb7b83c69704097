package ptoas

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"pypto/dtype"
	"pypto/isa"
)

// How each instruction is written. Every op is written in MLIR's generic form,
// `"pto.name"(operands) <{properties}> {attributes} : (types) -> ()`, which the
// dialect's parser takes for every op (its custom forms differ from op to op). The
// dialect's operand order is its ODS order: sources, then the destination (with a few
// exceptions, such as tsort32's index tile after the destination).

// opWriter writes one instruction.
type opWriter func(w *writer, in isa.Instr)

var opWriters = map[isa.Opcode]opWriter{}

// missing lists what the 0.1.1 dialect has no op for (and no short sequence of ops
// that computes the same values), with the reason; docs/pto-as.md lists them too.
var missing = map[isa.Opcode]string{
	isa.TSTORE_FP:  "the dialect has no Scaling buffer for the fixpipe's per-column scales",
	isa.TMOV_FP:    "the dialect has no Scaling buffer for the fixpipe's per-column scales",
	isa.TMATMUL_MX: "the dialect has no Scaling buffer for MX block scales",
	isa.TGEMV:      "the dialect has no matrix-vector op",
	isa.TGEMV_ACC:  "the dialect has no matrix-vector op",
	isa.TGEMV_BIAS: "the dialect has no matrix-vector op",
	isa.TGEMV_MX:   "the dialect has no matrix-vector op",
	isa.TINSERT:    "the dialect has no tinsert",
	isa.TIMG2COL:   "the dialect has no img2col (load3d) op",
	isa.TPREFETCH:  "the dialect has no prefetch",
	isa.TFMOD:      "the dialect has no fmod",
	isa.TFMODS:     "the dialect has no fmod",
	isa.TPARTMUL:   "the dialect has no tpartmul",
	isa.TQUANT:     "the dialect has no quantisation op",
	isa.TDEQUANT:   "the dialect has no quantisation op",
	isa.TPRINT:     "the dialect has no print",
}

// traceInstr, when set (the docs' table), receives each instruction written and the
// text written for it.
var traceInstr func(in isa.Instr, text string)

// notes say, for the docs' table, where a written instruction computes other values
// than ours, or how its sequence of ops computes the same.
var notes = map[isa.Opcode]string{
	isa.TTRI:     "an index sequence in f32 scratch tiles, every value an integer below 2^24: exact",
	isa.TCI:      "a step other than 1 or -1 is an index sequence times the step plus the start, written only when every value is exact",
	isa.TFILLPAD: "a fill of -Inf (+Inf) is a partial max (min) with a tile of the fill; 0 is the tile's pad value",
	isa.TNOT:     "bool's not is a xor with 1",
	isa.TCVT:     "ptoas 0.1.1 compiles every tcvt to CAST_RINT (nearest even): a float to integer conversion that truncates, floors, ceils or rounds half away is that and a correction from the bits of the error (exact); other modes to a float dtype, and .odd, are not written",
	isa.TPUSH:    "GM slot of the queue's buffer (see the cross-core hand-off)",
	isa.TPOP:     "GM slot of the queue's buffer (see the cross-core hand-off)",
	isa.TFREE:    "GM slot of the queue's buffer (see the cross-core hand-off)",
	isa.TMAXS:    "ptoas 0.1.1's tmaxs fails an assertion on a float scalar",
	isa.TLRELU:   "ptoas 0.1.1's tlrelu fails an assertion on a float scalar",
	isa.TROWMIN:  "ptoas 0.1.1 fails an assertion on a scratch tile nothing wrote",
	isa.TCOLSUM:  "ptoas 0.1.1 fails an assertion on a scratch tile nothing wrote",
	isa.TTRANS:   "the scratch operand is the destination: ptoas 0.1.1 fails an assertion on a scratch tile of its own, and its C++ TTRANS(dst, src) takes none",
	isa.SLD:      "the integer is a scalar argument of the kernel (pypto.sld names its GM place)",
	isa.TASSIGN:  "no op: a tile's address is the manual form's pypto.addr (ptoas 0.1.1 rejects pto.tassign)",
	isa.TGATHER:  "between barriers: ptoas 0.1.1 inserts no synchronisation for tgather",
	isa.MGATHER:  "a loop over chunks of the window (see GM gathers): ptoas 0.1.1 refuses tmgather",
	isa.TCMP:     "integer ops on order-preserving i32 keys, packed into the mask by gathers (see Compares): ptoas 0.1.1 miscompiles tcmp",
	isa.TCMPS:    "integer ops on order-preserving i32 keys, packed into the mask by gathers (see Compares): ptoas 0.1.1 rejects tcmps",
}

// instr writes one instruction of the body.
func (w *writer) instr(in isa.Instr) {
	if f, ok := opWriters[in.Op]; ok {
		start := w.body.Len()
		f(w, in)
		if traceInstr != nil {
			traceInstr(in, w.body.String()[start:])
		}
		return
	}
	if why, ok := missing[in.Op]; ok {
		w.fail("%s cannot be written in PTO-AS for ptoas 0.1.1: %s", in.Op, why)
	}
	w.fail("%s has no PTO-AS form", in.Op)
}

// operand is one operand of an op as written: an SSA name and its type.
type operand struct{ name, typ string }

// tileOp is tile operand i of in.
func (w *writer) tileOp(in isa.Instr, i int) operand {
	t := in.Args[i].Tile
	return operand{w.tile[t], w.tileType[t]}
}

// imm is immediate operand i of in as a constant of dtype d.
func (w *writer) imm(in isa.Instr, i int, d dtype.DType) operand {
	el, _ := elemType(d)
	return operand{w.scalarImm(in.Args[i].Imm, d), el}
}

// scalarOperand is immediate operand i of in, the scalar of a tile-scalar op on tile
// operand src, as a constant of dtype d: the value the vector unit uses (rounded to
// the tile's dtype, isa.ScalarOperand), which d holds exactly.
func (w *writer) scalarOperand(in isa.Instr, src, i int, d dtype.DType) operand {
	el, _ := elemType(d)
	x := in.Args[i].Imm
	return operand{w.scalarConst(x, isa.ScalarOperand(w.p.Tiles[in.Args[src].Tile].DType, x), d), el}
}

// op writes one generic-form op.
func (w *writer) op(name string, props, attrs string, ops ...operand) {
	names := make([]string, len(ops))
	types := make([]string, len(ops))
	for i, o := range ops {
		names[i], types[i] = o.name, o.typ
	}
	if props != "" {
		props = " <{" + props + "}>"
	}
	if attrs != "" {
		attrs = " {" + attrs + "}"
	}
	w.line(`"pto.%s"(%s)%s%s : (%s) -> ()`, name, strings.Join(names, ", "), props, attrs, strings.Join(types, ", "))
}

// group starts the ops that together stand for instruction in: the first carries the
// instruction (pypto.instr, in our text form) and the others pypto.part, so that a
// reader rebuilds the instruction. It returns the attributes of the k-th op.
func (w *writer) group(in isa.Instr) func(k int) string {
	text := isa.FormatInstr(w.p, in)
	return func(k int) string {
		if k == 0 {
			return "pypto.instr = " + strconv.Quote(text)
		}
		return "pypto.part"
	}
}

// temp declares a scratch tile shaped like tile t (all of it valid) where an op
// sequence needs one, so that ptoas keeps it only that long. The manual form gives it
// no address: only the ops of one instruction, on one pipe, use it.
func (w *writer) temp(t int) operand {
	d := w.p.Tiles[t]
	return w.scratchTile(d, d.DType, d.Rows, d.Cols, d.Layout)
}

func init() {
	// Elementwise tile-tile: (a, b, dst).
	for op, name := range map[isa.Opcode]string{
		isa.TADD: "tadd", isa.TSUB: "tsub", isa.TMUL: "tmul", isa.TMIN: "tmin", isa.TMAX: "tmax",
		isa.TPRELU: "tprelu", isa.TAND: "tand", isa.TOR: "tor", isa.TXOR: "txor", isa.TSHL: "tshl",
		isa.TSHR: "tshr", isa.TPARTADD: "tpartadd", isa.TPARTMAX: "tpartmax", isa.TPARTMIN: "tpartmin",
		isa.TGATHERB: "tgatherb", isa.TSCATTER: "tscatter",
		isa.TROWEXPANDSUB: "trowexpandsub", isa.TROWEXPANDMUL: "trowexpandmul", isa.TROWEXPANDDIV: "trowexpanddiv",
	} {
		opWriters[op] = func(w *writer, in isa.Instr) {
			w.op(name, "", "", w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 0))
		}
	}
	// Unary: (src, dst).
	for op, name := range map[isa.Opcode]string{
		isa.TABS: "tabs", isa.TNEG: "tneg", isa.TEXP: "texp", isa.TLOG: "tlog", isa.TSQRT: "tsqrt", isa.TRSQRT: "trsqrt",
		isa.TRECIP: "trecip", isa.TRELU: "trelu",
		isa.TROWEXPAND: "trowexpand", isa.TCOLEXPAND: "tcolexpand",
		isa.TRESHAPE: "treshape",
	} {
		opWriters[op] = func(w *writer, in isa.Instr) {
			w.op(name, "", "", w.tileOp(in, 1), w.tileOp(in, 0))
		}
	}
	opWriters[isa.TNOT] = writeNot
	// Reductions that take a scratch tile, (src, tmp, dst): ptoas 0.1.1 fails an
	// assertion on a scratch tile nothing wrote, so the tile is filled first.
	opWriters[isa.TCOLSUM] = writeScratchReduction("tcolsum")
	// ttrans (src, tmp, dst): ptoas 0.1.1 writes TTRANS(dst, src), dropping tmp, but
	// fails an assertion in its memory analysis when tmp is a tile of its own (written
	// first or not); with the destination as tmp it assembles.
	opWriters[isa.TTRANS] = func(w *writer, in isa.Instr) {
		w.op("ttrans", "", "", w.tileOp(in, 1), w.tileOp(in, 0), w.tileOp(in, 0))
	}
	// Tile-scalar: (src, scalar of src's dtype, dst).
	for op, name := range map[isa.Opcode]string{
		isa.TADDS: "tadds", isa.TSUBS: "tsubs", isa.TMULS: "tmuls", isa.TMINS: "tmins",
		isa.TANDS: "tands", isa.TORS: "tors", isa.TXORS: "txors",
	} {
		opWriters[op] = func(w *writer, in isa.Instr) {
			w.op(name, "", "", w.tileOp(in, 1), w.scalarOperand(in, 1, 2, scalarType(op, w.p.Tiles[in.Args[1].Tile].DType)), w.tileOp(in, 0))
		}
	}
	opWriters[isa.TADDC] = func(w *writer, in isa.Instr) {
		w.op("taddc", "", "", w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 3), w.tileOp(in, 0))
	}
	opWriters[isa.TSUBC] = func(w *writer, in isa.Instr) {
		w.op("tsubc", "", "", w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 3), w.tileOp(in, 0))
	}
	opWriters[isa.TSEL] = func(w *writer, in isa.Instr) {
		w.op("tsel", "", "", w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 3), w.tileOp(in, 0))
	}
	opWriters[isa.TEXPANDS] = func(w *writer, in isa.Instr) {
		dst := w.p.Tiles[in.Args[0].Tile]
		w.op("texpands", "", "", w.imm(in, 1, dst.DType), w.tileOp(in, 0))
	}
	opWriters[isa.TSORT32] = func(w *writer, in isa.Instr) { // (src, dst, idx)
		w.op("tsort32", "", "", w.tileOp(in, 1), w.tileOp(in, 0), w.tileOp(in, 2))
	}
	opWriters[isa.TCI] = writeCI
	opWriters[isa.TFILLPAD] = writeFillPad
	opWriters[isa.TEXTRACT] = func(w *writer, in isa.Instr) {
		r, c := w.index(int(in.Args[2].Imm)), w.index(int(in.Args[3].Imm))
		w.op("textract", "", "", w.tileOp(in, 1), operand{r, "index"}, operand{c, "index"}, w.tileOp(in, 0))
	}
	opWriters[isa.TMOV] = func(w *writer, in isa.Instr) { w.op("tmov", "", "", w.tileOp(in, 1), w.tileOp(in, 0)) }
	opWriters[isa.TMATMUL] = func(w *writer, in isa.Instr) {
		w.op("tmatmul", "", "", w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 0))
	}
	opWriters[isa.TMATMUL_ACC] = func(w *writer, in isa.Instr) {
		w.op("tmatmul.acc", "", "", w.tileOp(in, 0), w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 0))
	}
	opWriters[isa.TMATMUL_BIAS] = func(w *writer, in isa.Instr) {
		w.op("tmatmul.bias", "", "", w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 3), w.tileOp(in, 0))
	}
	opWriters[isa.TLOAD] = func(w *writer, in isa.Instr) {
		v := w.view(in.Args[1].GM, in.Args[0].Tile)
		w.op("tload", "operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>", "", v, w.tileOp(in, 0))
	}
	opWriters[isa.TSTORE] = func(w *writer, in isa.Instr) {
		if in.Mode != isa.ModeNone {
			w.fail("tstore.%s cannot be written in PTO-AS for ptoas 0.1.1: the dialect's tstore has no %s", in.Mode, map[isa.Mode]string{isa.AtomicAdd: "atomic add", isa.StoreRelu: "relu stage"}[in.Mode])
		}
		v := w.view(in.Args[0].GM, in.Args[1].Tile)
		w.op("tstore", "", "", w.tileOp(in, 1), v)
	}
	opWriters[isa.MSCATTER] = func(w *writer, in isa.Instr) {
		if in.Mode != isa.ModeNone {
			w.fail("mscatter.%s cannot be written in PTO-AS for ptoas 0.1.1: the dialect's tmscatter has no atomic add", in.Mode)
		}
		v := w.view(in.Args[0].GM, in.Args[1].Tile)
		w.op("tmscatter", "", "", w.tileOp(in, 1), w.tileOp(in, 2), v)
	}
	opWriters[isa.TASSIGN] = func(w *writer, in isa.Instr) {
		// Placement is the manual form's pypto.addr on the tile's declaration.
		if w.addrs == nil {
			w.fail("tassign places a tile, which the auto form leaves to ptoas; write the program's manual form")
		}
	}
	opWriters[isa.TTRI] = writeTri
	writeBroadcastsAndSelects()
	writeSync()
	writeScalar()
}

// writeScratchReduction writes a reduction that takes a scratch tile, (src, tmp, dst):
// ptoas 0.1.1 fails an assertion on a scratch tile nothing wrote, so the tile is
// filled first.
func writeScratchReduction(name string) opWriter {
	return func(w *writer, in isa.Instr) {
		g := w.group(in)
		tmp := w.temp(in.Args[1].Tile)
		d := w.p.Tiles[in.Args[1].Tile].DType
		w.op("texpands", "", g(0), operand{w.scalarImm(0, d), elemOf(d)}, tmp)
		w.op(name, "", g(1), w.tileOp(in, 1), tmp, w.tileOp(in, 0))
	}
}

// f32Scalars are the tile-scalar ops whose scalar the dialect types f32 whatever the
// tile's dtype; the others take a scalar of the tile's dtype.
var f32Scalars = map[isa.Opcode]bool{isa.TSUBS: true, isa.TMULS: true, isa.TMINS: true, isa.TREMS: true}

// scalarType is the dtype of op's scalar on a tile of dtype d.
func scalarType(op isa.Opcode, d dtype.DType) dtype.DType {
	if f32Scalars[op] {
		return dtype.Float32
	}
	return d
}

// elemOf is the dialect's element type of d.
func elemOf(d dtype.DType) string {
	el, _ := elemType(d)
	return el
}

// writeNot: bool's not is 1 - a, which the dialect's bitwise not (of the byte) is
// not; a xor with 1 is.
func writeNot(w *writer, in isa.Instr) {
	d := w.p.Tiles[in.Args[1].Tile]
	if d.DType != dtype.Bool {
		w.op("tnot", "", "", w.tileOp(in, 1), w.tileOp(in, 0))
		return
	}
	g := w.group(in)
	w.op("txors", "", g(0), w.tileOp(in, 1), operand{w.scalarImm(1, dtype.Int8), "i8"}, w.tileOp(in, 0))
}

// writeCI: the dialect's tci counts up or down by one from a start. Another step is
// an index sequence in an i32 scratch tile, converted to dst's dtype, times the step,
// plus the start: the export checks that every value is exact at each step (so the
// result is ours, one rounding of start + flat*step), else it fails.
func writeCI(w *writer, in isa.Instr) {
	d := w.p.Tiles[in.Args[0].Tile]
	start, step := in.Args[1].Imm, in.Args[2].Imm
	if (step == 1 || step == -1) && w.addrs != nil {
		w.op("tci", fmt.Sprintf("descending = %v", step < 0), "", w.imm(in, 1, d.DType), w.tileOp(in, 0))
		return
	}
	if step == 0 { // every element is the start
		w.op("texpands", "", w.group(in)(0), w.imm(in, 1, d.DType), w.tileOp(in, 0))
		return
	}
	// tci is a scalar-pipe op ptoas 0.1.1 inserts no synchronisation for: the auto
	// form drains every pipe around it (the manual form's flags order ours).
	f := newFencedSeq(w, in)
	if step == 1 || step == -1 {
		f.fenced("tci", fmt.Sprintf("descending = %v", step < 0), w.imm(in, 1, d.DType), w.tileOp(in, 0))
		return
	}
	for flat := 0; flat < d.Rows*d.Cols; flat++ {
		x := float64(flat) * step
		if float64(float32(x)) != x || float64(float32(step)) != step || dtype.Round(d.DType, x) != x || dtype.Round(d.DType, x+start) != x+start || float64(float32(start)) != start {
			w.fail("tci with step %v over %dx%d %s: the dialect's tci steps by 1, and index %d times the step (%v) or plus the start is not exact in f32 and %s, so the ops that stand for it would round", step, d.Rows, d.Cols, d.DType, flat, x, d.DType)
		}
	}
	dst := w.tileOp(in, 0)
	idx := dst
	if d.DType != dtype.Int32 {
		idx = w.scratchTile(d, dtype.Int32, d.Rows, d.Cols, d.Layout)
	}
	f.fenced("tci", "descending = false", operand{w.scalarImm(0, dtype.Int32), "i32"}, idx)
	if idx != dst {
		f.fenced("tcvt", "rmode = #pto<round_mode CAST_RINT>", idx, dst)
	}
	if step != 1 {
		f.op("tmuls", "", dst, operand{w.scalarImm(step, dtype.Float32), "f32"}, dst)
	}
	if start != 0 {
		el, _ := elemType(scalarType(isa.TADDS, d.DType))
		f.op("tadds", "", dst, operand{w.scalarImm(start, scalarType(isa.TADDS, d.DType)), el}, dst)
	}
}

// writeFillPad: the dialect's tfillpad fills with the destination tile's pad value,
// 0 where ours is 0. A fill of -Inf (+Inf) is the partial max (min) of src with a
// scratch tile of the fill value: inside src's valid region max(src, -Inf) = src,
// outside it only the scratch tile is valid.
func writeFillPad(w *writer, in isa.Instr) {
	v := in.Args[2].Imm
	if math.IsInf(v, 0) {
		g := w.group(in)
		tmp := w.temp(in.Args[0].Tile)
		d := w.p.Tiles[in.Args[0].Tile]
		w.op("texpands", "", g(0), w.imm(in, 2, d.DType), tmp)
		op := "tpartmax"
		if v > 0 {
			op = "tpartmin"
		}
		w.op(op, "", g(1), w.tileOp(in, 1), tmp, w.tileOp(in, 0))
		return
	}
	if v != 0 || math.Signbit(v) {
		w.fail("tfillpad with %v cannot be written in PTO-AS for ptoas 0.1.1: the dialect fills with the tile's pad value (0 here), and a fill of -Inf or +Inf is a partial max or min", v)
	}
	dst := in.Args[0].Tile
	if w.pads[dst] != padZero {
		w.fail("tfillpad needs tile %s's pad value to be zero, and the tile is declared without it", w.p.Tiles[dst].Name)
	}
	w.op("tfillpad", "", "", w.tileOp(in, 1), w.tileOp(in, 0))
}

// writeBroadcastsAndSelects: the broadcasts, selects and shifts the dialect has no op
// for, as its ops through a scratch tile. Every group computes what ours does (the
// exp-difference broadcasts too: ours rounds the difference before the exponential).
func writeBroadcastsAndSelects() {
	rowOps := map[isa.Opcode]string{isa.TROWEXPANDADD: "tadd", isa.TROWEXPANDMAX: "tmax", isa.TROWEXPANDMIN: "tmin"}
	for op, name := range rowOps {
		opWriters[op] = func(w *writer, in isa.Instr) {
			g := w.group(in)
			tmp := w.temp(in.Args[0].Tile)
			w.op("trowexpand", "", g(0), w.tileOp(in, 2), tmp)
			w.op(name, "", g(1), w.tileOp(in, 1), tmp, w.tileOp(in, 0))
		}
	}
	colOps := map[isa.Opcode]string{
		isa.TCOLEXPANDADD: "tadd", isa.TCOLEXPANDSUB: "tsub", isa.TCOLEXPANDMUL: "tmul", isa.TCOLEXPANDDIV: "tdiv",
		isa.TCOLEXPANDMAX: "tmax", isa.TCOLEXPANDMIN: "tmin",
	}
	for op, name := range colOps {
		opWriters[op] = func(w *writer, in isa.Instr) {
			g := w.group(in)
			tmp := w.temp(in.Args[0].Tile)
			w.op("tcolexpand", "", g(0), w.tileOp(in, 2), tmp)
			w.op(name, "", g(1), w.tileOp(in, 1), tmp, w.tileOp(in, 0))
		}
	}
	opWriters[isa.TROWEXPANDEXPDIF] = func(w *writer, in isa.Instr) {
		g := w.group(in)
		w.op("trowexpandsub", "", g(0), w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 0))
		w.op("texp", "", g(1), w.tileOp(in, 0), w.tileOp(in, 0))
	}
	opWriters[isa.TCOLEXPANDEXPDIF] = func(w *writer, in isa.Instr) {
		g := w.group(in)
		tmp := w.temp(in.Args[0].Tile)
		w.op("tcolexpand", "", g(0), w.tileOp(in, 2), tmp)
		w.op("tsub", "", g(1), w.tileOp(in, 1), tmp, w.tileOp(in, 0))
		w.op("texp", "", g(2), w.tileOp(in, 0), w.tileOp(in, 0))
	}
	opWriters[isa.TSELS] = func(w *writer, in isa.Instr) { // dst = a where mask else s
		g := w.group(in)
		tmp := w.temp(in.Args[0].Tile)
		d := w.p.Tiles[in.Args[0].Tile]
		w.op("texpands", "", g(0), w.imm(in, 3, d.DType), tmp)
		w.op("tsel", "", g(1), w.tileOp(in, 1), w.tileOp(in, 2), tmp, w.tileOp(in, 0))
	}
	// Tile-scalar ops written as the tile-tile op with the scalar expanded into a
	// scratch tile: the shifts, which the dialect has only tile-tile; and tmaxs and
	// tlrelu, whose lowering in ptoas 0.1.1 fails an assertion on a float scalar.
	for op, name := range map[isa.Opcode]string{isa.TSHLS: "tshl", isa.TSHRS: "tshr", isa.TMAXS: "tmax", isa.TLRELU: "tprelu"} {
		opWriters[op] = func(w *writer, in isa.Instr) {
			g := w.group(in)
			tmp := w.temp(in.Args[0].Tile)
			d := w.p.Tiles[in.Args[0].Tile]
			w.op("texpands", "", g(0), w.imm(in, 2, d.DType), tmp)
			w.op(name, "", g(1), w.tileOp(in, 1), tmp, w.tileOp(in, 0))
		}
	}
}

// writeSync: flags and barriers (the manual form; a hand-written program may carry
// them in either form).
func writeSync() {
	flag := func(name string) opWriter {
		return func(w *writer, in isa.Instr) {
			id := int(in.Args[2].Imm)
			if id < 0 || id >= maxEventIDs {
				w.fail("event id %d: the dialect names EVENT_ID0 to EVENT_ID%d", id, maxEventIDs-1)
			}
			if name == "set_flag" {
				w.flags++
			}
			w.line("pto.%s[<%s>, <%s>, <EVENT_ID%d>]", name, pipeNames[in.Args[0].Pipe], pipeNames[in.Args[1].Pipe], id)
		}
	}
	opWriters[isa.SET_FLAG] = flag("set_flag")
	opWriters[isa.WAIT_FLAG] = flag("wait_flag")
	opWriters[isa.TSYNC] = func(w *writer, in isa.Instr) {
		w.line(`"pto.barrier"() <{pipe = #pto.pipe<%s>}> : () -> ()`, pipeNames[in.Args[0].Pipe])
	}
}

// writeTri builds the triangle from an index sequence (the dialect has no triangle
// generator, and the compares of ptoas 0.1.1 are miscompiled), in f32 scratch tiles,
// where every value is an integer below 2^24 and so exact: flat = r*cols + c (tci,
// converted), c = flat rem cols, r = (flat - c) / cols, x = c - r; then y = d + 1 - x
// (.upper: x - d + 1), and min(relu(y), 1) is 1 exactly where c - r <= d (>= d),
// converted to dst's dtype.
func writeTri(w *writer, in isa.Instr) {
	dst := w.p.Tiles[in.Args[0].Tile]
	d := int(in.Args[1].Imm)
	f := newFencedSeq(w, in) // tci and tcvt between barriers: ptoas 0.1.1 synchronises neither
	scratch := func(dt dtype.DType) operand { return w.scratchTile(dst, dt, dst.Rows, dst.Cols, dst.Layout) }
	f32 := func(v int) operand { return operand{w.scalarImm(float64(v), dtype.Float32), "f32"} }
	idx, a, b := scratch(dtype.Int32), scratch(dtype.Float32), scratch(dtype.Float32)
	f.fenced("tci", "descending = false", operand{w.scalarImm(0, dtype.Int32), "i32"}, idx)
	f.fenced("tcvt", "rmode = #pto<round_mode CAST_RINT>", idx, a)
	f.op("trems", "", a, f32(dst.Cols), b)
	f.op("tsub", "", a, b, a)
	f.op("tdivs", "", a, f32(dst.Cols), a)
	f.op("tsub", "", b, a, b)
	if in.Mode == isa.TriUpper {
		f.op("tadds", "", b, f32(1-d), b)
	} else {
		f.op("texpands", "", f32(d+1), a)
		f.op("tsub", "", a, b, b)
	}
	f.op("trelu", "", b, b)
	if dst.DType == dtype.Float32 {
		f.op("tmins", "", b, f32(1), w.tileOp(in, 0))
		return
	}
	f.op("tmins", "", b, f32(1), b)
	f.fenced("tcvt", "rmode = #pto<round_mode CAST_RINT>", b, w.tileOp(in, 0))
}
