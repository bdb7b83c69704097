package isa

import (
	"math"

	"pypto/dtype"
)

// Conversions of the reference semantics: TCVT's rounding modes and the saturating
// conversions of quantisation.

// RoundTo returns v as dtype d stores it, rounded with mode (TCVT's meaning, which the
// device's conversion also uses): ModeNone is dtype.Round
// (nearest even for floats; truncation toward zero and two's-complement wrap for
// integers); the other rounding modes choose the neighbour they name, and integer
// results still wrap to the dtype.
func RoundTo(d dtype.DType, v float64, mode Mode) float64 {
	if mode == ModeNone || mode == RoundRint && d.IsFloat() {
		return dtype.Round(d, v)
	}
	if !d.IsFloat() {
		return dtype.Round(d, roundInteger(v, mode))
	}
	n := dtype.Round(d, v)
	if n == v || math.IsNaN(v) || math.IsInf(v, 0) {
		return n
	}
	lo, hi := n, n
	if n < v {
		hi = stepUp(d, n)
	} else {
		lo = -stepUp(d, -n)
	}
	switch mode {
	case RoundFloor:
		return lo
	case RoundCeil:
		return hi
	case RoundTrunc:
		if v > 0 {
			return lo
		}
		return hi
	case RoundAway:
		dl, dh := v-lo, hi-v
		switch {
		case dl < dh:
			return lo
		case dh < dl:
			return hi
		case v > 0:
			return hi
		}
		return lo
	case RoundOdd:
		if floatBits(d, lo)&1 == 1 || math.IsInf(hi, 0) {
			return lo
		}
		return hi
	}
	return n
}

// roundInteger rounds v to an integer (as a float64) with mode.
func roundInteger(v float64, mode Mode) float64 {
	switch mode {
	case RoundRint:
		return math.RoundToEven(v)
	case RoundAway:
		return math.Round(v)
	case RoundFloor:
		return math.Floor(v)
	case RoundCeil:
		return math.Ceil(v)
	case RoundOdd:
		f := math.Floor(v)
		if f == v || math.IsNaN(v) || math.IsInf(v, 0) {
			return v
		}
		if math.Mod(f, 2) != 0 {
			return f
		}
		return f + 1
	}
	return math.Trunc(v)
}

// floatBits is the encoding of x (a value of float dtype d) in d's format.
func floatBits(d dtype.DType, x float64) uint32 {
	switch d {
	case dtype.Float16:
		return uint32(dtype.Float32ToFloat16(float32(x)))
	case dtype.BFloat16:
		return uint32(dtype.Float32ToBFloat16(float32(x)))
	}
	return math.Float32bits(float32(x))
}

func fromFloatBits(d dtype.DType, b uint32) float64 {
	switch d {
	case dtype.Float16:
		return float64(dtype.Float16ToFloat32(uint16(b)))
	case dtype.BFloat16:
		return float64(dtype.BFloat16ToFloat32(uint16(b)))
	}
	return float64(math.Float32frombits(b))
}

// stepUp is the next value of float dtype d above x (x itself a value of d, finite).
func stepUp(d dtype.DType, x float64) float64 {
	if x == 0 {
		return fromFloatBits(d, 1) // the smallest subnormal
	}
	b := floatBits(d, x)
	if x > 0 {
		return fromFloatBits(d, b+1) // the largest finite steps to +Inf
	}
	return fromFloatBits(d, b-1)
}

// saturate converts v to integer dtype d rounding to nearest even and clamping to the
// dtype's range (NaN becomes 0): the fixpipe's and TQUANT's quantisation.
func saturate(d dtype.DType, v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	lo, hi := intRange(d)
	return math.Max(lo, math.Min(hi, math.RoundToEven(v)))
}

// quantise is a fixpipe conversion: integers saturate, floats round to nearest even.
func quantise(d dtype.DType, v float64) float64 {
	if d.IsInt() {
		return saturate(d, v)
	}
	return dtype.Round(d, v)
}

// ScalarOperand is immediate s as a vector instruction on a tile of dtype d uses it:
// the vector unit takes a tile-scalar operand (an add's, a compare's, a leaky relu's
// slope) in the tile's dtype, so a float immediate is rounded to d first (integer
// immediates are exact already).
func ScalarOperand(d dtype.DType, s float64) float64 {
	if d.IsFloat() {
		return dtype.Round(d, s)
	}
	return s
}
