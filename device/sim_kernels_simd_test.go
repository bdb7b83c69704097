//go:build goexperiment.simd && amd64

package device

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
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
	if archsimd.X86.FMA() {
		checkMatmulKernel(t, matmulExactAVX2, true)
	}
	checkVectorKernels(t, vectorKernels{binaryF32AVX2, scalarF32AVX2, laneReduceAVX2, rowMaxMinAVX2, expF32AVX2})
	if archsimd.X86.AVX512() {
		checkMatmulKernel(t, matmulF32AVX512, false)
		checkMatmulKernel(t, matmulExactAVX512, true)
	}
}

// The SIMD fp16 decoder widens every binary16 pattern (zeros, subnormals, normals,
// infinities, NaN payloads) to the table's bits, with and without a tail.
func TestDecodeF16SIMDMatchesTable(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2")
	}
	checkDecodeF16(t, decodeF16AVX2)
	if cpuHasF16C() {
		checkDecodeF16(t, decodeF16F16C)
	}
	if archsimd.X86.AVX512() {
		checkDecodeF16(t, decodeF16AVX512)
	}
}

func checkDecodeF16(t *testing.T, decode func(src []byte, dst []float32)) {
	t.Helper()
	const n = 1<<16 + 7
	src := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i))
	}
	want, got := make([]float32, n), make([]float32, n)
	decodeF16Go(src, want)
	decode(src, got)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%#04x: got %#08x, want %#08x", uint16(i), math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}

// The SIMD fp16 encoders round as dtype.Float32ToFloat16 on every exponent (zeros,
// float32 subnormals, half subnormals and the ties at their step, normals, overflow,
// infinities, NaNs) with random and tie mantissas, with a tail.
func TestEncodeF16SIMDMatchesScalar(t *testing.T) {
	if archsimd.X86.AVX512() {
		checkEncodeF16(t, encodeF16AVX512)
	}
	if archsimd.X86.AVX2() && cpuHasF16C() {
		checkEncodeF16(t, encodeF16F16C)
	}
}

func checkEncodeF16(t *testing.T, encode func(src []float32, dst []byte)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	var src []float32
	for exp := range uint32(256) {
		for _, mant := range []uint32{0, 1, 0x1000, 0x3000, 0x1fff, 0x2000, 0x7fffff, 0x7fe000, 0x7ff000, rng.Uint32() & 0x7fffff, rng.Uint32() & 0x7fffff} {
			for _, sign := range []uint32{0, 1 << 31} {
				src = append(src, math.Float32frombits(sign|exp<<23|mant))
			}
		}
	}
	for range 1 << 16 {
		src = append(src, math.Float32frombits(rng.Uint32()))
	}
	src = append(src, 1, 2, 3) // a tail for the scalar loop
	want, got := make([]byte, 2*len(src)), make([]byte, 2*len(src))
	encodeF16Go(src, want)
	encode(src, got)
	for i, v := range src {
		if w, g := binary.LittleEndian.Uint16(want[2*i:]), binary.LittleEndian.Uint16(got[2*i:]); w != g {
			t.Fatalf("%#08x: got %#04x, want %#04x", math.Float32bits(v), g, w)
		}
	}
}
