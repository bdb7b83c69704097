package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// vecBody is what an elementwise op's body sees: the emitter, the tile shape and the
// current tile's place, and scratch tiles declared on first use.
type vecBody struct {
	e      *emitter
	attrs  core.Attrs // the op's attributes
	tr, tc int
	// the current tile: its outer index and first row and column in the [outer, rows,
	// cols] flattening of the iteration space, whose shape is space
	o, r0, c0 int
	vr, vc    int // its valid rows and columns
	space     core.Shape
	// source is input 0 of an indirect op, seen through the affine part of its
	// addresses, and sourceElems its size (see gatherBody)
	source                  flatView
	sourceElems             int
	gatherLen, gatherStride int                // x's length and stride along the gathered axis
	scratch                 map[scratchKey]int // made on first use
}

// scratchKey names a scratch tile: by name, dtype and shape.
type scratchKey struct {
	name       string
	dt         dtype.DType
	rows, cols int
}

// tile returns the scratch tile called name (rows x cols of dt). Scratch tiles are
// written and read by the vector pipe alone, which runs in order, so one copy serves
// every iteration: only tiles that loads or stores touch are double-buffered.
func (b *vecBody) tile(name string, dt dtype.DType, rows, cols int) int {
	key := scratchKey{name, dt, rows, cols}
	t, ok := b.scratch[key]
	if !ok {
		if b.scratch == nil {
			b.scratch = map[scratchKey]int{}
		}
		t = b.e.tile(name, isa.Vec, dt, rows, cols)
		b.scratch[key] = t
	}
	return t
}

// emit appends an instruction with a mode and operands given as tiles or immediates.
func (b *vecBody) emit(op isa.Opcode, mode isa.Mode, args ...any) {
	ops := make([]isa.Operand, len(args), 8) // on the stack: the slab keeps the copy
	for i, a := range args {
		switch v := a.(type) {
		case int:
			ops[i] = isa.TileOp(v)
		case float64:
			ops[i] = isa.ImmOp(v)
		default:
			panic(fmt.Sprintf("vecBody.emit: operand %T", a))
		}
	}
	b.e.prog.Body = append(b.e.prog.Body, isa.Instr{Op: op, Mode: mode, Args: b.e.operands(ops)})
}

// onBools is what an arithmetic instruction means on 0/1 values, which the vector
// unit's arithmetic does not take: max is or, min is and.
var onBools = map[isa.Opcode]isa.Opcode{isa.TMAX: isa.TOR, isa.TMIN: isa.TAND}

// single is the body of an op that is one instruction.
func single(op isa.Opcode) func(b *vecBody, dst int, srcs []int) {
	return func(b *vecBody, dst int, srcs []int) {
		args := []any{dst}
		for _, s := range srcs {
			args = append(args, s)
		}
		instr := op
		if alt, ok := onBools[op]; ok && b.e.prog.Tiles[dst].DType == dtype.Bool {
			instr = alt
		}
		b.emit(instr, isa.ModeNone, args...)
	}
}

// maskToBool turns a packed comparison mask into a bool tile: 1 where a bit is set.
func (b *vecBody) maskToBool(dst, mask int) {
	ones := b.tile("ones", dtype.Bool, b.tr, b.tc)
	b.emit(isa.TEXPANDS, isa.ModeNone, ones, 1.0)
	b.emit(isa.TSELS, isa.ModeNone, dst, mask, ones, 0.0)
}

// mask returns the current slot's mask tile: one bit per element, 8 per byte.
func (b *vecBody) mask() int { return b.tile("mask", dtype.Int8, b.tr, b.tc/8) }

// compare is the body of a comparison: a packed mask from TCMP, then a bool tile.
func compare(mode isa.Mode) func(b *vecBody, dst int, srcs []int) {
	return func(b *vecBody, dst int, srcs []int) {
		m := b.mask()
		b.emit(isa.TCMP, mode, m, srcs[0], srcs[1])
		b.maskToBool(dst, m)
	}
}

// isNaN: x != x holds exactly for NaN.
func isNaNBody(b *vecBody, dst int, srcs []int) {
	m := b.mask()
	b.emit(isa.TCMP, isa.CmpNE, m, srcs[0], srcs[0])
	b.maskToBool(dst, m)
}

// isFinite: |x| < inf is false for both infinities and for NaN.
func isFiniteBody(b *vecBody, dst int, srcs []int) {
	dt := b.e.prog.Tiles[srcs[0]].DType
	abs := b.tile("abs", dt, b.tr, b.tc)
	b.emit(isa.TABS, isa.ModeNone, abs, srcs[0])
	m := b.mask()
	b.emit(isa.TCMPS, isa.CmpLT, m, abs, posInf)
	b.maskToBool(dst, m)
}

// where: cond (as int8) != 0 selects a, else b.
func whereBody(b *vecBody, dst int, srcs []int) {
	m := b.mask()
	b.emit(isa.TCMPS, isa.CmpNE, m, srcs[0], 0.0)
	b.emit(isa.TSEL, isa.ModeNone, dst, m, srcs[1], srcs[2])
}

// exactIntegerBound is the magnitude from which every value of dt is an integer:
// 2^(significand bits). Integers are always integral.
func exactIntegerBound(dt dtype.DType) float64 {
	switch dt {
	case dtype.Float32:
		return 1 << 23
	case dtype.Float16:
		return 1 << 10
	case dtype.BFloat16:
		return 1 << 7
	}
	return 1 << 31
}

// roundToInteger writes x rounded to an integral value by mode (floor, ceil, rint) into
// dst, both of x's dtype: through int32 with the rounding mode, then back. Values too
// large for that are already integral, and NaN and the infinities must stay as they
// are, so those (|x| not below the bound; NaN compares false) keep x.
func (b *vecBody) roundToInteger(dst, x int, mode isa.Mode) {
	dt := b.e.prog.Tiles[x].DType
	i := b.tile("as_int", dtype.Int32, b.tr, b.tc)
	y := b.tile("rounded", dt, b.tr, b.tc)
	a := b.tile("magnitude", dt, b.tr, b.tc)
	b.emit(isa.TCVT, mode, i, x)
	b.emit(isa.TCVT, isa.ModeNone, y, i)
	// An integer has no -0: a zero result takes x's sign from x*0, as numpy's does
	// (floor(-0.0) and ceil(-0.5) are -0.0).
	m := b.mask()
	b.emit(isa.TMULS, isa.ModeNone, a, x, 0.0)
	b.emit(isa.TCMPS, isa.CmpEQ, m, y, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, y, m, a, y)
	b.emit(isa.TABS, isa.ModeNone, a, x)
	b.emit(isa.TCMPS, isa.CmpLT, m, a, exactIntegerBound(dt))
	b.emit(isa.TSEL, isa.ModeNone, dst, m, y, x)
}

// rounding is the body of floor, ceil and round (half to even, as numpy's).
func rounding(mode isa.Mode) func(b *vecBody, dst int, srcs []int) {
	return func(b *vecBody, dst int, srcs []int) { b.roundToInteger(dst, srcs[0], mode) }
}

// floorDivideBody follows numpy's divmod: r = a mod b (sign of b), then (a - r) / b,
// which is exact for integers and for floats is rounded to the nearest integer; a
// float division by zero gives a / b (±inf or NaN) as numpy's does.
func floorDivideBody(b *vecBody, dst int, srcs []int) {
	x, y := srcs[0], srcs[1]
	dt := b.e.prog.Tiles[dst].DType
	r := b.tile("rem", dt, b.tr, b.tc)
	t := b.tile("diff", dt, b.tr, b.tc)
	if !dt.IsFloat() {
		nz, y1 := b.nonZeroDivisor(y)
		q := b.tile("quot", dt, b.tr, b.tc)
		b.emit(isa.TREM, isa.ModeNone, r, x, y1)
		b.emit(isa.TSUB, isa.ModeNone, t, x, r)
		b.emit(isa.TDIV, isa.ModeNone, q, t, y1)
		b.emit(isa.TSELS, isa.ModeNone, dst, nz, q, 0.0)
		return
	}
	b.emit(isa.TREM, isa.ModeNone, r, x, y)
	b.emit(isa.TSUB, isa.ModeNone, t, x, r)
	q := b.tile("quot", dt, b.tr, b.tc)
	b.emit(isa.TDIV, isa.ModeNone, q, t, y)
	rq := b.tile("quot_int", dt, b.tr, b.tc)
	b.roundToInteger(rq, q, isa.RoundRint)
	byZero := b.tile("by_zero", dt, b.tr, b.tc)
	b.emit(isa.TDIV, isa.ModeNone, byZero, x, y)
	zm := b.tile("zero_mask", dtype.Int8, b.tr, b.tc/8)
	b.emit(isa.TCMPS, isa.CmpEQ, zm, y, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, dst, zm, byZero, rq)
}

// nonZeroDivisor returns a mask of the nonzero elements of an integer divisor y and a
// copy of y with its zeros replaced by 1: integer division by zero is an error on the
// vector unit, and zeros also fill the padding of edge tiles. Results where y was 0
// are then set to 0, numpy's (and the reference's) value.
func (b *vecBody) nonZeroDivisor(y int) (mask, safe int) {
	dt := b.e.prog.Tiles[y].DType
	mask = b.mask()
	safe = b.tile("divisor", dt, b.tr, b.tc)
	b.emit(isa.TCMPS, isa.CmpNE, mask, y, 0.0)
	b.emit(isa.TSELS, isa.ModeNone, safe, mask, y, 1.0)
	return mask, safe
}

// modBody is numpy's remainder (the sign of b), which TREM computes; integer modulo 0
// gives 0.
func modBody(b *vecBody, dst int, srcs []int) {
	if b.e.prog.Tiles[dst].DType.IsFloat() {
		b.emit(isa.TREM, isa.ModeNone, dst, srcs[0], srcs[1])
		return
	}
	nz, y1 := b.nonZeroDivisor(srcs[1])
	r := b.tile("rem", b.e.prog.Tiles[dst].DType, b.tr, b.tc)
	b.emit(isa.TREM, isa.ModeNone, r, srcs[0], y1)
	b.emit(isa.TSELS, isa.ModeNone, dst, nz, r, 0.0)
}

// iotaBody fills the tile with each element's index along the attribute axis of the
// iteration space: the column index (a sequence along one row, broadcast down), the row
// index (a sequence down a column, broadcast along the rows; made in fp32 on a tile 8
// wide whose first column steps by one per row, then converted), or, for a leading
// axis, the tile's one value.
func iotaBody(b *vecBody, dst int, _ []int) {
	n := len(b.space)
	axis := b.attrs.Int("axis", 0)
	if axis < 0 {
		axis += n
	}
	switch {
	case axis == n-1:
		col := b.tile("iota_col", dtype.Int32, 1, b.tc)
		b.emit(isa.TCI, isa.ModeNone, col, float64(b.c0), 1.0)
		b.emit(isa.TCOLEXPAND, isa.ModeNone, dst, col)
	case axis == n-2:
		rowF := b.tile("iota_rowf", dtype.Float32, b.tr, 8)
		row := b.tile("iota_row", dtype.Int32, b.tr, 8)
		b.emit(isa.TCI, isa.ModeNone, rowF, float64(b.r0), 1.0/8)
		b.emit(isa.TCVT, isa.ModeNone, row, rowF)
		b.emit(isa.TROWEXPAND, isa.ModeNone, dst, row)
	default: // a leading axis: the same index over the whole tile
		idx := b.o
		for ax := n - 3; ax > axis; ax-- {
			idx /= b.space[ax]
		}
		b.emit(isa.TEXPANDS, isa.ModeNone, dst, float64(idx%b.space[axis]))
	}
}
