package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// vecBody is what an elementwise op's body sees: the emitter, the tile shape and the
// current ping-pong slot, and scratch tiles declared on first use.
type vecBody struct {
	e       *emitter
	attrs   core.Attrs // the op's attributes
	tr, tc  int
	slot    int
	scratch map[string][2]int
}

// tile returns the current slot's scratch tile called name (rows x cols of dt).
func (b *vecBody) tile(name string, dt dtype.DType, rows, cols int) int {
	key := fmt.Sprintf("%s_%s_%dx%d", name, dt, rows, cols)
	t, ok := b.scratch[key]
	if !ok {
		t = b.e.pingPong(name, isa.Vec, dt, rows, cols)
		b.scratch[key] = t
	}
	return t[b.slot]
}

// emit appends an instruction with a mode and operands given as tiles or immediates.
func (b *vecBody) emit(op isa.Opcode, mode isa.Mode, args ...any) {
	ops := make([]isa.Operand, len(args))
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
	b.e.prog.Body = append(b.e.prog.Body, isa.Instr{Op: op, Mode: mode, Args: ops})
}

// single is the body of an op that is one instruction.
func single(op isa.Opcode) func(b *vecBody, dst int, srcs []int) {
	return func(b *vecBody, dst int, srcs []int) {
		args := []any{dst}
		for _, s := range srcs {
			args = append(args, s)
		}
		b.emit(op, isa.ModeNone, args...)
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
