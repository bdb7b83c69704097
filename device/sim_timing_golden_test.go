package device

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// The timed runs of a set of kernels that cover the memory system's paths (hits,
// misses, evictions in a small L2, second readers waiting for fills, prefetch,
// transposed and element-wise windows, balanced blocks, a cube GEMM) keep the exact
// cycles, L2 counts and pipe busy times they had before the simulator was made
// faster: changes to how the model is computed must not change what it predicts. A
// change to a timing mechanism updates these figures on purpose (and the calibration
// tables with them). Last so: the vector unit's costs refitted to the
// single-instruction measurements without the two rows found suspect (start-up 4,
// float latency 27, integer 4, tile-scalar 19) and the kernel constants with them
// (dispatch 12632, fractal row 18): every row's cycles and the busy times.
func TestTimingUnchangedOnReferenceKernels(t *testing.T) {
	want := map[string]string{
		"add":                   "cycles 22236 kernel 6254 cores [6804 6886 6886 6911 6950 6950 7078 7078 7098 7142 7142 7152 7206 7206 7206 7254 4345 4345 4345 4387 4409 4445 4473 4473 4473 4477 4537 4537 4537 4572 4601 4628 4665 4665 4665 4665 4724 4729 4729 4757 4793 4809 4857 4857 4857 4857 4908 4921] l2 0/4096 prefetched 0 s 1024 mte2 115101 mte3 54690 v 10176",
		"add_small_l2":          "cycles 21633 kernel 5651 cores [6436 6436 6436 6436 6130 6436 6456 6500 6500 6579 6164 6608 6612 6612 6612 6651 3385 3897 3897 3897 3897 3385 3385 3955 4012 4025 4025 3422 3426 4025 4053 4089 4089 3550 3550 4089 4141 4194 4217 3708 4217 4217 4234 4281 4281 4089 4281 4281] l2 1725/2371 prefetched 0 s 1024 mte2 92603 mte3 45995 v 10176",
		"add_prefetch":          "cycles 20988 kernel 5006 cores [5606 5608 5670 5685 5734 5734 5862 5862 5870 5926 5926 5926 5986 5990 5990 6006 3110 3129 3129 3170 3193 3204 3257 3257 3257 3257 3294 3321 3321 3355 3385 3385 3449 3449 3449 3449 3478 3513 3513 3539 3577 3577 3631 3641 3641 3641 3662 3705] l2 2064/2032 prefetched 1056768 s 1024 mte2 64032 mte3 47087 v 10176",
		"add_balanced":          "cycles 23591 kernel 7609 cores [8545 8549 8609 8609 6170 6170 6170 6170 6170 6173 6234 6234 6234 6234 6234 6234 6292 6298 6298 6298 6298 6298 6298 6354 6362 6362 6362 6362 6362 6379 6426 6426 6426 6426 6426 6426 6458 6490 6490 6490 6490 6490 6490 6545 6554 6554 6554 6554] l2 0/3398 prefetched 0 s 1600 mte2 116879 mte3 61098 v 9500",
		"shared_reads":          "cycles 19784 kernel 3802 cores [4801 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802 4802] l2 5872/264 prefetched 0 mte2 172703 mte3 45257",
		"shared_reads_small_l2": "cycles 19788 kernel 3806 cores [4802 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806 4806] l2 5860/270 prefetched 0 mte2 172892 mte3 45257",
		"add_values":            "cycles 22236 kernel 6254 cores [6804 6886 6886 6911 6950 6950 7078 7078 7098 7142 7142 7152 7206 7206 7206 7254 4345 4345 4345 4387 4409 4445 4473 4473 4473 4477 4537 4537 4537 4572 4601 4628 4665 4665 4665 4665 4724 4729 4729 4757 4793 4809 4857 4857 4857 4857 4908 4921] l2 0/4096 prefetched 0 s 1024 mte2 115101 mte3 54690 v 10176",
		"gemm512":               "cycles 26336 kernel 10354 cores [11178 11182 11182 11186 11182 11182 11325 11344 11182 11182 11344 11344 11182 11182 11344 11354 0 0 0 0 0 0 0 0] l2 22528/2048 prefetched 0 mte1 44032 mte2 140632 m 33792 fix 12843",
	}
	for _, k := range timingReferenceKernels(t) {
		t.Run(k.name, func(t *testing.T) {
			st, err := RunTask(k.chip, k.gm, k.kind, k.blocks, k.opts)
			require.NoError(t, err)
			got := timingFingerprint(st)
			require.Equal(t, want[k.name], got, "timing of %s", k.name)
		})
	}
}

// timingFingerprint is what a timed run predicts: cycles per core, L2 counts and
// each pipe's busy cycles.
func timingFingerprint(st *TaskStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cycles %d kernel %d cores %v l2 %d/%d prefetched %d", st.Cycles, st.KernelCycles, st.CoreCycles, st.L2Hits, st.L2Misses, st.PrefetchedBytes)
	var pipes []isa.Pipe
	for p := range st.PipeBusy {
		pipes = append(pipes, p)
	}
	slices.Sort(pipes)
	for _, p := range pipes {
		fmt.Fprintf(&b, " %s %d", p, st.PipeBusy[p])
	}
	return b.String()
}

type timingKernel struct {
	name   string
	chip   *Chip
	kind   isa.CoreKind
	gm     []byte
	blocks []Block
	opts   RunOptions
}

func timingReferenceKernels(t *testing.T) []timingKernel {
	a2 := preset(t, "a2")
	small := preset(t, "a2")
	small.L2Bytes = 1 << 20 // 128 sets of 16 lines: the inputs do not fit
	var ks []timingKernel
	vec := func(name string, chip *Chip, gm []byte, src func(b int) string, blocks int, addrs []int, opts RunOptions) {
		k := timingKernel{name: name, chip: chip, kind: isa.Vector, gm: gm, opts: opts}
		progs := map[string]*MachineProgram{}
		for b := range blocks {
			s := src(b)
			if progs[s] == nil {
				progs[s] = compile(t, chip, parse(t, s))
			}
			k.blocks = append(k.blocks, Block{Prog: progs[s], ParamAddrs: addrs})
		}
		ks = append(ks, k)
	}
	const n = 1 << 18 // f32 elements per array
	addGM := make([]byte, 3*4*n)
	add := func(tileRows, cols, blocks int) func(b int) string {
		per := n / blocks
		return func(b int) string {
			return fmt.Sprintf(`kernel add vector
param %%a: f32[%[1]d]
param %%b: f32[%[1]d]
param %%c: f32[%[1]d]
reg %%i
reg %%off
tile %%x: vec f32[%[2]dx%[3]d]
tile %%y: vec f32[%[2]dx%[3]d]
tile %%z: vec f32[%[2]dx%[3]d]
  loop %%i, %[4]d
    smul %%off, %%i, %[5]d
    sadd %%off, %%off, %[6]d
    tload %%x, %%a[%%off; %[2]dx%[3]d; %[3]d,1]
    tload %%y, %%b[%%off; %[2]dx%[3]d; %[3]d,1]
    tadd %%z, %%x, %%y
    tstore %%c[%%off; %[2]dx%[3]d; %[3]d,1], %%z
  endloop
end
`, n, tileRows, cols, per/(tileRows*cols), tileRows*cols, b*per)
		}
	}
	addrs := []int{0, 4 * n, 8 * n}
	vec("add", a2, addGM, add(4, 1024, 64), 64, addrs, RunOptions{NoValues: true})
	vec("add_small_l2", small, addGM, add(4, 1024, 64), 64, []int{0, 0, 8 * n}, RunOptions{NoValues: true}) // b is a: its loads hit unless evicted
	vec("add_prefetch", a2, addGM, add(4, 1024, 64), 64, addrs, RunOptions{NoValues: true, PrefetchBytes: 1 << 20})
	vec("add_balanced", a2, addGM, add(2, 1024, 100), 100, addrs, RunOptions{NoValues: true, BalanceBlocks: true})
	// Every block reads the same rows (second readers wait for fills), then a
	// transposed window and an element-wise one.
	shared := func(b int) string {
		return fmt.Sprintf(`kernel shared vector
param %%x: f32[%[1]d]
param %%y: f32[%[1]d]
tile %%t: vec f32[16x256]
tile %%u: vec f32[256x16]
tile %%e: vec f32[8x8]
  tload %%t, %%x[0; 16x256; 256,1]
  tload %%u, %%x[%[2]d; 256x16; 1,256]
  tload %%e, %%x[%[3]d; 8x8; 4096,64]
  tstore %%y[%[4]d; 16x256; 256,1], %%t
end
`, n, 4096*(b%8), 8192+b, b*4096)
	}
	vec("shared_reads", a2, make([]byte, 2*4*n), shared, 48, []int{0, 4 * n}, RunOptions{NoValues: true})
	vec("shared_reads_small_l2", small, make([]byte, 2*4*n), shared, 48, []int{0, 4 * n}, RunOptions{NoValues: true})
	vec("add_values", a2, randF32GM(3*n), add(4, 1024, 64), 64, addrs, RunOptions{})

	s := gemmSpec{M: 512, N: 512, K: 512, TM: 128, TN: 128, TK: 64, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	rng := rand.New(rand.NewPCG(1, 2))
	l := layout(dtype.Encode(s.In, randValues(rng, s.In, s.M*s.K, 1)), dtype.Encode(s.In, randValues(rng, s.In, s.K*s.N, 1)), make([]byte, s.M*s.N*2))
	gi, gj := s.grid()
	g := timingKernel{name: "gemm512", chip: a2, kind: isa.Cube, gm: l.gm}
	for bi := range gi {
		for bj := range gj {
			g.blocks = append(g.blocks, Block{Prog: compile(t, a2, s.program(bi, bj)), ParamAddrs: l.addrs})
		}
	}
	ks = append(ks, g)
	return ks
}

// randF32GM is n random f32 values, encoded.
func randF32GM(n int) []byte {
	rng := rand.New(rand.NewPCG(7, 8))
	return dtype.Encode(dtype.Float32, randValues(rng, dtype.Float32, n, 4))
}
