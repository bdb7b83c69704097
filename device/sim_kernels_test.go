package device

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The selected cube kernel (SIMD where the build and CPU allow) gives the portable
// kernel's bits, on shapes with and without a column tail and with padded rows.
func TestMatmulKernelMatchesPortable(t *testing.T) {
	t.Logf("SIMD kernels: %s", SIMDKernels())
	checkMatmulKernel(t, matmulF32)
}

func checkMatmulKernel(t *testing.T, kernel func(c, a, b []float32, m, k, n, ldc, lda, ldb int)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sh := range []struct{ m, k, n, ldc, lda, ldb int }{
		{16, 16, 16, 16, 16, 16}, {128, 64, 256, 256, 64, 256}, {17, 33, 45, 48, 40, 64}, {3, 5, 32, 40, 8, 32}, {1, 1, 7, 7, 1, 7},
		{5, 9, 100, 128, 16, 112}, {3, 4, 64, 64, 4, 64}, {2, 3, 130, 136, 3, 144},
	} {
		a := make([]float32, sh.m*sh.lda)
		b := make([]float32, sh.k*sh.ldb)
		c := make([]float32, sh.m*sh.ldc)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
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
