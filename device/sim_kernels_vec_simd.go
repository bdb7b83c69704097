//go:build goexperiment.simd && amd64

package device

import (
	"simd/archsimd"
	"unsafe"
)

// With GOEXPERIMENT=simd on amd64 and a CPU with AVX2 (every AVX-512 CPU has it), the
// vector kernels run eight float32 (four float64) lanes at a time. Each lane makes the
// portable loop's operations in its order, so the bits are the portable kernels'
// (TestEachSIMDKernelMatchesPortable).
func init() {
	if archsimd.X86.AVX2() {
		binaryF32, scalarF32, laneReduce, rowMaxMin, expF32 = binaryF32AVX2, scalarF32AVX2, laneReduceAVX2, rowMaxMinAVX2, expF32AVX2
		switch { // the cube's init chose the AVX-512 decoder on an AVX-512 CPU
		case !archsimd.X86.AVX512() && cpuHasF16C():
			decodeF16 = decodeF16F16C
		case !archsimd.X86.AVX512():
			decodeF16 = decodeF16AVX2
		}
	}
}

// decodeF16AVX2 is decodeF16AVX512 eight values at a time (the same bit steps on
// 32-bit lanes, all AVX2 instructions), bit for bit with the table.
func decodeF16AVX2(src []byte, dst []float32) {
	n8 := len(dst) &^ 7
	if n8 > 0 {
		_ = src[2*n8-1]
		h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), n8)
		u := archsimd.BroadcastUint32x8
		scale := archsimd.BroadcastFloat32x8(0x1p112)
		magMask, expMask, signMask, infExp := u(0x7fff), u(0x7c00), u(0x8000), u(0x7f800000)
		by13, by16 := u(13), u(16)
		for i := 0; i < n8; i += 8 {
			x := archsimd.LoadUint16x8Slice(h[i:]).ExtendToUint32()
			mag := x.And(magMask)
			shifted := mag.ShiftLeft(by13)
			finite := shifted.AsFloat32x8().Mul(scale).AsUint32x8()
			special := mag.And(expMask).Equal(expMask)
			v := shifted.Or(infExp).Merge(finite, special)
			v.Or(x.And(signMask).ShiftLeft(by16)).AsFloat32x8().StoreSlice(dst[i:])
		}
	}
	decodeF16Go(src[2*n8:], dst[n8:])
}

// op8 is one vecOp on eight lanes; max and min give NaN where either lane is NaN and
// order zeros as max32 / min32 do.
func op8(op vecOp, a, b archsimd.Float32x8, nan archsimd.Float32x8) archsimd.Float32x8 {
	switch op {
	case vecAdd:
		return a.Add(b)
	case vecSub:
		return a.Sub(b)
	case vecMul:
		return a.Mul(b)
	case vecDiv:
		return a.Div(b)
	}
	// VMAXPS / VMINPS return their second operand when either is NaN or both are
	// zeros; which zero wins is decided by the sign bits (an OR for min, an AND for
	// max, as +0 > -0), and NaN lanes take the canonical NaN.
	// (Equal lanes that are not zeros have equal bits, so the AND / OR keeps them.)
	var m archsimd.Float32x8
	equal := a.Equal(b)
	if op == vecMax {
		m = a.AsUint32x8().And(b.AsUint32x8()).AsFloat32x8().Merge(a.Max(b), equal)
	} else {
		m = a.AsUint32x8().Or(b.AsUint32x8()).AsFloat32x8().Merge(a.Min(b), equal)
	}
	isNaN := a.NotEqual(a).Or(b.NotEqual(b))
	return nan.Merge(m, isNaN)
}

func binaryF32AVX2(op vecOp, dst, a, b []float32) {
	n8 := len(dst) &^ 7
	a, b = a[:len(dst)], b[:len(dst)]
	nan := archsimd.BroadcastFloat32x8(nan32)
	for i := 0; i < n8; i += 8 {
		x, y := archsimd.LoadFloat32x8Slice(a[i:]), archsimd.LoadFloat32x8Slice(b[i:])
		op8(op, x, y, nan).StoreSlice(dst[i:])
	}
	binaryF32Go(op, dst[n8:], a[n8:], b[n8:])
}

func scalarF32AVX2(op vecOp, dst, a []float32, s float32) {
	n8 := len(dst) &^ 7
	a = a[:len(dst)]
	nan, y := archsimd.BroadcastFloat32x8(nan32), archsimd.BroadcastFloat32x8(s)
	for i := 0; i < n8; i += 8 {
		op8(op, archsimd.LoadFloat32x8Slice(a[i:]), y, nan).StoreSlice(dst[i:])
	}
	scalarF32Go(op, dst[n8:], a[n8:], s)
}

// laneReduceAVX2 keeps the 64 lanes in eight registers while whole repeats of 64
// values are added (or multiplied) lane-wise, then finishes a last partial repeat and
// the fold as the portable kernel does.
func laneReduceAVX2(xs []float32, mul bool) float32 {
	if len(xs) < 2*64 {
		return laneReduceGo(xs, mul)
	}
	var acc [64]float32
	r0, r1, r2, r3 := archsimd.LoadFloat32x8Slice(xs), archsimd.LoadFloat32x8Slice(xs[8:]), archsimd.LoadFloat32x8Slice(xs[16:]), archsimd.LoadFloat32x8Slice(xs[24:])
	r4, r5, r6, r7 := archsimd.LoadFloat32x8Slice(xs[32:]), archsimd.LoadFloat32x8Slice(xs[40:]), archsimd.LoadFloat32x8Slice(xs[48:]), archsimd.LoadFloat32x8Slice(xs[56:])
	k := 64
	for ; k+64 <= len(xs); k += 64 {
		blk := xs[k : k+64]
		if mul {
			r0, r1, r2, r3 = r0.Mul(archsimd.LoadFloat32x8Slice(blk)), r1.Mul(archsimd.LoadFloat32x8Slice(blk[8:])), r2.Mul(archsimd.LoadFloat32x8Slice(blk[16:])), r3.Mul(archsimd.LoadFloat32x8Slice(blk[24:]))
			r4, r5, r6, r7 = r4.Mul(archsimd.LoadFloat32x8Slice(blk[32:])), r5.Mul(archsimd.LoadFloat32x8Slice(blk[40:])), r6.Mul(archsimd.LoadFloat32x8Slice(blk[48:])), r7.Mul(archsimd.LoadFloat32x8Slice(blk[56:]))
		} else {
			r0, r1, r2, r3 = r0.Add(archsimd.LoadFloat32x8Slice(blk)), r1.Add(archsimd.LoadFloat32x8Slice(blk[8:])), r2.Add(archsimd.LoadFloat32x8Slice(blk[16:])), r3.Add(archsimd.LoadFloat32x8Slice(blk[24:]))
			r4, r5, r6, r7 = r4.Add(archsimd.LoadFloat32x8Slice(blk[32:])), r5.Add(archsimd.LoadFloat32x8Slice(blk[40:])), r6.Add(archsimd.LoadFloat32x8Slice(blk[48:])), r7.Add(archsimd.LoadFloat32x8Slice(blk[56:]))
		}
	}
	r0.StoreSlice(acc[:])
	r1.StoreSlice(acc[8:])
	r2.StoreSlice(acc[16:])
	r3.StoreSlice(acc[24:])
	r4.StoreSlice(acc[32:])
	r5.StoreSlice(acc[40:])
	r6.StoreSlice(acc[48:])
	r7.StoreSlice(acc[56:])
	for j, x := range xs[k:] {
		if mul {
			acc[j] *= x
		} else {
			acc[j] += x
		}
	}
	return foldLanes(&acc, 64, mul)
}

// rowMaxMinAVX2 folds eight lanes with op8 (max and min give one value in any order),
// then the lanes and the tail with max32 / min32.
func rowMaxMinAVX2(xs []float32, isMax bool) float32 {
	n8 := len(xs) &^ 7
	if n8 < 16 {
		return rowMaxMinGo(xs, isMax)
	}
	op := vecMin
	if isMax {
		op = vecMax
	}
	nan := archsimd.BroadcastFloat32x8(nan32)
	acc := archsimd.LoadFloat32x8Slice(xs)
	for i := 8; i < n8; i += 8 {
		acc = op8(op, acc, archsimd.LoadFloat32x8Slice(xs[i:]), nan)
	}
	var lanes [8]float32
	acc.StoreSlice(lanes[:])
	r := rowMaxMinGo(lanes[:], isMax)
	for _, x := range xs[n8:] {
		if isMax {
			r = max32(r, x)
		} else {
			r = min32(r, x)
		}
	}
	return r
}

// expF32AVX2 is expF32Go four lanes of float64 at a time: the same clamp, reduction,
// Horner steps (multiply, then add) and scaling by 2^k, whose exponent bits come from
// k + 1.5 * 2^52 (the integer k in the low bits), then one rounding to float32. Four
// vectors go through each step together: a Horner step waits for the one before, so
// one vector alone would leave the multiplier idle most of the time.
func expF32AVX2(dst, src []float32) {
	n16 := len(dst) &^ 15
	src = src[:len(dst)]
	e := newExpConsts()
	for i := 0; i < n16; i += 16 {
		r0, k0 := e.reduce(src[i:])
		r1, k1 := e.reduce(src[i+4:])
		r2, k2 := e.reduce(src[i+8:])
		r3, k3 := e.reduce(src[i+12:])
		p0, p1, p2, p3 := e.coef[0], e.coef[0], e.coef[0], e.coef[0]
		for _, c := range e.coef[1:] {
			p0, p1, p2, p3 = p0.Mul(r0).Add(c), p1.Mul(r1).Add(c), p2.Mul(r2).Add(c), p3.Mul(r3).Add(c)
		}
		e.finish(p0, k0, src[i:], dst[i:])
		e.finish(p1, k1, src[i+4:], dst[i+4:])
		e.finish(p2, k2, src[i+8:], dst[i+8:])
		e.finish(p3, k3, src[i+12:], dst[i+12:])
	}
	expF32Go(dst[n16:], src[n16:])
}

// reduce is exp64's clamp and reduction of four values: r and k with e^x = e^r 2^k.
func (e *expConsts) reduce(src []float32) (r, k archsimd.Float64x4) {
	v := archsimd.LoadFloat32x4Slice(src).ConvertToFloat64().Max(e.lo).Min(e.hi)
	k = v.Mul(e.log2e).RoundToEven()
	return v.Sub(k.Mul(e.ln2Hi)).Sub(k.Mul(e.ln2Lo)), k
}

// finish scales e^r by 2^k, keeps NaN inputs and stores the four float32 results.
func (e *expConsts) finish(p, k archsimd.Float64x4, src, dst []float32) {
	x := archsimd.LoadFloat32x4Slice(src).ConvertToFloat64()
	scale := k.Add(e.magic).AsInt64x4().Add(e.bias).ShiftLeft(e.by52).AsFloat64x4()
	x.Merge(p.Mul(scale), x.NotEqual(x)).ConvertToFloat32().StoreSlice(dst)
}

// expConsts are expF32AVX2's constants in registers (the compiler does not hoist
// broadcasts out of a loop).
type expConsts struct {
	lo, hi, log2e, ln2Hi, ln2Lo, magic archsimd.Float64x4
	bias, by52                         archsimd.Int64x4
	coef                               [expTerms]archsimd.Float64x4
}

func newExpConsts() *expConsts {
	b := archsimd.BroadcastFloat64x4
	e := &expConsts{lo: b(expLo), hi: b(expHi), log2e: b(log2e), ln2Hi: b(ln2Hi), ln2Lo: b(ln2Lo), magic: b(0x1.8p52),
		bias: archsimd.BroadcastInt64x4(1023 - 0x4338000000000000), by52: archsimd.BroadcastInt64x4(52)}
	for i, c := range expCoef {
		e.coef[i] = b(c)
	}
	return e
}
