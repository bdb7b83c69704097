package device

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// BenchmarkGEMM256 runs a 256 x 256 x 256 fp16 GEMM task on the a2 preset: four
// 128 x 128 C tiles, K in 64-deep ping-pong steps. It reports the host time per
// simulated task and, as metrics, the simulated cycles and the cube busy ratio.
func BenchmarkGEMM256(b *testing.B) {
	chip := preset(b, "a2")
	s := gemmSpec{M: 256, N: 256, K: 256, TM: 128, TN: 128, TK: 64, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	rng := rand.New(rand.NewPCG(1, 2))
	l := layout(dtype.Encode(s.In, randValues(rng, s.In, s.M*s.K, 1)), dtype.Encode(s.In, randValues(rng, s.In, s.K*s.N, 1)), make([]byte, s.M*s.N*2))
	gi, gj := s.grid()
	var blocks []Block
	for bi := range gi {
		for bj := range gj {
			blocks = append(blocks, Block{Prog: compile(b, chip, s.program(bi, bj)), ParamAddrs: l.addrs})
		}
	}
	b.SetBytes(int64(2 * s.M * s.N * s.K)) // "bytes" = flops, so MB/s reads as MFLOP/s
	b.ResetTimer()
	var st *TaskStats
	for b.Loop() {
		var err error
		st, err = RunTask(chip, l.gm, isa.Cube, blocks, RunOptions{})
		require.NoError(b, err)
	}
	b.ReportMetric(float64(st.Cycles), "sim-cycles")
	b.ReportMetric(st.BusyRatio(isa.PipeM), "cube-busy")
}

// BenchmarkCompileGEMMBlock measures the backend on one GEMM block program.
func BenchmarkCompileGEMMBlock(b *testing.B) {
	chip := preset(b, "a2")
	s := gemmSpec{M: 1024, N: 1024, K: 1024, TM: 128, TN: 128, TK: 64, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	p := s.program(0, 0)
	for b.Loop() {
		if _, err := Compile(chip, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSoftmax runs the tiled row softmax of softmax_test.go over 1024 x 128 f32
// (64 blocks on the a2's vector cores): the vector kernels' host speed.
func BenchmarkSoftmax(b *testing.B) {
	const rows = 1024
	chip := preset(b, "a2")
	rng := rand.New(rand.NewPCG(3, 4))
	l := layout(dtype.Encode(dtype.Float32, randValues(rng, dtype.Float32, rows*128, 4)), make([]byte, rows*128*4))
	var blocks []Block
	for r0 := 0; r0 < rows; r0 += 16 {
		blocks = append(blocks, Block{Prog: compile(b, chip, parse(b, softmaxBlock(rows, r0))), ParamAddrs: l.addrs})
	}
	b.SetBytes(int64(rows * 128 * 4))
	b.ResetTimer()
	var st *TaskStats
	for b.Loop() {
		var err error
		st, err = RunTask(chip, l.gm, isa.Vector, blocks, RunOptions{})
		require.NoError(b, err)
	}
	b.ReportMetric(float64(st.Cycles), "sim-cycles")
}

// BenchmarkMatmulKernel runs the selected fp16 cube kernel (matmulF32Exact) on the
// calibration GEMM's base block, 128 x 64 @ 64 x 256 into an f32 accumulator.
func BenchmarkMatmulKernel(b *testing.B) {
	const m, k, n = 128, 64, 256
	rng := rand.New(rand.NewPCG(5, 6))
	a := make([]float32, m*k)
	bm := make([]float32, k*n)
	c := make([]float32, m*n)
	for _, s := range [][]float32{a, bm} {
		for i := range s {
			s[i] = dtype.Float16ToFloat32(dtype.Float32ToFloat16(float32(rng.NormFloat64())))
		}
	}
	b.SetBytes(2 * m * k * n) // "bytes" = flops, so MB/s reads as MFLOP/s
	for b.Loop() {
		matmulF32Exact(c, a, bm, m, k, n, n, k, n)
	}
}
