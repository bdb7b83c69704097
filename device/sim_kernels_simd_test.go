//go:build goexperiment.simd && amd64

package device

import (
	"simd/archsimd"
	"testing"
)

// Each SIMD kernel the CPU can run, not only the one selected, matches the portable
// kernel bit for bit.
func TestEachSIMDKernelMatchesPortable(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2")
	}
	checkMatmulKernel(t, matmulF32AVX2)
	if archsimd.X86.AVX512() {
		checkMatmulKernel(t, matmulF32AVX512)
	}
}
