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
// tables with them). Last so: a load's missed lines are filled whole from HBM, so
// a window whose rows are shorter than a line (two rows sharing a line's fill) is
// charged the line against the HBM, where half of it had counted as a hit
// (add_small_l2, add_prefetch, add_balanced, shared_reads: their L2 hits, MTE2 and
// MTE3 busy, kernel and core times).
func TestTimingUnchangedOnReferenceKernels(t *testing.T) {
	want := map[string]string{
		"add":                   "cycles 22391 kernel 5975 cores [6585 6607 6607 6632 6671 6671 6799 6799 6819 6863 6863 6873 6927 6927 6927 6975 4153 4153 4153 4195 4217 4253 4281 4281 4281 4285 4345 4345 4345 4380 4409 4436 4473 4473 4473 4473 4532 4537 4537 4565 4601 4617 4665 4665 4665 4665 4716 4729] l2 0/4096 prefetched 0 s 1024 mte2 105881 mte3 58930 v 4608",
		"add_small_l2":          "cycles 21685 kernel 5269 cores [6035 6035 6067 6077 5821 6077 6077 6079 6141 6164 5885 6205 6205 6250 6269 6269 3193 3577 3577 3635 3641 3193 3193 3641 3703 3705 3738 3203 3257 3769 3769 3769 3769 3257 3271 3818 3833 3888 3897 3449 3919 3961 3961 3961 3961 3833 4002 4025] l2 1725/2371 prefetched 0 s 1024 mte2 83300 mte3 46092 v 4608",
		"add_prefetch":          "cycles 21340 kernel 4924 cores [5519 5540 5583 5644 5647 5654 5711 5711 5775 5786 5839 5839 5839 5896 5903 5924 3065 3082 3129 3130 3193 3193 3193 3241 3257 3257 3257 3267 3321 3321 3377 3385 3385 3423 3449 3449 3449 3451 3513 3513 3561 3577 3577 3605 3641 3641 3641 3641] l2 2064/2032 prefetched 1056768 s 1024 mte2 63245 mte3 51117 v 4608",
		"add_balanced":          "cycles 23778 kernel 7362 cores [8298 8302 8362 8362 5978 5978 5978 5978 5978 5981 6042 6042 6042 6042 6042 6042 6100 6106 6106 6106 6106 6106 6106 6162 6170 6170 6170 6170 6170 6187 6234 6234 6234 6234 6234 6234 6266 6298 6298 6298 6298 6298 6298 6353 6362 6362 6362 6362] l2 0/3398 prefetched 0 s 1600 mte2 107663 mte3 66378 v 4000",
		"shared_reads":          "cycles 18727 kernel 2311 cores [2925 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 2929 3006 3055 3055 3055 3117 3119 3119 3119 3119 3119 3185 3247 3247 3247 3296 3311 3311 3311] l2 5872/264 prefetched 0 mte2 82796 mte3 46888",
		"shared_reads_small_l2": "cycles 18727 kernel 2311 cores [2929 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 2933 3006 3055 3055 3055 3117 3119 3119 3119 3119 3119 3185 3247 3247 3247 3296 3311 3311 3311] l2 5860/270 prefetched 0 mte2 82988 mte3 46888",
		"add_values":            "cycles 22391 kernel 5975 cores [6585 6607 6607 6632 6671 6671 6799 6799 6819 6863 6863 6873 6927 6927 6927 6975 4153 4153 4153 4195 4217 4253 4281 4281 4281 4285 4345 4345 4345 4380 4409 4436 4473 4473 4473 4473 4532 4537 4537 4565 4601 4617 4665 4665 4665 4665 4716 4729] l2 0/4096 prefetched 0 s 1024 mte2 105881 mte3 58930 v 4608",
		"gemm512":               "cycles 26564 kernel 10148 cores [10978 10982 10982 10986 10982 10982 11125 11144 10982 10982 11144 11144 10982 10982 11144 11148 0 0 0 0 0 0 0 0] l2 22528/2048 prefetched 0 mte1 44032 mte2 137432 m 33792 fix 12837",
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
