// Command pto-simspeed measures the simulator's host speed on fixed workloads: fp16
// GEMMs (the calibration kernel), row softmax / layer norm over f32 matrices and an
// elementwise f32 add, each
// in functional mode (values only), timed (values and the timing model; repeated
// runs take their times from the timing cache) and timed_uncached (the timing loop
// at every run). It
// prints a JSON list of {case, mode, sim_s, sim_cycles}; bench/sim_speed.py adds
// numpy's time for the same computation.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"pypto/device"
	"pypto/device/calib"
	"pypto/dtype"
	"pypto/isa"
)

type result struct {
	Case      string  `json:"case"`
	Mode      string  `json:"mode"`
	SimS      float64 `json:"sim_s"`
	SimCycles int64   `json:"sim_cycles"`
	// Instrs and L2Lines are the work the timed modes model: machine instructions
	// executed and L2 lines looked up (0 in functional mode).
	Instrs  int64 `json:"instructions"`
	L2Lines int64 `json:"l2_lines"`
	// CPUS is the process's CPU time (user and system, all threads) during the
	// fastest run: on a loaded host it shows the work that the wall clock hides.
	CPUS float64 `json:"sim_cpu_s"`
	SIMD string  `json:"simd"` // the kernels' instruction set (device.SIMDKernels)
	// TimingCached says the fastest run took its times from the timing cache (a
	// task run again with the same inputs computes only its values); mode
	// timed_uncached runs the timing loop every time.
	TimingCached bool `json:"timing_cached"`
}

func main() {
	reps := flag.Int("reps", 1, "runs per case (the fastest counts)")
	only := flag.String("case", "", "run only the cases whose name contains this")
	mode := flag.String("mode", "", "run only this mode: functional, timed, timed_uncached (the timing loop at every run: RunOptions.NoTimingCache), or timing (the timing model alone, RunOptions.NoValues: not run by default)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the runs to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the runs to this file")
	flag.Parse()
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
	}
	err := profiled(*cpuProfile, func() error { return run(*reps, *only, *mode) })
	if err == nil && *memProfile != "" {
		err = writeHeapProfile(*memProfile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pto-simspeed:", err)
		os.Exit(1)
	}
}

// writeHeapProfile writes the allocations made so far (pprof -sample_index=alloc_space).
func writeHeapProfile(path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	return pprof.Lookup("allocs").WriteTo(out, 0)
}

// profiled runs f, under a CPU profile written to path unless path is empty.
func profiled(path string, f func() error) error {
	if path == "" {
		return f()
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return f()
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// workload is a task ready to run: compiled blocks and a GM image to start from.
type workload struct {
	name   string
	kind   isa.CoreKind
	blocks []device.Block
	gm     []byte
}

func run(reps int, only, onlyMode string) error {
	chip, err := device.Preset("a2")
	if err != nil {
		return err
	}
	// Each case is built only when selected, so a profile of one case shows its run.
	type build struct {
		name string
		make func() (workload, error)
	}
	var builds []build
	for _, n := range []int{1024, 2048} {
		builds = append(builds, build{fmt.Sprintf("gemm_fp16_%d", n), func() (workload, error) { return gemm(chip, n) }})
	}
	for _, k := range []string{"softmax", "layernorm"} {
		builds = append(builds, build{fmt.Sprintf("%s_4096x4096", k), func() (workload, error) { return rowKernel(chip, k, 4096, 4096) }})
	}
	builds = append(builds, build{"add_fp32_4194304", func() (workload, error) { return addKernel(chip, 1<<22) }})
	var out []result
	for _, bld := range builds {
		if !strings.Contains(bld.name, only) {
			continue
		}
		w, err := bld.make()
		if err != nil {
			return err
		}
		modes := []string{"functional", "timed", "timed_uncached"}
		if onlyMode == "timing" {
			modes = []string{"timing"}
		}
		for _, mode := range modes {
			if onlyMode != "" && mode != onlyMode {
				continue
			}
			opts := device.RunOptions{Functional: mode == "functional", NoValues: mode == "timing", NoTimingCache: mode == "timed_uncached"}
			best, bestCPU := -1.0, 0.0
			var cycles, instrs, lines int64
			cached := false
			// One GM image for every run, refilled before each: a fresh image per run
			// would make the garbage collector run during the next one.
			gm := make([]byte, len(w.gm))
			for range max(1, reps) {
				copy(gm, w.gm)
				c0, t0 := cpuTime(), time.Now()
				st, err := device.RunTask(chip, gm, w.kind, w.blocks, opts)
				el, cpu := time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
				if err != nil {
					return fmt.Errorf("%s (%s): %w", w.name, mode, err)
				}
				if best < 0 || el < best {
					best, bestCPU, cached = el, cpu, st.TimingCached
				}
				cycles, instrs, lines = st.Cycles, st.Instructions, st.L2Hits+st.L2Misses
			}
			if mode == "functional" {
				cycles, lines = 0, 0 // not modelled
			}
			out = append(out, result{w.name, mode, best, cycles, instrs, lines, bestCPU, device.SIMDKernels(), cached})
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// gemm is the calibration kernel on n x n x n fp16 over 16 cores' worth of blocks.
func gemm(chip *device.Chip, n int) (workload, error) {
	g := calib.GEMM{M: n, K: n, N: n, BaseM: 128, BaseN: 256, BaseK: 64, StepK: 4, Cores: 16}
	progs, err := g.Programs()
	if err != nil {
		return workload{}, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, n*n)
	for i := range vals {
		vals[i] = rng.Float64()*2 - 1
	}
	ab := dtype.Encode(dtype.Float16, vals)
	sz := n * n * 2
	gm := make([]byte, 3*sz)
	copy(gm, ab)
	copy(gm[sz:], ab)
	w := workload{name: fmt.Sprintf("gemm_fp16_%d", n), kind: isa.Cube, gm: gm}
	for _, p := range progs {
		m, err := device.Compile(chip, p)
		if err != nil {
			return workload{}, err
		}
		w.blocks = append(w.blocks, device.Block{Prog: m, ParamAddrs: []int{0, sz, 2 * sz}})
	}
	return w, nil
}

// rowKernel builds a row softmax or layer norm over rows x cols f32: 64 blocks, each
// looping over tiles of 4 rows (4 x 4096 f32 is 64 KB of UB).
func rowKernel(chip *device.Chip, kind string, rows, cols int) (workload, error) {
	const tileRows, blocks = 4, 64
	per := rows / blocks
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float64, rows*cols)
	for i := range vals {
		vals[i] = rng.NormFloat64()
	}
	sz := rows * cols * 4
	gm := make([]byte, 2*sz)
	copy(gm, dtype.Encode(dtype.Float32, vals))
	w := workload{name: fmt.Sprintf("%s_%dx%d", kind, rows, cols), kind: isa.Vector, gm: gm}
	for b := range blocks {
		body := `    trowmax %m, %t
    trowexpandsub %t, %t, %m
    texp %t, %t
    trowsum %m, %t
    trowexpanddiv %t, %t, %m`
		if kind == "layernorm" {
			body = fmt.Sprintf(`    trowsum %%m, %%t
    tmuls %%m, %%m, %[1]g
    trowexpandsub %%t, %%t, %%m
    tmul %%u, %%t, %%t
    trowsum %%v, %%u
    tmuls %%v, %%v, %[1]g
    tadds %%v, %%v, 1e-05
    trsqrt %%v, %%v
    trowexpandmul %%t, %%t, %%v`, 1/float64(cols))
		}
		src := fmt.Sprintf(`kernel %[1]s_%[2]d vector
param %%x: f32[%[3]d]
param %%y: f32[%[3]d]
reg %%i
reg %%off
tile %%t: vec f32[%[4]dx%[5]d]
tile %%u: vec f32[%[4]dx%[5]d]
tile %%m: vec f32[%[4]dx8] valid %[4]d x 1
tile %%v: vec f32[%[4]dx8] valid %[4]d x 1
  loop %%i, %[6]d
    smul %%off, %%i, %[7]d
    sadd %%off, %%off, %[8]d
    tload %%t, %%x[%%off; %[4]dx%[5]d; %[5]d,1]
%[9]s
    tstore %%y[%%off; %[4]dx%[5]d; %[5]d,1], %%t
  endloop
end
`, kind, b, rows*cols, tileRows, cols, per/tileRows, tileRows*cols, b*per*cols, body)
		blk, err := vectorBlock(chip, src, []int{0, sz})
		if err != nil {
			return workload{}, err
		}
		w.blocks = append(w.blocks, blk)
	}
	return w, nil
}

// vectorBlock parses and compiles one block's program, its params at addrs.
func vectorBlock(chip *device.Chip, src string, addrs []int) (device.Block, error) {
	p, err := isa.Parse(src)
	if err != nil {
		return device.Block{}, err
	}
	m, err := device.Compile(chip, p)
	if err != nil {
		return device.Block{}, err
	}
	return device.Block{Prog: m, ParamAddrs: addrs}, nil
}

// addKernel builds c = a + b over n f32 elements: 64 blocks, each looping over tiles of
// 4 x 2048 (three 32 KB tiles of UB).
func addKernel(chip *device.Chip, n int) (workload, error) {
	const tileRows, cols, blocks = 4, 2048, 64
	per := n / blocks
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([]float64, 2*n)
	for i := range vals {
		vals[i] = rng.NormFloat64()
	}
	sz := n * 4
	gm := make([]byte, 3*sz)
	copy(gm, dtype.Encode(dtype.Float32, vals))
	w := workload{name: fmt.Sprintf("add_fp32_%d", n), kind: isa.Vector, gm: gm}
	for b := range blocks {
		src := fmt.Sprintf(`kernel add_%[1]d vector
param %%a: f32[%[2]d]
param %%b: f32[%[2]d]
param %%c: f32[%[2]d]
reg %%i
reg %%off
tile %%x: vec f32[%[3]dx%[4]d]
tile %%y: vec f32[%[3]dx%[4]d]
tile %%z: vec f32[%[3]dx%[4]d]
  loop %%i, %[5]d
    smul %%off, %%i, %[6]d
    sadd %%off, %%off, %[7]d
    tload %%x, %%a[%%off; %[3]dx%[4]d; %[4]d,1]
    tload %%y, %%b[%%off; %[3]dx%[4]d; %[4]d,1]
    tadd %%z, %%x, %%y
    tstore %%c[%%off; %[3]dx%[4]d; %[4]d,1], %%z
  endloop
end
`, b, n, tileRows, cols, per/(tileRows*cols), tileRows*cols, b*per)
		blk, err := vectorBlock(chip, src, []int{0, sz, 2 * sz})
		if err != nil {
			return workload{}, err
		}
		w.blocks = append(w.blocks, blk)
	}
	return w, nil
}
