//go:build goexperiment.simd && amd64

package device

import (
	"encoding/binary"
	"math"
	"simd/archsimd"
	"testing"
)

// Each SIMD kernel the CPU can run, not only the one selected, matches the portable
// kernel bit for bit.
func TestEachSIMDKernelMatchesPortable(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2")
	}
	checkMatmulKernel(t, matmulF32AVX2, false)
	if archsimd.X86.AVX512() {
		checkMatmulKernel(t, matmulF32AVX512, false)
		checkMatmulKernel(t, matmulExactAVX512, true)
	}
}

// The SIMD fp16 decoder widens every binary16 pattern (zeros, subnormals, normals,
// infinities, NaN payloads) to the table's bits, with and without a tail.
func TestDecodeF16AVX512MatchesTable(t *testing.T) {
	if !archsimd.X86.AVX512() {
		t.Skip("no AVX-512")
	}
	const n = 1<<16 + 7
	src := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i))
	}
	want, got := make([]float32, n), make([]float32, n)
	decodeF16Go(src, want)
	decodeF16AVX512(src, got)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%#04x: got %#08x, want %#08x", uint16(i), math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}
