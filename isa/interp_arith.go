package isa

import (
	"errors"
	"math"

	"pypto/dtype"
)

// The arithmetic of the elementwise, tile-scalar, broadcast and partial instructions:
// one kernel per operation, with a float semantics (also used for bool) and an integer
// semantics where integers differ (division, remainders, bit operations, and products
// that float64 would not hold exactly).

type binaryKernel struct {
	f func(a, b float64) float64
	i func(a, b int64, bits uint) (int64, error) // nil: f is exact for integers too
	// of, when set, gives f for a destination dtype (a kernel that rounds a step in
	// the dtype); f is then nil.
	of func(d dtype.DType) func(a, b float64) float64
}

var errIntDivZero = errors.New("integer division by zero")

func addK() binaryKernel {
	return binaryKernel{f: func(a, b float64) float64 { return a + b }, i: func(a, b int64, _ uint) (int64, error) { return a + b, nil }}
}

func subK() binaryKernel {
	return binaryKernel{f: func(a, b float64) float64 { return a - b }, i: func(a, b int64, _ uint) (int64, error) { return a - b, nil }}
}

func mulK() binaryKernel {
	return binaryKernel{f: func(a, b float64) float64 { return a * b }, i: func(a, b int64, _ uint) (int64, error) { return a * b, nil }}
}

func divK() binaryKernel {
	return binaryKernel{f: func(a, b float64) float64 { return a / b }, i: func(a, b int64, _ uint) (int64, error) {
		if b == 0 {
			return 0, errIntDivZero
		}
		return a / b, nil
	}}
}

func minK() binaryKernel { return binaryKernel{f: Min} }
func maxK() binaryKernel { return binaryKernel{f: Max} }

// remK is the remainder with the sign of the divisor (numpy remainder).
func remK() binaryKernel {
	return binaryKernel{f: func(a, b float64) float64 {
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
}

// fmodK is the remainder with the sign of the dividend (C fmod).
func fmodK() binaryKernel {
	return binaryKernel{f: math.Mod, i: func(a, b int64, _ uint) (int64, error) {
		if b == 0 {
			return 0, errIntDivZero
		}
		return a % b, nil
	}}
}

func preluK() binaryKernel {
	return binaryKernel{f: func(a, b float64) float64 {
		if a > 0 {
			return a
		}
		return a * b
	}}
}

func bitK(op func(a, b int64) int64) binaryKernel {
	return binaryKernel{f: func(a, b float64) float64 { return float64(op(int64(a), int64(b))) },
		i: func(a, b int64, _ uint) (int64, error) { return op(a, b), nil }}
}

func shlK() binaryKernel {
	return binaryKernel{i: func(a, b int64, bits uint) (int64, error) {
		if b < 0 || b >= int64(bits) {
			return 0, nil
		}
		return a << uint(b), nil
	}}
}

func shrK() binaryKernel {
	return binaryKernel{i: func(a, b int64, bits uint) (int64, error) {
		if b < 0 || b >= int64(bits) {
			if a < 0 {
				return -1, nil
			}
			return 0, nil
		}
		return a >> uint(b), nil
	}}
}

// apply computes the kernel for dtype d and rounds the result to d.
func (k binaryKernel) apply(d dtype.DType, a, b float64) (float64, error) {
	if d.IsInt() && k.i != nil {
		r, err := k.i(int64(a), int64(b), uint(8*d.Size()))
		return dtype.Round(d, float64(r)), err
	}
	f := k.f
	if k.of != nil {
		f = k.of(d)
	}
	if f == nil {
		return 0, errors.New("operation undefined for " + d.String())
	}
	return dtype.Round(d, f(a, b)), nil
}

type unaryKernel func(a float64) float64

var unaryKernels = map[Opcode]unaryKernel{
	TABS:   math.Abs,
	TNEG:   func(a float64) float64 { return -a },
	TEXP:   math.Exp,
	TLOG:   math.Log,
	TSQRT:  math.Sqrt,
	TRSQRT: func(a float64) float64 { return 1 / math.Sqrt(a) },
	TRECIP: func(a float64) float64 { return 1 / a },
	TRELU: func(a float64) float64 {
		if a > 0 || math.IsNaN(a) {
			return a
		}
		return 0
	},
}

// notValue is TNOT: bitwise complement for integers, logical not for bool.
func notValue(d dtype.DType, a float64) float64 {
	if d == dtype.Bool {
		return dtype.Round(d, b2f(a == 0))
	}
	return dtype.Round(d, float64(^int64(a)))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// compare evaluates a TCMP / TCMPS predicate; NaN compares false except under ne.
func compare(mode Mode, a, b float64) bool {
	switch mode {
	case CmpEQ:
		return a == b
	case CmpNE:
		return a != b
	case CmpLT:
		return a < b
	case CmpLE:
		return a <= b
	case CmpGT:
		return a > b
	case CmpGE:
		return a >= b
	}
	return false
}

// The binary kernels of each opcode that has one (tile-tile, tile-scalar, broadcast
// and partial forms share them).
var binaryKernels = map[Opcode]binaryKernel{
	TADD: addK(), TSUB: subK(), TMUL: mulK(), TDIV: divK(), TMIN: minK(), TMAX: maxK(),
	TREM: remK(), TFMOD: fmodK(), TPRELU: preluK(),
	TAND: bitK(func(a, b int64) int64 { return a & b }), TOR: bitK(func(a, b int64) int64 { return a | b }),
	TXOR: bitK(func(a, b int64) int64 { return a ^ b }), TSHL: shlK(), TSHR: shrK(),

	TADDS: addK(), TSUBS: subK(), TMULS: mulK(), TDIVS: divK(), TMINS: minK(), TMAXS: maxK(),
	TFMODS: fmodK(), TREMS: remK(),
	TANDS: bitK(func(a, b int64) int64 { return a & b }), TORS: bitK(func(a, b int64) int64 { return a | b }),
	TXORS: bitK(func(a, b int64) int64 { return a ^ b }), TSHLS: shlK(), TSHRS: shrK(), TLRELU: preluK(),

	TROWEXPANDADD: addK(), TROWEXPANDSUB: subK(), TROWEXPANDMUL: mulK(), TROWEXPANDDIV: divK(),
	TROWEXPANDMAX: maxK(), TROWEXPANDMIN: minK(), TROWEXPANDEXPDIF: expDifK(),
	TCOLEXPANDADD: addK(), TCOLEXPANDSUB: subK(), TCOLEXPANDMUL: mulK(), TCOLEXPANDDIV: divK(),
	TCOLEXPANDMAX: maxK(), TCOLEXPANDMIN: minK(), TCOLEXPANDEXPDIF: expDifK(),

	TPARTADD: addK(), TPARTMUL: mulK(), TPARTMAX: maxK(), TPARTMIN: minK(),
}

// expDifK is the vector unit's subtract then its exponential: the difference is
// rounded to the dtype, then the exponential once more.
func expDifK() binaryKernel {
	return binaryKernel{of: func(d dtype.DType) func(a, b float64) float64 {
		return func(a, b float64) float64 { return math.Exp(dtype.Round(d, a-b)) }
	}}
}
