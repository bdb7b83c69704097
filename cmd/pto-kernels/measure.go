package main

import (
	"fmt"
	"os"
	"slices"
	"time"

	"pypto/core"
	"pypto/device"
	"pypto/isa"
	"pypto/lower"
	"pypto/session"
)

// measure compiles case c for chip, runs it timing-only and computes its figures: a
// row with the plain runtime, and one with the runtime's features when c asks.
func measure(chip *device.Chip, c benchCase) (rows []row, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	b := &graphBuilder{Builder: core.NewBuilder(c.name)}
	c.build(b)
	g := b.Graph()

	start := time.Now()
	exe, err := lower.Compile(g, lower.Options{Chip: chip, Disabled: disabled, Weights: b.weights})
	if err != nil {
		return nil, err
	}
	r := row{Case: c.name, Runtime: "off", CompileMs: ms(time.Since(start))}
	if verbose {
		fmt.Fprintf(os.Stderr, "%s: compiled in %.1f ms, %d tasks\n", c.name, r.CompileMs, len(exe.Exec().Tasks))
	}
	if c.cached {
		if r.CachedCompileMs, err = cachedCompile(chip, g); err != nil {
			return nil, err
		}
	}

	for _, t := range exe.Exec().Tasks {
		for _, m := range t.Machine {
			r.InstrsPerCore = max(r.InstrsPerCore, len(m.Instrs))
		}
	}
	if compileOnly {
		return []row{r}, nil
	}
	inputs := make([][]byte, len(g.Params))
	for i, p := range g.Params {
		inputs[i] = make([]byte, g.Type(p).Bytes())
	}
	for _, p := range g.Params {
		r.CompulsoryGMBytes += int64(g.Type(p).Bytes())
	}
	for _, o := range g.Outputs {
		r.CompulsoryGMBytes += int64(g.Type(o).Bytes())
	}
	if c.between > 0 {
		r.ChainFloorGMBytes = r.CompulsoryGMBytes + 2*c.between + c.reread
	}
	r.RooflineMs, r.Bound = roofline(chip, g, r.CompulsoryGMBytes)
	runtimes := []namedRuntime{{"on", lower.Runtime{}}}
	if c.runtimes {
		runtimes = append(runtimes, namedRuntime{"off", lower.PlainRuntime()})
		if eachFeature {
			runtimes = append(runtimes, features...)
		}
	}
	// A program that prepares weights does so in its first run; the rows are the runs
	// after it, which move only what a run must, and the first run's figures are kept
	// beside them.
	var first *lower.RunStats
	if slices.ContainsFunc(exe.Exec().Tasks, exe.Exec().WeightPrep) {
		if _, first, err = exe.RunRuntime(inputs, device.RunOptions{NoValues: true}, lower.Runtime{}); err != nil {
			return nil, err
		}
	}
	for _, nr := range runtimes {
		start := time.Now()
		_, st, err := exe.RunRuntime(inputs, device.RunOptions{NoValues: true}, nr.rt)
		if err != nil {
			return nil, err
		}
		r.Runtime = nr.name
		r.SimWallS = time.Since(start).Seconds()
		r.Tasks = st.Ran()
		r.SimMs = 1e3 * st.Seconds
		var cube int64
		r.GMBytes, r.FootprintBytes = st.HBMBytesRead+st.HBMBytesWritten, 0
		for _, t := range st.Tasks {
			cube += t.Stats.PipeBusy[isa.PipeM]
			r.FootprintBytes += t.Stats.FootprintRead + t.Stats.FootprintWritten
		}
		r.CubeBusy = float64(cube) / (float64(st.Cycles) * float64(chip.CubeCores))
		if first != nil {
			r.FirstRunSimMs = 1e3 * first.Seconds
			r.FirstRunGMBytes = first.HBMBytesRead + first.HBMBytesWritten
		}
		r.RooflineFrac = r.RooflineMs / r.SimMs
		if c.conv != nil {
			if err := convFigures(chip, exe, st, c.conv, &r); err != nil {
				return nil, err
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// convFigures fills a convolution row's kernel figures (a pointwise convolution's
// kernel is its GEMM with the bias and relu fused) and its GEMM's cube busy.
func convFigures(chip *device.Chip, exe *lower.Executable, st *lower.RunStats, mkn *[3]int, r *row) error {
	ops := exe.Exec().Blocks.Tiles.Ops
	for i, t := range exe.Exec().Tasks {
		if op := ops[t.Kernel].Op; op == "conv2d_5hd" || op == "fused_conv2d_5hd" || op == "fused_matmul" || op == "matmul" {
			ts := st.Tasks[i].Stats
			r.ConvCubeBusy = float64(ts.PipeBusy[isa.PipeM]) / (float64(ts.Cycles) * float64(chip.CubeCores))
			r.ConvGMBytes = hbmBytes(chip, ts)
		}
	}
	b := &graphBuilder{Builder: core.NewBuilder("gemm")}
	b.Output(b.op("matmul", nil, b.param("a", mkn[0], mkn[1]), b.param("b", mkn[1], mkn[2])))
	g := b.Graph()
	gexe, err := lower.Compile(g, lower.Options{Chip: chip})
	if err != nil {
		return err
	}
	inputs := make([][]byte, len(g.Params))
	for i, p := range g.Params {
		inputs[i] = make([]byte, g.Type(p).Bytes())
	}
	_, gst, err := gexe.RunRuntime(inputs, device.RunOptions{NoValues: true}, lower.Runtime{})
	if err != nil {
		return err
	}
	var cube int64
	for _, t := range gst.Tasks {
		cube += t.Stats.PipeBusy[isa.PipeM]
	}
	r.GemmCubeBusy = float64(cube) / (float64(gst.Cycles) * float64(chip.CubeCores))
	return nil
}

// hbmBytes is a task's traffic with HBM: the lines its loads missed or had
// prefetched and the bytes it wrote there (lower.RunStats.HBMBytesRead's terms).
func hbmBytes(chip *device.Chip, ts *device.TaskStats) int64 {
	return ts.L2Misses*int64(chip.L2LineBytes) + ts.PrefetchedBytes + ts.HBMBytesWritten
}

// namedRuntime is a row's runtime features and the name its "runtime" key gives them.
type namedRuntime struct {
	name string
	rt   lower.Runtime
}

// features are the runtime's features one at a time (-each-feature): the plain
// runtime with one switched on.
var features = []namedRuntime{
	{"concurrent_tasks", plainWith(func(r *lower.Runtime) { r.NoConcurrentTasks = false })},
	{"overlap_launch", plainWith(func(r *lower.Runtime) { r.NoOverlapLaunch = false })},
	{"prefetch_l2", plainWith(func(r *lower.Runtime) { r.NoPrefetchL2 = false })},
	{"balance_blocks", plainWith(func(r *lower.Runtime) { r.NoBalanceBlocks = false })},
	{"early_start", plainWith(func(r *lower.Runtime) { r.NoEarlyStart = false })},
}

// plainWith is the plain runtime with what on switches on.
func plainWith(on func(*lower.Runtime)) lower.Runtime {
	r := lower.PlainRuntime()
	on(&r)
	return r
}

// cachedCompile compiles g twice through a session's compile cache and returns the
// time of the second compile, which finds the first one's program.
func cachedCompile(chip *device.Chip, g *core.Graph) (float64, error) {
	s := session.New(session.Lowering())
	if err := s.SetDevice(chip.Name); err != nil {
		return 0, err
	}
	if _, err := s.Compile(g); err != nil {
		return 0, err
	}
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		if _, err := s.Compile(g); err != nil {
			return 0, err
		}
		best = min(best, time.Since(start))
	}
	return ms(best), nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
