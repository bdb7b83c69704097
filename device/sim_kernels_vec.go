package device

import "math"

// The float32 kernels of the vector instructions. For operands of the destination's
// float dtype (f32, or f16 / bf16 widened exactly) one float32 operation rounds as the
// float64 operation rounded once would: + - x / are correctly rounded in float32, and
// float32 carries more than twice the precision of f16 and bf16 plus two bits, so the
// second rounding to them is innocuous; min and max are exact. Each kernel has a
// portable loop and may have a SIMD version with the same bits
// (sim_kernels_vec_simd.go, TestEachSIMDKernelMatchesPortable).

// vecOp is a float32 binary operation of the vector kernels.
type vecOp uint8

const (
	vecAdd vecOp = iota
	vecSub
	vecMul
	vecDiv
	vecMax
	vecMin
)

// binaryF32 computes dst[i] = a[i] op b[i]; dst may be a or b (the same elements).
var binaryF32 = binaryF32Go

func binaryF32Go(op vecOp, dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	switch op {
	case vecAdd:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case vecSub:
		for i := range dst {
			dst[i] = a[i] - b[i]
		}
	case vecMul:
		for i := range dst {
			dst[i] = a[i] * b[i]
		}
	case vecDiv:
		for i := range dst {
			dst[i] = a[i] / b[i]
		}
	case vecMax:
		for i := range dst {
			dst[i] = max32(a[i], b[i])
		}
	case vecMin:
		for i := range dst {
			dst[i] = min32(a[i], b[i])
		}
	}
}

// scalarF32 computes dst[i] = a[i] op s; dst may be a.
var scalarF32 = scalarF32Go

func scalarF32Go(op vecOp, dst, a []float32, s float32) {
	a = a[:len(dst)]
	switch op {
	case vecAdd:
		for i := range dst {
			dst[i] = a[i] + s
		}
	case vecSub:
		for i := range dst {
			dst[i] = a[i] - s
		}
	case vecMul:
		for i := range dst {
			dst[i] = a[i] * s
		}
	case vecDiv:
		for i := range dst {
			dst[i] = a[i] / s
		}
	case vecMax:
		for i := range dst {
			dst[i] = max32(a[i], s)
		}
	case vecMin:
		for i := range dst {
			dst[i] = min32(a[i], s)
		}
	}
}

var nan32 = float32(math.NaN())

// max32 and min32 are isa.Max and isa.Min in float32: NaN (the one math.NaN gives)
// if either is NaN, +0 above -0.
func max32(a, b float32) float32 {
	switch {
	case a != a || b != b:
		return nan32
	case a > b:
		return a
	case b > a:
		return b
	case math.Signbit(float64(a)):
		return b // equal: b is +0 if either is
	}
	return a
}

func min32(a, b float32) float32 {
	switch {
	case a != a || b != b:
		return nan32
	case a < b:
		return a
	case b < a:
		return b
	case math.Signbit(float64(a)):
		return a
	}
	return b
}

// rowMaxMin is a float row max (or min) of xs, in any order the same value: NaN if
// any is NaN, +0 above -0 for max (below for min); empty rows give -Inf (+Inf).
var rowMaxMin = rowMaxMinGo

func rowMaxMinGo(xs []float32, isMax bool) float32 {
	acc := float32(math.Inf(1))
	if isMax {
		acc = float32(math.Inf(-1))
		for _, x := range xs {
			acc = max32(acc, x)
		}
		return acc
	}
	for _, x := range xs {
		acc = min32(acc, x)
	}
	return acc
}

// The exponential of the vector kernels: exp64 is an accurate float64 e^x (a few
// float64 ulps, see TestExp64IsAccurate) computed with float64 multiplies and adds in a
// fixed order, so a SIMD version of the same steps gives the same bits; its value
// rounds once to the destination's dtype. Inputs are float32 values, whose
// exponentials beyond [expLo, expHi] round to 0 or overflow in every float dtype, so
// they are clamped there.
const (
	expLo    = -104.0 // e^-104 < 2^-150, half float32's smallest subnormal
	expHi    = 89.0   // e^89 > 2^128
	log2e    = 1.4426950408889634
	ln2Hi    = 6.93147180369123816490e-01 // ln 2 with 21 trailing zero bits: k*ln2Hi is exact
	ln2Lo    = 1.90821492927058770002e-10
	expTerms = 14 // Taylor terms of e^r for |r| <= ln2/2: r^14/14! < 2^-60
)

// expCoef are 1/n! for n = expTerms-1 down to 0, the Horner order.
var expCoef = func() [expTerms]float64 {
	var c [expTerms]float64
	f := 1.0
	for n := 1; n < expTerms; n++ {
		f *= float64(n)
	}
	for i := range c {
		c[i] = 1 / f
		f /= float64(max(expTerms-1-i, 1))
	}
	return c
}()

func exp64(x float32) float64 {
	v := float64(x)
	if v != v {
		return v
	}
	v = math.Min(math.Max(v, expLo), expHi)
	k := math.RoundToEven(v * log2e)
	r := float64(v-float64(k*ln2Hi)) - float64(k*ln2Lo)
	p := expCoef[0]
	for _, c := range expCoef[1:] {
		p = float64(p*r) + c
	}
	return p * math.Float64frombits(uint64(int64(k)+1023)<<52)
}

// expF32 writes e^src[i] rounded to float32 into dst (dst may be src).
var expF32 = expF32Go

func expF32Go(dst, src []float32) {
	src = src[:len(dst)]
	for i, x := range src {
		dst[i] = float32(exp64(x))
	}
}
