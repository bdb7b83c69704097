// Command pto-kernels compiles the compiler's benchmark cases (GEMMs, a matmul with a
// fused epilogue, softmax, layer norm, attention, a GPT-2-small-sized decoder) for a
// chip preset, runs them on the simulator with the timing model only (values are not
// computed: times never depend on them) and prints each case's simulated time beside
// the chip's roofline for it, as a JSON list with -json (what bench/kernels.py
// prints), else a table.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime/pprof"
	"strings"

	"pypto/device"
)

var (
	verbose     bool // report progress on stderr (-v)
	compileOnly bool // skip the runs (-compile-only)
	eachFeature bool // also measure each runtime feature alone (-each-feature)
	// disabled are the optional passes the cases compile without (-disable)
	disabled map[string]bool
)

// row is one case's figures; the keys are bench/kernels.py's.
type row struct {
	Case         string  `json:"case"`
	SimMs        float64 `json:"sim_ms"`
	RooflineMs   float64 `json:"roofline_ms"`
	RooflineFrac float64 `json:"roofline_frac"`
	CubeBusy     float64 `json:"cube_busy"`
	// GMBytes is the run's traffic with HBM (lower.RunStats.HBMBytesRead +
	// HBMBytesWritten): lines missed in L2 or prefetched, stores written through,
	// dirty workspace lines written back (during the run or after it).
	GMBytes int64 `json:"gm_bytes"`
	// FootprintBytes sums each task's distinct GM bytes read and written: what the
	// tasks would move with an L2 that each starts cold and that holds its data.
	FootprintBytes    int64   `json:"footprint_bytes"`
	CompulsoryGMBytes int64   `json:"compulsory_gm_bytes"`
	CompileMs         float64 `json:"compile_ms"`
	CachedCompileMs   float64 `json:"cached_compile_ms,omitempty"`
	Tasks             int     `json:"tasks"`
	// InstrsPerCore is the size of the largest program a core runs (static machine
	// instructions, flags included): what its instruction cache must hold.
	InstrsPerCore int    `json:"instrs_per_core"`
	Bound         string `json:"bound"` // what sets the roofline: cube, vector or memory
	// Runtime is "on" with the runtime's scheduling features (the default:
	// concurrent tasks, overlapped launches, L2 prefetch, balanced blocks, early
	// starts), "off" for the plain runtime (lower.PlainRuntime), or the one feature
	// the row has alone (-each-feature).
	Runtime string `json:"runtime"`
	// SimWallS is the host time the timing-only run took (seconds).
	SimWallS float64 `json:"sim_wall_s"`
	// For convolutions: the convolution kernel's cube busy and HBM traffic (its task
	// alone, without the layout conversions around it), and the cube busy of a GEMM of
	// the same m, k, n on the same chip.
	ConvCubeBusy float64 `json:"conv_kernel_cube_busy,omitempty"`
	ConvGMBytes  int64   `json:"conv_kernel_gm_bytes,omitempty"`
	// For a chain of convolutions: the compulsory bytes plus each activation passed
	// between its kernels written once and read once.
	ChainFloorGMBytes int64 `json:"chain_floor_gm_bytes,omitempty"`
	// For a program that prepares its weights (convolutions: the weight's conversion to
	// the fractal layout), the first run's simulated time and GM bytes; the row's other
	// figures are the runs after it, which skip the preparation.
	FirstRunSimMs   float64 `json:"first_run_sim_ms,omitempty"`
	FirstRunGMBytes int64   `json:"first_run_gm_bytes,omitempty"`
	GemmCubeBusy    float64 `json:"gemm_same_mkn_cube_busy,omitempty"`
}

func main() {
	asJSON := flag.Bool("json", false, "print a JSON list, one object per case")
	chipName := flag.String("chip", "a2", "chip preset")
	only := flag.String("case", "", "run only the cases whose name matches this regular expression")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.BoolVar(&verbose, "v", false, "report each step on stderr")
	flag.BoolVar(&compileOnly, "compile-only", false, "compile the cases without running them (for profiling the compiler)")
	flag.BoolVar(&eachFeature, "each-feature", false, "for the cases measured with the runtime's features, also a row per feature alone")
	off := flag.String("disable", "", "compile the cases without these optional passes (comma-separated names)")
	tasks := flag.Int("tasks", 0, "instead of the rows, print each kind of kernel's share of the run and the first N tasks one by one")
	flag.Parse()
	if *off != "" {
		disabled = map[string]bool{}
		for _, name := range strings.Split(*off, ",") {
			disabled[strings.TrimSpace(name)] = true
		}
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	chip, err := device.Preset(*chipName)
	if err != nil {
		fail(err)
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		fail(fmt.Errorf("-case: %v", err))
	}
	var rows []row
	if *tasks > 0 {
		for _, c := range benchCases() {
			if re.MatchString(c.name) {
				if err := printTasks(chip, c, *tasks); err != nil {
					fail(fmt.Errorf("%s: %v", c.name, err))
				}
			}
		}
		return
	}
	for _, c := range benchCases() {
		if !re.MatchString(c.name) {
			continue
		}
		rs, err := measure(chip, c)
		if err != nil {
			fail(fmt.Errorf("%s: %v", c.name, err))
		}
		rows = append(rows, rs...)
	}
	if *asJSON {
		out, _ := json.MarshalIndent(rows, "", "  ")
		fmt.Println(string(out))
		return
	}
	fmt.Printf("%-24s %16s %9s %9s %6s %6s %8s %8s %9s %6s %7s\n", "case", "rt", "sim ms", "roof ms", "frac", "cube", "GM MB", "comp MB", "compile", "tasks", "instrs")
	for _, r := range rows {
		fmt.Printf("%-24s %16s %9.4f %9.4f %6.3f %6.3f %8.1f %8.1f %7.1fms %6d %7d\n", r.Case, r.Runtime, r.SimMs, r.RooflineMs, r.RooflineFrac, r.CubeBusy,
			float64(r.GMBytes)/1e6, float64(r.CompulsoryGMBytes)/1e6, r.CompileMs, r.Tasks, r.InstrsPerCore)
	}
}

func fail(err error) {
	pprof.StopCPUProfile()
	fmt.Fprintln(os.Stderr, "pto-kernels:", err)
	os.Exit(1)
}
