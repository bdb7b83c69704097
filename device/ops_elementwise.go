package device

import (
	"errors"
	"fmt"
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// Elementwise vector instructions: tile-tile, tile-scalar, broadcast and partial
// forms share one kernel per operation. Each kernel has a float semantics (used for
// the float dtypes and bool) computed in float64 and rounded once, and an integer
// semantics computed exactly in int64 and wrapped to the dtype's width where integers
// differ (division, remainders, bit operations, and sums and products, which float64
// would not hold exactly).

type binKernel struct {
	f func(a, b float64) float64
	i func(a, b int64, bits uint) (int64, error) // nil: f is exact for integers too
	// of, when set, gives f for a destination dtype (a kernel that rounds a step in
	// the dtype); f is then nil.
	of func(d dtype.DType) func(a, b float64) float64
}

// float is k's float function for destination dtype d (nil: none).
func (k binKernel) float(d dtype.DType) func(a, b float64) float64 {
	if k.of != nil {
		return k.of(d)
	}
	return k.f
}

var errIntDivZero = errors.New("integer division by zero")

var (
	kAdd = binKernel{f: func(a, b float64) float64 { return a + b }, i: func(a, b int64, _ uint) (int64, error) { return a + b, nil }}
	kSub = binKernel{f: func(a, b float64) float64 { return a - b }, i: func(a, b int64, _ uint) (int64, error) { return a - b, nil }}
	kMul = binKernel{f: func(a, b float64) float64 { return a * b }, i: func(a, b int64, _ uint) (int64, error) { return a * b, nil }}
	kDiv = binKernel{f: func(a, b float64) float64 { return a / b }, i: func(a, b int64, _ uint) (int64, error) {
		if b == 0 {
			return 0, errIntDivZero
		}
		return a / b, nil
	}}
	kMin = binKernel{f: isa.Min}
	kMax = binKernel{f: isa.Max}
	// kRem is the remainder with the sign of the divisor (numpy remainder).
	kRem = binKernel{f: func(a, b float64) float64 {
		r := math.Mod(a, b)
		if r != 0 && (r < 0) != (b < 0) {
			r += b
		}
		return r
	}, i: func(a, b int64, _ uint) (int64, error) {
		if b == 0 {
			return 0, errIntDivZero
		}
		r := a % b
		if r != 0 && (r < 0) != (b < 0) {
			r += b
		}
		return r, nil
	}}
	// kFmod is the remainder with the sign of the dividend (C fmod).
	kFmod = binKernel{f: math.Mod, i: func(a, b int64, _ uint) (int64, error) {
		if b == 0 {
			return 0, errIntDivZero
		}
		return a % b, nil
	}}
	kPrelu = binKernel{f: func(a, b float64) float64 {
		if a > 0 {
			return a
		}
		return a * b
	}}
	kAnd = bitKernel(func(a, b int64) int64 { return a & b })
	kOr  = bitKernel(func(a, b int64) int64 { return a | b })
	kXor = bitKernel(func(a, b int64) int64 { return a ^ b })
	// Shifts by an amount outside [0, bits) give what shifting one bit at a time would.
	kShl = binKernel{i: func(a, b int64, bits uint) (int64, error) {
		if b < 0 || b >= int64(bits) {
			return 0, nil
		}
		return a << uint(b), nil
	}}
	kShr = binKernel{i: func(a, b int64, bits uint) (int64, error) {
		if b < 0 || b >= int64(bits) {
			if a < 0 {
				return -1, nil
			}
			return 0, nil
		}
		return a >> uint(b), nil
	}}
	// EXPDIF is the vector unit's subtract then its exponential: the difference is
	// rounded to the dtype, then exp64 (TEXP's) is rounded once more.
	kExpDif = binKernel{of: func(d dtype.DType) func(a, b float64) float64 {
		return func(a, b float64) float64 { return exp64(float32(dtype.Round(d, a-b))) }
	}}
)

// bitKernel is a bit operation on two's-complement integers (bool: on 0 and 1).
func bitKernel(op func(a, b int64) int64) binKernel {
	return binKernel{f: func(a, b float64) float64 { return float64(op(int64(a), int64(b))) },
		i: func(a, b int64, _ uint) (int64, error) { return op(a, b), nil }}
}

// apply computes element (r, c) of dst from a and b.
func (k binKernel) apply(dst elems, r, c int, a, b float64, ai, bi int64) error {
	if dst.o.DType.IsInt() && k.i != nil {
		x, err := k.i(ai, bi, dst.bits())
		dst.setInt(r, c, x)
		return err
	}
	f := k.float(dst.o.DType)
	if f == nil {
		return fmt.Errorf("undefined for %s", dst.o.DType)
	}
	dst.set(r, c, f(a, b))
	return nil
}

// operand is how a kernel's second input is read: a tile element, a broadcast
// column or row, or a scalar.
type operand struct {
	v      elems
	kind   byte // 't' tile, 'r' column b[r,0], 'c' row b[0,c], 's' scalar
	scalar float64
}

func (o operand) at(r, c int) (float64, int64) {
	switch o.kind {
	case 'r':
		c = 0
	case 'c':
		r = 0
	case 's':
		return o.scalar, int64(o.scalar)
	}
	if o.v.o.DType.IsInt() {
		x := o.v.atInt(r, c)
		return float64(x), x
	}
	x := o.v.at(r, c)
	return x, int64(x)
}

var binaryKernels = map[isa.Opcode]binKernel{
	isa.TADD: kAdd, isa.TSUB: kSub, isa.TMUL: kMul, isa.TDIV: kDiv, isa.TMIN: kMin, isa.TMAX: kMax,
	isa.TREM: kRem, isa.TFMOD: kFmod, isa.TPRELU: kPrelu, isa.TAND: kAnd, isa.TOR: kOr, isa.TXOR: kXor,
	isa.TSHL: kShl, isa.TSHR: kShr,

	isa.TADDS: kAdd, isa.TSUBS: kSub, isa.TMULS: kMul, isa.TDIVS: kDiv, isa.TMINS: kMin, isa.TMAXS: kMax,
	isa.TFMODS: kFmod, isa.TREMS: kRem, isa.TANDS: kAnd, isa.TORS: kOr, isa.TXORS: kXor,
	isa.TSHLS: kShl, isa.TSHRS: kShr, isa.TLRELU: kPrelu,

	isa.TROWEXPANDADD: kAdd, isa.TROWEXPANDSUB: kSub, isa.TROWEXPANDMUL: kMul, isa.TROWEXPANDDIV: kDiv,
	isa.TROWEXPANDMAX: kMax, isa.TROWEXPANDMIN: kMin, isa.TROWEXPANDEXPDIF: kExpDif,
	isa.TCOLEXPANDADD: kAdd, isa.TCOLEXPANDSUB: kSub, isa.TCOLEXPANDMUL: kMul, isa.TCOLEXPANDDIV: kDiv,
	isa.TCOLEXPANDMAX: kMax, isa.TCOLEXPANDMIN: kMin, isa.TCOLEXPANDEXPDIF: kExpDif,

	isa.TPARTADD: kAdd, isa.TPARTMUL: kMul, isa.TPARTMAX: kMax, isa.TPARTMIN: kMin,
}

func init() {
	entries := map[isa.Opcode]*opImpl{}
	for op := range binaryKernels {
		e := &opImpl{exec: execBinary, work: workVector}
		if op.Info().Class == isa.ClassOther { // the partial forms
			e.exec = execPart
		}
		entries[op] = e
	}
	for op := range unaryKernels {
		entries[op] = &opImpl{exec: execUnary, work: workVector}
	}
	for op, f := range map[isa.Opcode]func(*coreSim, *execCtx, *Instr) error{
		isa.TNOT: execNot, isa.TADDC: execTernary, isa.TSUBC: execTernary,
		isa.TCMP: execCompare, isa.TCMPS: execCompare, isa.TSEL: execSelect, isa.TSELS: execSelect,
		isa.TEXPANDS: execExpandScalar, isa.TCVT: execCvt, isa.TROWEXPAND: execExpand, isa.TCOLEXPAND: execExpand,
	} {
		entries[op] = &opImpl{exec: f, work: workVector}
	}
	defineOps(entries)
}

// secondOperand is how instruction in reads its second input (operand 2).
func secondOperand(in *Instr, vs []elems) operand {
	switch info := in.Op.Info(); {
	case info.Class == isa.ClassTileScalar:
		return operand{kind: 's', scalar: isa.ScalarOperand(vs[1].o.DType, in.Args[2].Imm)}
	case info.Class == isa.ClassBroadcast && in.Op < isa.TCOLEXPAND:
		return operand{v: vs[2], kind: 'r'}
	case info.Class == isa.ClassBroadcast:
		return operand{v: vs[2], kind: 'c'}
	}
	return operand{v: vs[2], kind: 't'}
}

// execBinary computes dst = a op b over dst's valid region, b a tile, a broadcast
// column or row, or a scalar.
func execBinary(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	k, dst := binaryKernels[in.Op], vs[0]
	a, b := operand{v: vs[1], kind: 't'}, secondOperand(in, vs)
	if c.binaryFloat32(in, dst, a.v, b) {
		return nil
	}
	if b.kind != 's' {
		b.v = c.snap(b.v, 2) // dst may alias an input; read inputs as they were
	}
	a.v = c.snap(a.v, 1)
	if f := k.float(dst.o.DType); !dst.o.DType.IsInt() && f != nil {
		c.floatRows(dst, a.v, b, f)
		return nil
	}
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			af, ai := a.at(r, col)
			bf, bi := b.at(r, col)
			if err := k.apply(dst, r, col, af, bf, ai, bi); err != nil {
				return fmt.Errorf("(%d, %d): %w", r, col, err)
			}
		}
	}
	return nil
}

// execPart: over dst's valid region, a op b where both a and b are valid, the one
// that is valid where only one is, and dst unchanged where neither is.
func execPart(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	k, dst := binaryKernels[in.Op], vs[0]
	a, b := operand{v: c.snap(vs[1], 1), kind: 't'}, operand{v: c.snap(vs[2], 2), kind: 't'}
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			inA, inB := r < a.v.rows && col < a.v.cols, r < b.v.rows && col < b.v.cols
			af, ai := a.at(r, col)
			bf, bi := b.at(r, col)
			switch {
			case inA && inB:
				if err := k.apply(dst, r, col, af, bf, ai, bi); err != nil {
					return fmt.Errorf("(%d, %d): %w", r, col, err)
				}
			case inA:
				dst.set(r, col, af)
			case inB:
				dst.set(r, col, bf)
			}
		}
	}
	return nil
}

// floatRows is execBinary's path for float (and bool) results: whole rows of decoded
// values through k, then rounded and written row by row.
func (c *coreSim) floatRows(dst, a elems, b operand, f func(x, y float64) float64) {
	c.scratch[0] = grow(c.scratch[0], dst.cols)
	out := c.scratch[0]
	for r := 0; r < dst.rows; r++ {
		arow := a.f[r*a.o.Cols : r*a.o.Cols+dst.cols]
		switch b.kind {
		case 't':
			brow := b.v.f[r*b.v.o.Cols : r*b.v.o.Cols+dst.cols]
			for c, x := range arow {
				out[c] = f(x, brow[c])
			}
		case 'c':
			brow := b.v.f[:dst.cols]
			for c, x := range arow {
				out[c] = f(x, brow[c])
			}
		default: // 'r' and 's': one value per row
			y, _ := b.at(r, 0)
			for c, x := range arow {
				out[c] = f(x, y)
			}
		}
		dst.setRow(r, out)
	}
}

var unaryKernels = map[isa.Opcode]func(float64) float64{
	isa.TABS: math.Abs,
	isa.TNEG: func(a float64) float64 { return -a },
	// Every float tile value is a float32 (f16 and bf16 widen exactly): the vector
	// kernels' exponential (exp64) takes it as one.
	isa.TEXP:   func(a float64) float64 { return exp64(float32(a)) },
	isa.TLOG:   math.Log,
	isa.TSQRT:  math.Sqrt,
	isa.TRSQRT: func(a float64) float64 { return 1 / math.Sqrt(a) },
	isa.TRECIP: func(a float64) float64 { return 1 / a },
	isa.TRELU: func(a float64) float64 {
		if a > 0 || math.IsNaN(a) {
			return a
		}
		return 0
	},
}

func execUnary(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	if in.Op == isa.TEXP && c.expFloat32(vs[0], vs[1]) {
		return nil
	}
	k, dst, a := unaryKernels[in.Op], vs[0], c.snap(vs[1], 1)
	intWrap := dst.o.DType.IsInt() && (in.Op == isa.TABS || in.Op == isa.TNEG)
	if !intWrap {
		c.scratch[0] = grow(c.scratch[0], dst.cols)
		out := c.scratch[0]
		for r := 0; r < dst.rows; r++ {
			for c, x := range a.f[r*a.o.Cols : r*a.o.Cols+dst.cols] {
				out[c] = k(x)
			}
			dst.setRow(r, out)
		}
		return nil
	}
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			if intWrap {
				x := a.atInt(r, col)
				if in.Op == isa.TNEG || x < 0 {
					x = -x
				}
				dst.setInt(r, col, x)
				continue
			}
			dst.set(r, col, k(a.at(r, col)))
		}
	}
	return nil
}

// execNot: bitwise complement for integers, logical not for bool.
func execNot(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, a := vs[0], c.snap(vs[1], 1)
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			if dst.o.DType == dtype.Bool {
				dst.setInt(r, col, b2i(a.at(r, col) == 0))
			} else {
				dst.setInt(r, col, ^a.atInt(r, col))
			}
		}
	}
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// execTernary: taddc a + b + c and tsubc a - b + c, rounded once.
func execTernary(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, a, b, x := vs[0], c.snap(vs[1], 1), c.snap(vs[2], 2), c.snap(vs[3], 3)
	sign := int64(1)
	if in.Op == isa.TSUBC {
		sign = -1
	}
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			if dst.o.DType.IsInt() {
				dst.setInt(r, col, a.atInt(r, col)+sign*b.atInt(r, col)+x.atInt(r, col))
			} else {
				dst.set(r, col, a.at(r, col)+float64(sign)*b.at(r, col)+x.at(r, col))
			}
		}
	}
	return nil
}

// compare evaluates a TCMP / TCMPS predicate; NaN compares false except under ne.
func compare(mode isa.Mode, a, b float64) (bool, error) {
	switch mode {
	case isa.CmpEQ:
		return a == b, nil
	case isa.CmpNE:
		return a != b, nil
	case isa.CmpLT:
		return a < b, nil
	case isa.CmpLE:
		return a <= b, nil
	case isa.CmpGT:
		return a > b, nil
	case isa.CmpGE:
		return a >= b, nil
	}
	return false, fmt.Errorf("compare mode %q is not a predicate", mode)
}

// Masks are packed: bit c%8 of byte [r, c/8] of an i8 tile.
func maskBit(mask elems, r, c int) bool { return uint8(mask.atInt(r, c/8))>>(c%8)&1 == 1 }

func setMaskBit(mask elems, r, c int, on bool) error {
	if !mask.within(r, c/8) {
		return fmt.Errorf("mask bit (%d, %d) lies outside the %dx%d mask", r, c, mask.o.Rows, mask.o.Cols)
	}
	i := r*mask.o.Cols + c/8
	if on {
		mask.b[i] |= 1 << (c % 8)
	} else {
		mask.b[i] &^= 1 << (c % 8)
	}
	return nil
}

// execCompare sets the mask bits of a's valid region; the other bits stay.
func execCompare(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	mask, a := vs[0], c.snap(vs[1], 1)
	b := operand{kind: 's', scalar: isa.ScalarOperand(a.o.DType, in.Args[2].Imm)}
	if in.Op == isa.TCMP {
		b = operand{v: c.snap(vs[2], 2), kind: 't'}
	}
	for r := 0; r < a.rows; r++ {
		for col := 0; col < a.cols; col++ {
			bv, _ := b.at(r, col)
			on, err := compare(in.Mode, a.at(r, col), bv)
			if err != nil {
				return err
			}
			if err := setMaskBit(mask, r, col, on); err != nil {
				return err
			}
		}
	}
	return nil
}

// execSelect: dst = a where the mask bit is set, else b (a tile or a scalar).
func execSelect(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, mask, a := vs[0], c.snap(vs[1], 1), c.snap(vs[2], 2)
	b := operand{kind: 's', scalar: in.Args[3].Imm}
	if in.Op == isa.TSEL {
		b = operand{v: c.snap(vs[3], 3), kind: 't'}
	}
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			if !mask.within(r, col/8) {
				return fmt.Errorf("mask bit (%d, %d) lies outside the %dx%d mask", r, col, mask.o.Rows, mask.o.Cols)
			}
			if maskBit(mask, r, col) {
				dst.set(r, col, a.at(r, col))
			} else {
				bv, _ := b.at(r, col)
				dst.set(r, col, bv)
			}
		}
	}
	return nil
}

func execExpandScalar(c *coreSim, _ *execCtx, in *Instr) error {
	dst, err := c.tileView(in.Args[0])
	if err != nil {
		return err
	}
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			dst.set(r, col, in.Args[1].Imm)
		}
	}
	return nil
}

// execExpand broadcasts src's first column along the rows (TROWEXPAND) or its first
// row down the columns (TCOLEXPAND) over dst's valid region.
func execExpand(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src := vs[0], c.snap(vs[1], 1)
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			if in.Op == isa.TROWEXPAND {
				dst.set(r, col, src.at(r, 0))
			} else {
				dst.set(r, col, src.at(0, col))
			}
		}
	}
	return nil
}
