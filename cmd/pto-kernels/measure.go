package main

import (
	"fmt"
	"os"
	"time"

	"pypto/core"
	"pypto/device"
	"pypto/isa"
	"pypto/lower"
	"pypto/session"
)

// measure compiles case c for chip, runs it timing-only and computes its figures.
func measure(chip *device.Chip, c benchCase) (r row, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	b := &graphBuilder{core.NewBuilder(c.name)}
	c.build(b)
	g := b.Graph()

	start := time.Now()
	exe, err := lower.Compile(g, lower.Options{Chip: chip})
	if err != nil {
		return r, err
	}
	r = row{Case: c.name, CompileMs: ms(time.Since(start))}
	if verbose {
		fmt.Fprintf(os.Stderr, "%s: compiled in %.1f ms, %d tasks\n", c.name, r.CompileMs, len(exe.Exec().Tasks))
	}
	if c.cached {
		if r.CachedCompileMs, err = cachedCompile(chip, g); err != nil {
			return r, err
		}
	}

	for _, t := range exe.Exec().Tasks {
		for _, m := range t.Machine {
			r.InstrsPerCore = max(r.InstrsPerCore, len(m.Instrs))
		}
	}
	if compileOnly {
		return r, nil
	}
	inputs := make([][]byte, len(g.Params))
	for i, p := range g.Params {
		inputs[i] = make([]byte, g.Type(p).Bytes())
	}
	_, st, err := exe.RunWith(inputs, device.RunOptions{NoValues: true})
	if err != nil {
		return r, err
	}
	r.Tasks = len(st.Tasks)
	r.SimMs = 1e3 * st.Seconds
	var cube int64
	for _, t := range st.Tasks {
		cube += t.Stats.PipeBusy[isa.PipeM]
		r.GMBytes += t.Stats.FootprintRead + t.Stats.FootprintWritten
	}
	r.CubeBusy = float64(cube) / (float64(st.Cycles) * float64(chip.CubeCores))
	for _, p := range g.Params {
		r.CompulsoryGMBytes += int64(g.Type(p).Bytes())
	}
	for _, o := range g.Outputs {
		r.CompulsoryGMBytes += int64(g.Type(o).Bytes())
	}
	r.RooflineMs, r.Bound = roofline(chip, g, r.CompulsoryGMBytes)
	r.RooflineFrac = r.RooflineMs / r.SimMs
	return r, nil
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
