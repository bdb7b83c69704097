package device

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// The selected cube kernels (SIMD where the build and CPU allow) give the portable
// kernel's bits, on shapes with and without row and column tails and with padded
// rows; the exact-product kernel on f16 operands.
func TestMatmulKernelMatchesPortable(t *testing.T) {
	t.Logf("SIMD kernels: %s", SIMDKernels())
	checkMatmulKernel(t, matmulF32, false)
	checkMatmulKernel(t, matmulF32Exact, true)
}

// checkMatmulKernel compares kernel with matmulF32Go; exact draws a and b from f16
// values (whose products float32 holds exactly), as the exact-product kernels need.
func checkMatmulKernel(t *testing.T, kernel func(c, a, b []float32, m, k, n, ldc, lda, ldb int), exact bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 10))
	operand := func() float32 {
		v := float32(rng.NormFloat64())
		if exact {
			v = dtype.Float16ToFloat32(dtype.Float32ToFloat16(v))
		}
		return v
	}
	for _, sh := range []struct{ m, k, n, ldc, lda, ldb int }{
		{16, 16, 16, 16, 16, 16}, {128, 64, 256, 256, 64, 256}, {17, 33, 45, 48, 40, 64}, {3, 5, 32, 40, 8, 32}, {1, 1, 7, 7, 1, 7},
		{5, 9, 100, 128, 16, 112}, {3, 4, 64, 64, 4, 64}, {2, 3, 130, 136, 3, 144}, {13, 70, 200, 208, 72, 256}, {4, 1, 64, 64, 1, 64},
	} {
		a := make([]float32, sh.m*sh.lda)
		b := make([]float32, sh.k*sh.ldb)
		c := make([]float32, sh.m*sh.ldc)
		for i := range a {
			a[i] = operand()
		}
		for i := range b {
			b[i] = operand()
		}
		for i := range c {
			c[i] = float32(rng.NormFloat64())
		}
		want := append([]float32(nil), c...)
		matmulF32Go(want, a, b, sh.m, sh.k, sh.n, sh.ldc, sh.lda, sh.ldb)
		kernel(c, a, b, sh.m, sh.k, sh.n, sh.ldc, sh.lda, sh.ldb)
		require.Equal(t, want, c, "%+v", sh)
	}
}
