//go:build goexperiment.simd && amd64

package device

import (
	"simd/archsimd"
	"unsafe"
)

// With GOEXPERIMENT=simd on amd64, the cube kernels use AVX-512 or AVX2 when the CPU
// has them; otherwise the portable loops stay.
func init() {
	switch {
	case archsimd.X86.AVX512():
		matmulF32, matmulF32Exact, simdKernels = matmulF32AVX512, matmulExactAVX512, "avx512"
		decodeF16, encodeF16 = decodeF16AVX512, encodeF16AVX512
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		matmulF32, matmulF32Exact, simdKernels = matmulF32AVX2, matmulExactAVX2, "avx2"
	case archsimd.X86.AVX2():
		matmulF32, matmulF32Exact, simdKernels = matmulF32AVX2, matmulF32AVX2, "avx2"
	}
	if !archsimd.X86.AVX512() && archsimd.X86.AVX2() && cpuHasF16C() {
		encodeF16 = encodeF16F16C
	}
}

// matmulF32AVX512 is matmulF32Go sixteen lanes at a time, two rows of c together so
// that each load of b serves both: 64 columns of two rows in eight registers while k
// advances, multiply then add (two rounded operations) in increasing k, so the bits
// are the portable kernel's. Columns past the last multiple of 64 go to the AVX2
// kernel, a last odd row to a one-row loop.
func matmulF32AVX512(c, a, b []float32, m, k, n, ldc, lda, ldb int) {
	n64 := n &^ 63
	if n64 < n {
		matmulF32AVX2(c[n64:], a, b[n64:], m, k, n-n64, ldc, lda, ldb)
	}
	if n64 == 0 {
		return
	}
	i := 0
	for ; i+1 < m; i += 2 {
		r0, r1 := c[i*ldc:i*ldc+n64], c[(i+1)*ldc:(i+1)*ldc+n64]
		a0, a1 := a[i*lda:i*lda+k], a[(i+1)*lda:(i+1)*lda+k]
		for j := 0; j < n64; j += 64 {
			c00 := archsimd.LoadFloat32x16Slice(r0[j:])
			c01 := archsimd.LoadFloat32x16Slice(r0[j+16:])
			c02 := archsimd.LoadFloat32x16Slice(r0[j+32:])
			c03 := archsimd.LoadFloat32x16Slice(r0[j+48:])
			c10 := archsimd.LoadFloat32x16Slice(r1[j:])
			c11 := archsimd.LoadFloat32x16Slice(r1[j+16:])
			c12 := archsimd.LoadFloat32x16Slice(r1[j+32:])
			c13 := archsimd.LoadFloat32x16Slice(r1[j+48:])
			for p := range k {
				x0 := archsimd.BroadcastFloat32x16(a0[p])
				x1 := archsimd.BroadcastFloat32x16(a1[p])
				bp := b[p*ldb+j : p*ldb+j+64]
				b0 := archsimd.LoadFloat32x16Slice(bp)
				b1 := archsimd.LoadFloat32x16Slice(bp[16:])
				b2 := archsimd.LoadFloat32x16Slice(bp[32:])
				b3 := archsimd.LoadFloat32x16Slice(bp[48:])
				c00, c01, c02, c03 = c00.Add(b0.Mul(x0)), c01.Add(b1.Mul(x0)), c02.Add(b2.Mul(x0)), c03.Add(b3.Mul(x0))
				c10, c11, c12, c13 = c10.Add(b0.Mul(x1)), c11.Add(b1.Mul(x1)), c12.Add(b2.Mul(x1)), c13.Add(b3.Mul(x1))
			}
			c00.StoreSlice(r0[j:])
			c01.StoreSlice(r0[j+16:])
			c02.StoreSlice(r0[j+32:])
			c03.StoreSlice(r0[j+48:])
			c10.StoreSlice(r1[j:])
			c11.StoreSlice(r1[j+16:])
			c12.StoreSlice(r1[j+32:])
			c13.StoreSlice(r1[j+48:])
		}
	}
	if i < m {
		matmulF32AVX2(c[i*ldc:], a[i*lda:], b, 1, k, n64, ldc, lda, ldb)
	}
}

// matmulF32AVX2 is matmulF32Go eight lanes at a time: for each row of c it keeps 32
// columns in four registers while k advances, multiplying then adding (two rounded
// operations, as matmulF32Go does), so every element sees the same operations in the
// same order and the results are bit for bit the portable ones. Columns past the last
// multiple of 32 take the portable loop.
func matmulF32AVX2(c, a, b []float32, m, k, n, ldc, lda, ldb int) {
	n32 := n &^ 31
	for i := 0; i < m; i++ {
		crow := c[i*ldc : i*ldc+n]
		arow := a[i*lda : i*lda+k]
		for j := 0; j < n32; j += 32 {
			c0 := archsimd.LoadFloat32x8Slice(crow[j:])
			c1 := archsimd.LoadFloat32x8Slice(crow[j+8:])
			c2 := archsimd.LoadFloat32x8Slice(crow[j+16:])
			c3 := archsimd.LoadFloat32x8Slice(crow[j+24:])
			for p, av := range arow {
				x := archsimd.BroadcastFloat32x8(av)
				bp := b[p*ldb+j : p*ldb+j+32]
				c0 = c0.Add(archsimd.LoadFloat32x8Slice(bp).Mul(x))
				c1 = c1.Add(archsimd.LoadFloat32x8Slice(bp[8:]).Mul(x))
				c2 = c2.Add(archsimd.LoadFloat32x8Slice(bp[16:]).Mul(x))
				c3 = c3.Add(archsimd.LoadFloat32x8Slice(bp[24:]).Mul(x))
			}
			c0.StoreSlice(crow[j:])
			c1.StoreSlice(crow[j+8:])
			c2.StoreSlice(crow[j+16:])
			c3.StoreSlice(crow[j+24:])
		}
		if n32 == n {
			continue
		}
		tail := crow[n32:]
		for p, av := range arow {
			for j, bv := range b[p*ldb+n32 : p*ldb+n] {
				tail[j] += float32(av * bv)
			}
		}
	}
}

// decodeF16AVX512 is decodeF16Go sixteen values at a time, bit for bit: the magnitude
// bits shifted into float32 place and scaled by 2^112 (exact: a power of two) are the
// value of every normal, subnormal and zero; infinities and NaNs (exponent 31) keep
// their payload under float32's all-ones exponent, as dtype.Float16ToFloat32 does.
// The host is little-endian (amd64), so the bytes are the uint16 values.
func decodeF16AVX512(src []byte, dst []float32) {
	n16 := len(dst) &^ 15
	if n16 > 0 {
		_ = src[2*n16-1]
		h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), n16)
		scale := archsimd.BroadcastFloat32x16(0x1p112)
		magMask := archsimd.BroadcastUint32x16(0x7fff)
		expMask := archsimd.BroadcastUint32x16(0x7c00)
		signMask := archsimd.BroadcastUint32x16(0x8000)
		infExp := archsimd.BroadcastUint32x16(0x7f800000)
		for i := 0; i < n16; i += 16 {
			x := archsimd.LoadUint16x16((*[16]uint16)(h[i : i+16])).ExtendToUint32()
			mag := x.And(magMask)
			shifted := mag.ShiftAllLeft(13)
			finite := shifted.AsFloat32x16().Mul(scale).AsUint32x16()
			special := mag.And(expMask).Equal(expMask)
			v := shifted.Or(infExp).Merge(finite, special)
			v = v.Or(x.And(signMask).ShiftAllLeft(16))
			v.AsFloat32x16().Store((*[16]float32)(dst[i : i+16]))
		}
	}
	decodeF16Go(src[2*n16:], dst[n16:])
}

// encodeF16AVX512 is encodeF16Go sixteen values at a time, bit for bit with
// dtype.Float32ToFloat16: normal halves rebias the exponent and round the 13 dropped
// bits to nearest even with integer adds; subnormal ones (and zeros) are the low bits
// of the magnitude plus 0.5 in float32, whose addition rounds to nearest even at the
// half's subnormal step (2^-24); overflow gives infinity and a NaN keeps its top
// payload bits with the quiet bit set.
func encodeF16AVX512(src []float32, dst []byte) {
	n16 := len(src) &^ 15
	if n16 > 0 {
		_ = dst[2*n16-1]
		h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(dst))), n16)
		// The compiler does not hoist broadcasts out of a loop. Right shifts take their
		// counts from vectors: ShiftAllRight moves its count through a general
		// register into an SSE register each time, which stalls on the dirty
		// AVX-512 state (about 4 us per 256 values here).
		u := archsimd.BroadcastUint32x16
		by13, by16 := u(13), u(16)
		absMask, bias, roundBits, one := u(0x7fffffff), u(112<<23), u(0x0fff), u(1)
		halfBits, minNormal, overflow, inf := u(0x3f000000), u(113<<23), u(143<<23), u(0x7c00)
		mantMask, quietNaN, infBits, signMask := u(0x7fffff), u(0x7e00), u(0x7f800000), u(0x8000)
		half := halfBits.AsFloat32x16()
		for i := 0; i < n16; i += 16 {
			b := archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16])).AsUint32x16()
			abs := b.And(absMask)
			rebiased := abs.Sub(bias)
			v := rebiased.Add(roundBits).Add(rebiased.ShiftRight(by13).And(one)).ShiftRight(by13)
			sub := abs.AsFloat32x16().Add(half).AsUint32x16().Sub(halfBits)
			v = sub.Merge(v, abs.Less(minNormal))
			v = inf.Merge(v, abs.GreaterEqual(overflow))
			nan := abs.And(mantMask).ShiftRight(by13).Or(quietNaN)
			v = nan.Merge(v, abs.Greater(infBits))
			v = v.Or(b.ShiftRight(by16).And(signMask))
			v.TruncateToUint16().Store((*[16]uint16)(h[i : i+16]))
		}
	}
	encodeF16Go(src[n16:], dst[2*n16:])
}
