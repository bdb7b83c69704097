//go:build goexperiment.simd && amd64

package device

import "unsafe"

// matmulExactAVX512 is matmulF32Go for operands whose products are exact in float32
// (f16 or bf16 values): with an exact product a fused multiply-add rounds once, as the
// add after an exact multiply does, so FMA gives the portable kernel's bits. Blocks of
// 4 rows x 64 columns go to fma4x64 (assembly: the compiler's register allocation
// spills a block this size), which keeps the block in registers while k advances, so
// each element still adds its products one at a time in increasing k. Columns past the
// last multiple of 64 and rows past the last multiple of 4 take the unfused kernel.
func matmulExactAVX512(c, a, b []float32, m, k, n, ldc, lda, ldb int) {
	n64, m4 := n&^63, m&^3
	if m == 0 || n == 0 || k == 0 {
		return
	}
	// The bounds checks of every element the blocks touch.
	_, _, _ = c[(m-1)*ldc+n-1], a[(m-1)*lda+k-1], b[(k-1)*ldb+n-1]
	// Columns outside, rows inside: the k x 64 slice of b the blocks share stays in
	// the L1 cache while the rows of a stream past it.
	for j := 0; j < n64; j += 64 {
		for i := 0; i < m4; i += 4 {
			fma4x64(&c[i*ldc+j], &a[i*lda], &b[j], k, ldc, lda, ldb)
		}
	}
	if n64 < n {
		matmulF32AVX512(c[n64:], a, b[n64:], m4, k, n-n64, ldc, lda, ldb)
	}
	if m4 < m {
		matmulF32AVX512(c[m4*ldc:], a[m4*lda:], b, m-m4, k, n, ldc, lda, ldb)
	}
}

// fma4x64 adds a[0:4, 0:k] @ b[0:k, 0:64] to c[0:4, 0:64] with fused multiply-adds in
// increasing k (k >= 1; leading dimensions in elements).
//
//go:noescape
func fma4x64(c, a, b *float32, k, ldc, lda, ldb int)

// matmulExactAVX2 is matmulExactAVX512 for AVX2 CPUs with FMA: blocks of 6 rows x 16
// columns go to fma6x16 (assembly, twelve accumulators in registers while k
// advances); columns past the last multiple of 16 and rows past the last multiple of
// 6 take the unfused AVX2 kernel, whose bits are the same for exact products.
func matmulExactAVX2(c, a, b []float32, m, k, n, ldc, lda, ldb int) {
	n16, m6 := n&^15, m-m%6
	if m == 0 || n == 0 || k == 0 {
		return
	}
	_, _, _ = c[(m-1)*ldc+n-1], a[(m-1)*lda+k-1], b[(k-1)*ldb+n-1]
	for j := 0; j < n16; j += 16 {
		for i := 0; i < m6; i += 6 {
			fma6x16(&c[i*ldc+j], &a[i*lda], &b[j], k, ldc, lda, ldb)
		}
	}
	if n16 < n && m6 > 0 {
		matmulF32AVX2(c[n16:], a, b[n16:], m6, k, n-n16, ldc, lda, ldb)
	}
	if m6 < m {
		matmulF32AVX2(c[m6*ldc:], a[m6*lda:], b, m-m6, k, n, ldc, lda, ldb)
	}
}

// fma6x16 adds a[0:6, 0:k] @ b[0:k, 0:16] to c[0:6, 0:16] with fused multiply-adds in
// increasing k (k >= 1; leading dimensions in elements; AVX2 and FMA).
//
//go:noescape
func fma6x16(c, a, b *float32, k, ldc, lda, ldb int)

// encodeF16F16C is encodeF16Go eight values at a time with the F16C conversion
// (round to nearest even, subnormal halves rounded at their step, overflow to
// infinity, NaNs quiet with their top payload bits, as dtype.Float32ToFloat16):
// bit for bit the scalar encoder (TestEncodeF16SIMDMatchesScalar).
func encodeF16F16C(src []float32, dst []byte) {
	n8 := len(src) &^ 7
	if n8 > 0 {
		_ = dst[2*n8-1]
		cvtF32ToF16((*uint16)(unsafe.Pointer(unsafe.SliceData(dst))), &src[0], n8)
	}
	encodeF16Go(src[n8:], dst[2*n8:])
}

// cvtF32ToF16 rounds src[0:n] to binary16 into dst[0:n] (n a multiple of 8; F16C).
//
//go:noescape
func cvtF32ToF16(dst *uint16, src *float32, n int)

// decodeF16F16C is decodeF16Go eight values at a time with the F16C widening (exact),
// bit for bit the table: a group of eight holding a NaN, whose signalling form F16C
// would quiet, takes the table.
func decodeF16F16C(src []byte, dst []float32) {
	n8 := len(dst) &^ 7
	if n8 == 0 {
		decodeF16Go(src, dst)
		return
	}
	_ = src[2*n8-1]
	h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), n8)
	for i := 0; i < n8; {
		i += cvtF16ToF32(&dst[i], &h[i], n8-i)
		if i < n8 { // a NaN among the next eight
			decodeF16Go(src[2*i:2*i+16], dst[i:i+8])
			i += 8
		}
	}
	decodeF16Go(src[2*n8:], dst[n8:])
}

// cvtF16ToF32 widens src[0:n] (n a multiple of 8) until a group of eight holds a
// NaN, and returns how many it widened (F16C).
//
//go:noescape
func cvtF16ToF32(dst *float32, src *uint16, n int) int

// cpuHasF16C reports the F16C conversions (CPUID; archsimd has no query for them).
func cpuHasF16C() bool
