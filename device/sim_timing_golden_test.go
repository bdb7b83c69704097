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
// tables with them). Last so: the cost per row of fractals of an L1 -> L0 move
// (Chip.L1ToL0FractalRowCycles: gemm512's MTE1 busy and kernel time) and the
// dispatch refitted with it (every row's cycles, 741 fewer; kernel and core times
// of the vector kernels unchanged).
func TestTimingUnchangedOnReferenceKernels(t *testing.T) {
	want := map[string]string{
		"add":                   "cycles 22392 kernel 5975 cores [6585 6607 6607 6632 6671 6671 6799 6799 6819 6863 6863 6873 6927 6927 6927 6975 4153 4153 4153 4195 4217 4253 4281 4281 4281 4285 4345 4345 4345 4380 4409 4436 4473 4473 4473 4473 4532 4537 4537 4565 4601 4617 4665 4665 4665 4665 4716 4729] l2 0/4096 prefetched 0 s 1024 mte2 105881 mte3 58930 v 4608",
		"add_small_l2":          "cycles 21878 kernel 5461 cores [6077 5905 6077 6077 5880 6077 6269 6056 6180 6077 5885 6077 6233 6086 6461 6180 3193 3577 3615 3577 3769 3193 3193 3577 3577 3577 3641 3193 3193 3769 3769 3800 3957 3241 3267 3961 3769 3961 3769 3577 3716 3961 3769 3961 3833 3893 3961 3961] l2 1725/2371 prefetched 0 s 1024 mte2 80448 mte3 48287 v 4608",
		"add_prefetch":          "cycles 21340 kernel 4923 cores [5519 5526 5561 5583 5647 5647 5692 5711 5775 5775 5826 5839 5839 5860 5892 5923 3065 3065 3083 3129 3177 3193 3193 3204 3257 3257 3257 3257 3268 3321 3360 3385 3385 3385 3449 3449 3449 3449 3453 3513 3543 3577 3577 3577 3631 3641 3641 3641] l2 2064/2032 prefetched 1056768 s 1024 mte2 61816 mte3 51998 v 4608",
		"add_balanced":          "cycles 23587 kernel 7170 cores [8170 8170 8170 8170 5786 5786 5815 5786 5850 5850 5882 5850 5850 5850 5914 5914 5914 5914 5938 5914 5978 5914 6042 5978 5978 6042 5978 5978 5978 6106 6025 6106 6042 6042 6042 6106 6042 6106 6098 6170 6112 6170 6106 6170 6170 6170 6170 6191] l2 198/3398 prefetched 0 s 1600 mte2 101789 mte3 64114 v 4000",
		"shared_reads":          "cycles 18728 kernel 2311 cores [2921 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2927 2927 2927 2927 2927 2927 3006 3055 3055 3055 3117 3119 3119 3119 3119 3119 3185 3247 3247 3247 3296 3311 3311 3311] l2 5880/264 prefetched 0 mte2 82604 mte3 46888",
		"shared_reads_small_l2": "cycles 18728 kernel 2311 cores [2921 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2925 2927 2927 2927 2927 2927 2927 3006 3055 3055 3055 3117 3119 3119 3119 3119 3119 3185 3247 3247 3247 3296 3311 3311 3311] l2 5874/270 prefetched 0 mte2 82604 mte3 46888",
		"add_values":            "cycles 22392 kernel 5975 cores [6585 6607 6607 6632 6671 6671 6799 6799 6819 6863 6863 6873 6927 6927 6927 6975 4153 4153 4153 4195 4217 4253 4281 4281 4281 4285 4345 4345 4345 4380 4409 4436 4473 4473 4473 4473 4532 4537 4537 4565 4601 4617 4665 4665 4665 4665 4716 4729] l2 0/4096 prefetched 0 s 1024 mte2 105881 mte3 58930 v 4608",
		"gemm512":               "cycles 26565 kernel 10148 cores [10978 10982 10982 10986 10982 10982 11125 11144 10982 10982 11144 11144 10982 10982 11144 11148 0 0 0 0 0 0 0 0] l2 22528/2048 prefetched 0 mte1 44032 mte2 137432 m 33792 fix 12837",
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
