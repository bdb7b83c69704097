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
// tables with them). Last so: the vector unit's costs fitted to single-instruction
// measurements (a binary instruction's two operand reads per repeat, the result
// latency a dependent instruction waits for, the start-up of 3) and the dispatch
// refitted with them (every row's cycles and the vector kernels' busy times).
func TestTimingUnchangedOnReferenceKernels(t *testing.T) {
	want := map[string]string{
		"add":                   "cycles 22925 kernel 6060 cores [6610 6692 6692 6717 6756 6756 6884 6884 6904 6948 6948 6958 7012 7012 7012 7060 4153 4153 4153 4195 4217 4253 4281 4281 4281 4285 4345 4345 4345 4380 4409 4436 4473 4473 4473 4473 4532 4537 4537 4565 4601 4617 4665 4665 4665 4665 4716 4729] l2 0/4096 prefetched 0 s 1024 mte2 105881 mte3 54790 v 10048",
		"add_small_l2":          "cycles 22258 kernel 5393 cores [6205 6205 6205 6205 5946 6205 6205 6242 6274 6329 5970 6329 6329 6358 6393 6393 3193 3577 3577 3633 3641 3193 3193 3641 3690 3709 3769 3203 3257 3769 3769 3769 3769 3321 3321 3817 3833 3877 3897 3487 3952 3961 3961 3961 3961 3833 4000 4025] l2 1725/2371 prefetched 0 s 1024 mte2 83468 mte3 42812 v 10048",
		"add_prefetch":          "cycles 21874 kernel 5009 cores [5604 5605 5668 5729 5732 5739 5796 5796 5860 5871 5924 5924 5924 5981 5988 6009 3065 3082 3129 3130 3193 3193 3193 3241 3257 3257 3257 3267 3321 3321 3377 3385 3385 3423 3449 3449 3449 3451 3513 3513 3561 3577 3577 3605 3641 3641 3641 3641] l2 2064/2032 prefetched 1056768 s 1024 mte2 63245 mte3 47017 v 10048",
		"add_balanced":          "cycles 24280 kernel 7415 cores [8351 8355 8415 8415 5978 5978 5978 5978 5978 5981 6042 6042 6042 6042 6042 6042 6100 6106 6106 6106 6106 6106 6106 6162 6170 6170 6170 6170 6170 6187 6234 6234 6234 6234 6234 6234 6266 6298 6298 6298 6298 6298 6298 6353 6362 6362 6362 6362] l2 0/3398 prefetched 0 s 1600 mte2 107663 mte3 61290 v 9300",
		"shared_reads":          "cycles 20467 kernel 3602 cores [4601 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602 4602] l2 5872/264 prefetched 0 mte2 163103 mte3 46888",
		"shared_reads_small_l2": "cycles 20471 kernel 3606 cores [4602 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606 4606] l2 5860/270 prefetched 0 mte2 163292 mte3 46888",
		"add_values":            "cycles 22925 kernel 6060 cores [6610 6692 6692 6717 6756 6756 6884 6884 6904 6948 6948 6958 7012 7012 7012 7060 4153 4153 4153 4195 4217 4253 4281 4281 4281 4285 4345 4345 4345 4380 4409 4436 4473 4473 4473 4473 4532 4537 4537 4565 4601 4617 4665 4665 4665 4665 4716 4729] l2 0/4096 prefetched 0 s 1024 mte2 105881 mte3 54790 v 10048",
		"gemm512":               "cycles 27013 kernel 10148 cores [10978 10982 10982 10986 10982 10982 11125 11144 10982 10982 11144 11144 10982 10982 11144 11148 0 0 0 0 0 0 0 0] l2 22528/2048 prefetched 0 mte1 44032 mte2 137432 m 33792 fix 12837",
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
