package dtype

import "math"

// Float32ToFloat16 rounds an IEEE float32 to binary16 with round-to-nearest-even,
// keeping NaN a NaN, overflowing to ±inf and producing subnormals exactly.
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // inf or NaN
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): shift the full significand right, rounding to even.
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which correctly rounds up to the next binade or inf
	}
	return sign | uint16(h)
}

// Float16ToFloat32 widens binary16 to float32 exactly.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value is mant * 2^-24.
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32ToBFloat16 rounds float32 to bfloat16 with round-to-nearest-even; NaN stays NaN.
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BFloat16ToFloat32 widens bfloat16 to float32 exactly.
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float64ToFloat16 rounds a float64 to binary16 once, to nearest even. A plain
// float64 -> float32 -> half chain rounds twice and can land one ulp off when v lies
// just beside a half midpoint (v need not be a sum or product of halves: exp or log
// values come arbitrarily close to one); rounding to float32 by round-to-odd first keeps
// the information of the dropped bits (float32 has more than half's precision plus
// two bits), so the second rounding is the correct one.
func Float64ToFloat16(v float64) uint16 { return Float32ToFloat16(toFloat32Odd(v)) }

// Float64ToBFloat16 rounds a float64 to bfloat16 once, to nearest even (as
// Float64ToFloat16 does for binary16).
func Float64ToBFloat16(v float64) uint16 { return Float32ToBFloat16(toFloat32Odd(v)) }

// toFloat32Odd rounds v to float32 by round-to-odd: exact values stay, and an inexact
// one becomes whichever of its two float32 neighbours has an odd significand. Beyond
// the largest finite float32 the neighbour is that value (odd), so a value that halves
// or bfloat16 would round to infinity still does.
func toFloat32Odd(v float64) float32 {
	f := float32(v)
	if float64(f) == v || v != v {
		return f
	}
	if math.IsInf(float64(f), 0) {
		return float32(math.Copysign(math.MaxFloat32, v))
	}
	if math.Float32bits(f)&1 == 1 {
		return f
	}
	// f is the even neighbour: the odd one lies on v's other side.
	if float64(f) < v {
		return math.Nextafter32(f, float32(math.Inf(1)))
	}
	return math.Nextafter32(f, float32(math.Inf(-1)))
}

// Round returns v rounded to what d can store, as a float64. Floats round once to
// nearest even from the float64 value (Float64ToFloat16); integers truncate toward
// zero and wrap like a two's-complement store; bool is v != 0.
func Round(d DType, v float64) float64 {
	switch d {
	case Float32:
		return float64(float32(v))
	case Float16:
		return float64(Float16ToFloat32(Float64ToFloat16(v)))
	case BFloat16:
		return float64(BFloat16ToFloat32(Float64ToBFloat16(v)))
	case Int8:
		return float64(int8(toInt64(v)))
	case Int32:
		return float64(int32(toInt64(v)))
	case Int64:
		return float64(toInt64(v))
	case Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

// toInt64 truncates toward zero; NaN becomes 0 and infinities saturate, so a cast
// never depends on Go's implementation-defined float->int conversion.
func toInt64(v float64) int64 {
	switch {
	case v != v:
		return 0
	case v >= 9.2e18:
		return math.MaxInt64
	case v <= -9.2e18:
		return math.MinInt64
	}
	return int64(v)
}
