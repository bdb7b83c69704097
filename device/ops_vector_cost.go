package device

import (
	"pypto/dtype"
	"pypto/isa"
)

// The vector unit's cost model: what a vector instruction occupies its pipe for
// (workVector, after the pipe's start-up) and how long its result takes after that
// (vectorLatency). The mechanisms and their constants are fitted to single-instruction
// measurements (device/calib/instr.go; docs/device.md, "Instruction costs"):
//
//   - Repeats. The unit moves VectorBytesPerCycle bytes of each operand per repeat.
//     An instruction with one tile source streams a region of whole rows as one
//     vector (a row narrower than the tile is a repeat of its own); a tile-scalar
//     form walks the region row by row, a repeat per row chunk.
//   - Operands. A repeat reads each tile source in a cycle of its own (the UB read
//     path carries one operand's repeat a cycle), so a binary instruction takes two
//     cycles a repeat.
//   - The special-function path. Division, exponential and logarithm take
//     VectorSFUCyclesPerRepeat cycles a repeat per source; division works in fp32, so
//     an f16 or bf16 division costs the repeats of its fp32 width, and a division by
//     a scalar first broadcasts the scalar into a tile (a pass of its own).
//   - Result latency. Float arithmetic delivers its result VectorFloatLatencyCycles
//     after its last repeat (a float tile-scalar form VectorScalarFormLatencyCycles),
//     integer arithmetic VectorIntLatencyCycles; logic, moves, fills and generators
//     none. A dependent instruction waits for it, an independent one overlaps it.
//   - Dependent steps inside one instruction. A row reduction reduces one repeat at a
//     time through a tree (VectorReduceRepeatCycles each); a column reduction adds
//     the rows one after another, each step an instruction over the row's repeats
//     issued when the previous one's result is ready; a row broadcast and a select read each row's value or
//     mask into a register first (UBScalarReadCycles).
//   - Layout. A transpose moves 16-bit elements, so a 32-bit one takes two passes; a
//     fill in place writes only the pad around the valid region.

// vectorUnit is the path of the vector unit an instruction takes.
type vectorUnit uint8

const (
	unitLogic vectorUnit = iota // bitwise, sign, moves, fills, generators
	unitArith                   // add, multiply, compare, min / max, conversions
	unitSFU                     // division, exponential, logarithm
)

// vectorUnits lists the opcodes that are not plain arithmetic.
var vectorUnits = map[isa.Opcode]vectorUnit{
	isa.TABS: unitLogic, isa.TNEG: unitLogic, isa.TNOT: unitLogic,
	isa.TAND: unitLogic, isa.TOR: unitLogic, isa.TXOR: unitLogic, isa.TSHL: unitLogic, isa.TSHR: unitLogic,
	isa.TANDS: unitLogic, isa.TORS: unitLogic, isa.TXORS: unitLogic, isa.TSHLS: unitLogic, isa.TSHRS: unitLogic,
	isa.TSEL: unitLogic, isa.TSELS: unitLogic, isa.TEXPANDS: unitLogic, isa.TROWEXPAND: unitLogic, isa.TCOLEXPAND: unitLogic,
	isa.TTRANS: unitLogic, isa.TFILLPAD: unitLogic, isa.TCI: unitLogic, isa.TTRI: unitLogic,
	isa.TMOV: unitLogic, isa.TINSERT: unitLogic, isa.TGATHER: unitLogic, isa.TGATHERB: unitLogic, isa.TSCATTER: unitLogic,
	isa.TDIV: unitSFU, isa.TDIVS: unitSFU, isa.TREM: unitSFU, isa.TREMS: unitSFU, isa.TFMOD: unitSFU, isa.TFMODS: unitSFU,
	isa.TEXP: unitSFU, isa.TLOG: unitSFU, isa.TROWEXPANDDIV: unitSFU, isa.TCOLEXPANDDIV: unitSFU,
	isa.TROWEXPANDEXPDIF: unitSFU, isa.TCOLEXPANDEXPDIF: unitSFU,
}

func unitOf(op isa.Opcode) vectorUnit {
	if u, ok := vectorUnits[op]; ok {
		return u
	}
	return unitArith
}

// workVector is a vector instruction's repeats and dependent steps, in cycles.
func workVector(chip *Chip, in *Instr) int64 {
	dst := in.Args[0]
	size := widestTile(in)
	perSource := int64(1)
	if unitOf(in.Op) == unitSFU && chip.VectorSFUCyclesPerRepeat > 1 {
		perSource = int64(chip.VectorSFUCyclesPerRepeat)
		if isDivision(in.Op) {
			size = max(size, dtype.Float32.Size()) // the divider works in fp32
		}
	}
	reps := func(o Operand) int64 { return vectorRepeats(chip, o.ValidRows, o.ValidCols, o.Cols, size) }
	info := in.Op.Info()
	switch {
	case in.Op == isa.TSEL || in.Op == isa.TSELS:
		// Each row's mask goes into the compare-mask register, then the row is
		// selected from its sources.
		return int64(dst.ValidRows)*int64(chip.UBScalarReadCycles) + tileSources(in)*rowRepeats(chip, dst.ValidRows, dst.ValidCols, size)
	case in.Op == isa.TEXPANDS:
		return reps(dst)
	case info.Class == isa.ClassTileScalar:
		r := rowRepeats(chip, dst.ValidRows, dst.ValidCols, size)
		if in.Op == isa.TDIVS {
			return r + 2*perSource*r // the scalar broadcast into a tile, then a tile division
		}
		return perSource * tileSources(in) * r
	case info.Class == isa.ClassReduce:
		return reduceCycles(chip, in, size)
	case in.Op == isa.TROWEXPAND:
		return int64(dst.ValidRows) * (int64(chip.UBScalarReadCycles) + rowRepeats(chip, 1, dst.ValidCols, size))
	case info.Class == isa.ClassBroadcast && in.Op < isa.TCOLEXPAND:
		return int64(dst.ValidRows)*int64(chip.UBScalarReadCycles) + 2*perSource*reps(dst)
	case in.Op == isa.TCOLEXPAND:
		return reps(dst)
	case in.Op == isa.TTRANS:
		return transposePasses(chip, size) * reps(dst)
	case in.Op == isa.TCMP:
		return 2 * reps(in.Args[1])
	case in.Op == isa.TCMPS:
		src := in.Args[1]
		return rowRepeats(chip, src.ValidRows, src.ValidCols, size)
	case in.Op == isa.TFILLPAD:
		return fillPadRepeats(chip, in, size)
	}
	return perSource * max(1, tileSources(in)) * reps(dst)
}

// vectorLatency is when a vector instruction's result is ready after its last
// repeat: its unit's latency for the destination's dtype (a compare's for its
// sources').
func vectorLatency(chip *Chip, in *Instr) int64 {
	if unitOf(in.Op) == unitLogic {
		return 0
	}
	dt := in.Args[0].DType
	if len(in.Args) > 1 && in.Args[1].Kind == isa.KindTile {
		dt = in.Args[1].DType // a conversion or compare computes in its source's type
	}
	switch {
	case dt.IsInt():
		return int64(chip.VectorIntLatencyCycles)
	case in.Op.Info().Class == isa.ClassTileScalar && unitOf(in.Op) == unitArith && chip.VectorScalarFormLatencyCycles > 0:
		return int64(chip.VectorScalarFormLatencyCycles)
	}
	return int64(chip.VectorFloatLatencyCycles)
}

// reduceCycles: a row reduction walks each row's repeats through the reduction
// tree; a column reduction adds the rows one after another, each row a dependent
// step: an instruction over the row's repeats (its 256-byte column chunks), issued
// once the previous step's result is ready. The chunks of a row are independent, so
// a wide row's chains run side by side in one step's repeats, not one after another.
func reduceCycles(chip *Chip, in *Instr, size int) int64 {
	src := in.Args[1]
	tree := int64(max(1, chip.VectorReduceRepeatCycles))
	chunks := ceilDiv(int64(src.ValidCols*size), chip.VectorBytesPerCycle)
	switch in.Op {
	case isa.TROWSUM, isa.TROWPROD, isa.TROWMAX, isa.TROWMIN:
		return int64(src.ValidRows) * chunks * tree
	}
	step := int64(chip.IssueCycles+chip.PipeStartup[isa.PipeV]) + vectorLatency(chip, in) + chunks
	return chunks*tree + int64(max(0, src.ValidRows-1))*step
}

// transposePasses: the transposer moves 16-bit elements (16 x 16 blocks), so a
// 32-bit transpose is two passes over the tile. Assumed: the single measured
// transpose (fp32 128 x 128) is about two cycles a repeat.
func transposePasses(chip *Chip, size int) int64 {
	if size > 2 && chip.VectorFloatLatencyCycles > 0 {
		return int64(size / 2)
	}
	return 1
}

// fillPadRepeats: out of place a fill writes the whole destination; in place (the
// destination is the source) only the pad around the source's valid region, the
// columns right of it row by row and the rows below it.
func fillPadRepeats(chip *Chip, in *Instr, size int) int64 {
	dst, src := in.Args[0], in.Args[1]
	whole := ceilDiv(int64(dst.Rows*dst.Cols*size), chip.VectorBytesPerCycle)
	if dst.Loc != src.Loc || dst.Addr != src.Addr || chip.VectorFloatLatencyCycles == 0 {
		return whole
	}
	vr, vc := min(src.ValidRows, dst.Rows), min(src.ValidCols, dst.Cols)
	right := rowRepeats(chip, vr, dst.Cols-vc, size)
	below := ceilDiv(int64((dst.Rows-vr)*dst.Cols*size), chip.VectorBytesPerCycle)
	return max(1, right+below)
}

// widestTile is the largest element size among the instruction's tile operands.
func widestTile(in *Instr) int {
	size := 0
	for _, a := range in.Args {
		if a.Kind == isa.KindTile {
			size = max(size, a.DType.Size())
		}
	}
	return size
}

// tileSources counts the tile operands an instruction reads besides its destination
// (a select's mask is read per row, apart).
func tileSources(in *Instr) int64 {
	n := int64(0)
	for i, a := range in.Args[1:] {
		if a.Kind == isa.KindTile && !(i == 0 && (in.Op == isa.TSEL || in.Op == isa.TSELS)) {
			n++
		}
	}
	return n
}

func isDivision(op isa.Opcode) bool {
	switch op {
	case isa.TDIV, isa.TDIVS, isa.TREM, isa.TREMS, isa.TFMOD, isa.TFMODS, isa.TROWEXPANDDIV, isa.TCOLEXPANDDIV:
		return true
	}
	return false
}

// vectorRepeats is the repeats of a rows x cols region of a tile with fullCols
// columns and elements of size bytes: one vector when the region is whole rows,
// else a repeat per row chunk.
func vectorRepeats(chip *Chip, rows, cols, fullCols, size int) int64 {
	if cols >= fullCols {
		return ceilDiv(int64(rows*cols*size), chip.VectorBytesPerCycle)
	}
	return rowRepeats(chip, rows, cols, size)
}

// rowRepeats is the repeats of a rows x cols region walked row by row.
func rowRepeats(chip *Chip, rows, cols, size int) int64 {
	return int64(rows) * ceilDiv(int64(cols*size), chip.VectorBytesPerCycle)
}
