//go:build goexperiment.simd && amd64

package device

import "simd/archsimd"

// With GOEXPERIMENT=simd on amd64, the cube kernel uses AVX2 when the CPU has it;
// otherwise the portable loops stay.
func init() {
	if archsimd.X86.AVX2() {
		matmulF32, simdKernels = matmulF32AVX2, "avx2"
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
