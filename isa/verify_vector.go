package isa

import (
	"fmt"
	"math"

	"pypto/dtype"
)

// Rules of the vector instructions (Vec tiles on the V pipe). Each row's Rule in the
// opcode table says the same in words.

// dtypeClass is a set of dtypes an instruction accepts, with its name for messages.
type dtypeClass struct {
	name string
	ok   func(dtype.DType) bool
}

var (
	numericClass = dtypeClass{"numeric (not bool)", func(d dtype.DType) bool { return d.IsFloat() || d.IsInt() }}
	floatClass   = dtypeClass{"f32, f16 or bf16", dtype.DType.IsFloat}
	bitwiseClass = dtypeClass{"i8, i32 or bool", func(d dtype.DType) bool { return d.IsInt() || d == dtype.Bool }}
	intClass     = dtypeClass{"i8 or i32", dtype.DType.IsInt}
)

func (c dtypeClass) check(op Opcode, t TileDecl) string {
	if !c.ok(t.DType) {
		return fmt.Sprintf("%s takes %s tiles, %s is %s", op, c.name, tileRef(t), t.DType)
	}
	return ""
}

// vecAll checks that the listed operands are Vec tiles.
func (v *verifier) vecAll(in Instr, idx ...int) string {
	for _, i := range idx {
		if t := v.tileOf(in.Args[i]); t.Loc != Vec {
			return fmt.Sprintf("%s works on vec tiles, %s is in %s", in.Op, tileRef(t), t.Loc)
		}
	}
	return ""
}

func sameShape(op Opcode, a, b TileDecl) string {
	if a.Rows != b.Rows || a.Cols != b.Cols {
		return fmt.Sprintf("%s operands differ in shape: %s is %dx%d, %s is %dx%d", op, tileRef(a), a.Rows, a.Cols, tileRef(b), b.Rows, b.Cols)
	}
	return ""
}

func sameDType(op Opcode, a, b TileDecl) string {
	if a.DType != b.DType {
		return fmt.Sprintf("%s does not convert: %s is %s, %s is %s", op, tileRef(a), a.DType, tileRef(b), b.DType)
	}
	return ""
}

func first(msgs ...string) string {
	for _, m := range msgs {
		if m != "" {
			return m
		}
	}
	return ""
}

func vectorClass(c dtypeClass) func(v *verifier, in Instr) string {
	return func(v *verifier, in Instr) string {
		if msg := checkVectorSameType(v, in); msg != "" {
			return msg
		}
		return c.check(in.Op, v.tileOf(in.Args[0]))
	}
}

var (
	checkVectorNumeric = vectorClass(numericClass)
	checkVectorFloat   = vectorClass(floatClass)
	checkVectorBitwise = vectorClass(bitwiseClass)
	checkVectorShift   = vectorClass(intClass)
)

// scalarFits checks a tile-scalar immediate against an integer or bool dtype.
func scalarFits(op Opcode, s float64, d dtype.DType) string {
	if !d.IsInt() && d != dtype.Bool {
		return ""
	}
	lo, hi := intRange(d)
	if s != math.Trunc(s) || s < lo || s > hi {
		return fmt.Sprintf("%s scalar %v is not an integer in the range of %s [%v, %v]", op, s, d, lo, hi)
	}
	return ""
}

func intRange(d dtype.DType) (float64, float64) {
	switch d {
	case dtype.Int8:
		return math.MinInt8, math.MaxInt8
	case dtype.Int32:
		return math.MinInt32, math.MaxInt32
	case dtype.Bool:
		return 0, 1
	}
	return math.Inf(-1), math.Inf(1)
}

func tileScalar(c dtypeClass, integerScalar bool) func(v *verifier, in Instr) string {
	return func(v *verifier, in Instr) string {
		dst, src, s := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), in.Args[2].Imm
		msg := first(v.vecAll(in, 0, 1), sameShape(in.Op, dst, src), sameDType(in.Op, dst, src), c.check(in.Op, dst), scalarFits(in.Op, s, dst.DType))
		if msg == "" && integerScalar && s != math.Trunc(s) {
			msg = fmt.Sprintf("%s shift count %v is not an integer", in.Op, s)
		}
		return msg
	}
}

var (
	checkTileScalarNumeric = tileScalar(numericClass, false)
	checkTileScalarFloat   = tileScalar(floatClass, false)
	checkTileScalarBitwise = tileScalar(bitwiseClass, false)
	checkTileScalarShift   = tileScalar(intClass, true)
)

// checkMask: a packed mask tile is i8 with the data's rows and at least a bit per col.
func checkMask(op Opcode, mask, data TileDecl) string {
	switch {
	case mask.DType != dtype.Int8:
		return fmt.Sprintf("%s mask %s is %s, want i8 (8 packed bits per byte)", op, tileRef(mask), mask.DType)
	case mask.Rows != data.Rows || mask.Cols*8 < data.Cols:
		return fmt.Sprintf("%s mask %s (%dx%d) cannot hold a bit per element of %s (%dx%d): want %d rows and at least %d cols",
			op, tileRef(mask), mask.Rows, mask.Cols, tileRef(data), data.Rows, data.Cols, data.Rows, (data.Cols+7)/8)
	}
	return ""
}

// checkCompare covers tcmp (mask, a, b) and tcmps (mask, a, s).
func checkCompare(v *verifier, in Instr) string {
	mask, a := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	if msg := first(v.vecAll(in, 0, 1), numericClass.check(in.Op, a), checkMask(in.Op, mask, a)); msg != "" {
		return msg
	}
	if in.Op == TCMP {
		b := v.tileOf(in.Args[2])
		return first(v.vecAll(in, 2), sameShape(in.Op, a, b), sameDType(in.Op, a, b))
	}
	return ""
}

// checkSelect covers tsel (dst, mask, a, b) and tsels (dst, mask, a, s).
func checkSelect(v *verifier, in Instr) string {
	dst, mask, a := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), v.tileOf(in.Args[2])
	msg := first(v.vecAll(in, 0, 1, 2), sameShape(in.Op, dst, a), sameDType(in.Op, dst, a), checkMask(in.Op, mask, dst))
	if msg != "" {
		return msg
	}
	if in.Op == TSEL {
		b := v.tileOf(in.Args[3])
		return first(v.vecAll(in, 3), sameShape(in.Op, dst, b), sameDType(in.Op, dst, b))
	}
	return scalarFits(in.Op, in.Args[3].Imm, dst.DType)
}

func checkExpandScalar(v *verifier, in Instr) string {
	return first(v.vecAll(in, 0), scalarFits(in.Op, in.Args[1].Imm, v.tileOf(in.Args[0]).DType))
}

func checkRowReduce(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	msg := first(v.vecAll(in, 0, 1), sameDType(in.Op, dst, src), numericClass.check(in.Op, src))
	if msg == "" && dst.Rows != src.Rows {
		msg = fmt.Sprintf("%s writes one value per row: %s has %d rows, %s has %d", in.Op, tileRef(dst), dst.Rows, tileRef(src), src.Rows)
	}
	return msg
}

func checkColReduce(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	msg := first(v.vecAll(in, 0, 1), sameDType(in.Op, dst, src), numericClass.check(in.Op, src))
	if msg == "" && dst.Cols != src.Cols {
		msg = fmt.Sprintf("%s writes one value per column: %s has %d cols, %s has %d", in.Op, tileRef(dst), dst.Cols, tileRef(src), src.Cols)
	}
	return msg
}

// checkRowExpand: dst[r,c] = src[r,0], so src needs dst's rows.
func checkRowExpand(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	msg := first(v.vecAll(in, 0, 1), sameDType(in.Op, dst, src))
	if msg == "" && dst.Rows != src.Rows {
		msg = fmt.Sprintf("%s broadcasts one value per row: %s has %d rows, %s has %d", in.Op, tileRef(dst), dst.Rows, tileRef(src), src.Rows)
	}
	return msg
}

func checkColExpand(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	msg := first(v.vecAll(in, 0, 1), sameDType(in.Op, dst, src))
	if msg == "" && dst.Cols != src.Cols {
		msg = fmt.Sprintf("%s broadcasts one value per column: %s has %d cols, %s has %d", in.Op, tileRef(dst), dst.Cols, tileRef(src), src.Cols)
	}
	return msg
}

func expandBinary(row bool) func(v *verifier, in Instr) string {
	return func(v *verifier, in Instr) string {
		dst, a := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
		class := numericClass
		if in.Op == TROWEXPANDEXPDIF || in.Op == TCOLEXPANDEXPDIF {
			class = floatClass
		}
		msg := first(v.vecAll(in, 0, 1, 2), sameShape(in.Op, dst, a), sameDType(in.Op, dst, a), class.check(in.Op, dst))
		if msg != "" {
			return msg
		}
		b := Instr{Op: in.Op, Args: []Operand{in.Args[0], in.Args[2]}}
		if row {
			return checkRowExpand(v, b)
		}
		return checkColExpand(v, b)
	}
}

var (
	checkRowExpandBinary = expandBinary(true)
	checkColExpandBinary = expandBinary(false)
)

// checkIndex: an index or offset tile is a Vec i32 tile of the given shape.
func checkIndex(op Opcode, idx, shape TileDecl) string {
	switch {
	case idx.DType != dtype.Int32:
		return fmt.Sprintf("%s index tile %s is %s, want i32", op, tileRef(idx), idx.DType)
	case idx.Rows != shape.Rows || idx.Cols != shape.Cols:
		return fmt.Sprintf("%s index tile %s is %dx%d, want %dx%d like %s", op, tileRef(idx), idx.Rows, idx.Cols, shape.Rows, shape.Cols, tileRef(shape))
	}
	return ""
}

// checkGather covers tgather and tgatherb (dst, src, idx): idx has dst's shape.
func checkGather(v *verifier, in Instr) string {
	dst, src, idx := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), v.tileOf(in.Args[2])
	return first(v.vecAll(in, 0, 1, 2), sameDType(in.Op, dst, src), checkIndex(in.Op, idx, dst))
}

// checkScatter (dst, src, idx): idx has src's shape.
func checkScatter(v *verifier, in Instr) string {
	dst, src, idx := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), v.tileOf(in.Args[2])
	return first(v.vecAll(in, 0, 1, 2), sameDType(in.Op, dst, src), checkIndex(in.Op, idx, src))
}

func checkSort32(v *verifier, in Instr) string {
	dst, src, idx := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), v.tileOf(in.Args[2])
	if msg := first(v.vecAll(in, 0, 1, 2), checkIndex(in.Op, idx, src)); msg != "" {
		return msg
	}
	switch {
	case src.DType != dtype.Float32 || dst.DType != dtype.Float32:
		return fmt.Sprintf("%s sorts f32 values into f32 pairs: %s is %s, %s is %s", in.Op, tileRef(src), src.DType, tileRef(dst), dst.DType)
	case src.Cols%32 != 0:
		return fmt.Sprintf("%s sorts blocks of 32: %s has %d cols", in.Op, tileRef(src), src.Cols)
	case dst.Rows != src.Rows || dst.Cols != 2*src.Cols:
		return fmt.Sprintf("%s writes (value, index) pairs: %s is %dx%d, want %dx%d", in.Op, tileRef(dst), dst.Rows, dst.Cols, src.Rows, 2*src.Cols)
	}
	return ""
}

func checkMrgSort(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	if msg := first(v.vecAll(in, 0, 1), sameShape(in.Op, dst, src)); msg != "" {
		return msg
	}
	switch {
	case src.DType != dtype.Float32 || dst.DType != dtype.Float32:
		return fmt.Sprintf("%s merges f32 (value, index) pairs: %s is %s, %s is %s", in.Op, tileRef(src), src.DType, tileRef(dst), dst.DType)
	case src.Cols%2 != 0:
		return fmt.Sprintf("%s merges (value, index) pairs: %s has an odd number of cols (%d)", in.Op, tileRef(src), src.Cols)
	}
	n, ok := intImm(in.Args[2].Imm, src.Cols/2)
	if !ok || n == 0 || (src.Cols/2)%n != 0 {
		return fmt.Sprintf("%s run length %v is not a positive integer dividing the %d pairs of a row", in.Op, in.Args[2].Imm, src.Cols/2)
	}
	return ""
}

func checkCI(v *verifier, in Instr) string {
	dst := v.tileOf(in.Args[0])
	return first(v.vecAll(in, 0), numericClass.check(in.Op, dst), scalarFits(in.Op, in.Args[1].Imm, dst.DType), scalarFits(in.Op, in.Args[2].Imm, dst.DType))
}

func checkTri(v *verifier, in Instr) string {
	dst, d := v.tileOf(in.Args[0]), in.Args[1].Imm
	if msg := first(v.vecAll(in, 0), numericClass.check(in.Op, dst)); msg != "" {
		return msg
	}
	if d != math.Trunc(d) || math.Abs(d) > maxScalarImm {
		return fmt.Sprintf("%s diagonal %v is not an integer", in.Op, d)
	}
	return ""
}

// checkScaleRows: a per-row scale or offset tile is f32 with the data's rows.
func checkScaleRows(op Opcode, s, data TileDecl) string {
	if s.DType != dtype.Float32 || s.Rows != data.Rows {
		return fmt.Sprintf("%s scale and offset are f32 with one row per row of %s (%d): %s is %s[%dx%d]", op, tileRef(data), data.Rows, tileRef(s), s.DType, s.Rows, s.Cols)
	}
	return ""
}

func checkQuant(v *verifier, in Instr) string {
	dst, src, scale, off := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), v.tileOf(in.Args[2]), v.tileOf(in.Args[3])
	return first(v.vecAll(in, 0, 1, 2, 3), sameShape(in.Op, dst, src), intClass.check(in.Op, dst), floatClass.check(in.Op, src),
		checkScaleRows(in.Op, scale, src), checkScaleRows(in.Op, off, src))
}

func checkDequant(v *verifier, in Instr) string {
	dst, src, scale, off := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), v.tileOf(in.Args[2]), v.tileOf(in.Args[3])
	return first(v.vecAll(in, 0, 1, 2, 3), sameShape(in.Op, dst, src), floatClass.check(in.Op, dst), intClass.check(in.Op, src),
		checkScaleRows(in.Op, scale, src), checkScaleRows(in.Op, off, src))
}

func checkTrans(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	msg := first(v.vecAll(in, 0, 1), sameDType(in.Op, dst, src))
	if msg == "" && (dst.Rows != src.Cols || dst.Cols != src.Rows) {
		msg = fmt.Sprintf("%s result %s is %dx%d, want %dx%d", in.Op, tileRef(dst), dst.Rows, dst.Cols, src.Cols, src.Rows)
	}
	return msg
}
