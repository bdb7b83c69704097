package calib

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"pypto/device"
	"pypto/isa"
)

// Fitted holds the preset constants the calibration fits; every other constant is
// public or assumed (device/presets.go). DispatchCycles is fitted to every row's time
// (it adds to each task's), SortBytesPerCycle to the times of the rows that sort
// (top-k), L1ToL0FractalRowCycles to the extract busy of the rows that extract (the
// GEMMs).
type Fitted struct {
	DispatchCycles         int
	SortBytesPerCycle      int
	L1ToL0FractalRowCycles int
}

// FittedOf reads the fitted constants of chip.
func FittedOf(chip *device.Chip) Fitted {
	return Fitted{DispatchCycles: chip.DispatchCycles, SortBytesPerCycle: chip.SortBytesPerCycle,
		L1ToL0FractalRowCycles: chip.L1ToL0FractalRowCycles}
}

// sortRateRange bounds the search for SortBytesPerCycle: from 8 B/cycle (a pair
// compare per cycle) to the plain vector rate.
const sortRateMin, sortRateMax = 8, 256

// rowCostMax bounds L1ToL0FractalRowCycles, and rowCostProbe is the second cost the
// extract fit simulates (besides 0).
const rowCostMax, rowCostProbe = 256, 32

// evaluator simulates the cases on variants of one chip and keeps the results: a
// case's time without the dispatch (which only adds to it) depends on the sort rate
// only when its kernel sorts and on the fractal row cost only when it extracts, so
// the fit and every leave-one-out refit share the same runs.
type evaluator struct {
	chip  *device.Chip
	cases []Case
	mu    sync.Mutex
	runs  map[evalKey]*device.TaskStats
}

type evalKey struct{ c, rate, rowCost int }

func newEvaluator(chip *device.Chip, cases []Case) *evaluator {
	return &evaluator{chip: chip, cases: cases, runs: map[evalKey]*device.TaskStats{}}
}

func (e *evaluator) key(i, rate, rowCost int) evalKey {
	if !e.cases[i].Sorts() {
		rate = 0
	}
	if !e.cases[i].Extracts() {
		rowCost = -1
	}
	return evalKey{i, rate, rowCost}
}

// stats returns the runs of cases idx at sort rate rate and fractal row cost
// rowCost, simulated with no dispatch time, running the missing ones in parallel.
func (e *evaluator) stats(idx []int, rate, rowCost int) ([]*device.TaskStats, error) {
	out := make([]*device.TaskStats, len(idx))
	errs := make([]error, len(idx))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for n, i := range idx {
		k := e.key(i, rate, rowCost)
		e.mu.Lock()
		st := e.runs[k]
		e.mu.Unlock()
		if st != nil {
			out[n] = st
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			chip := e.chip.Clone()
			chip.DispatchCycles, chip.SortBytesPerCycle, chip.L1ToL0FractalRowCycles = 0, rate, rowCost
			if k.rate == 0 {
				chip.SortBytesPerCycle = e.chip.SortBytesPerCycle
			}
			if k.rowCost < 0 {
				chip.L1ToL0FractalRowCycles = e.chip.L1ToL0FractalRowCycles
			}
			st, err := e.cases[i].Simulate(chip)
			out[n], errs[n] = st, err
			if err == nil {
				e.mu.Lock()
				e.runs[k] = st
				e.mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bestDispatch is the dispatch time that minimises the squared relative errors of
// the given runs' times against the published ones (closed form: the dispatch adds
// to every time), and that sum.
func (e *evaluator) bestDispatch(idx []int, runs []*device.TaskStats) (int, float64) {
	var num, den float64
	for n, i := range idx {
		p := e.cases[i].PublishedMs * 1e-3 * e.chip.ClockHz
		num += (p - float64(runs[n].Cycles)) / (p * p)
		den += 1 / (p * p)
	}
	d := max(0, int(math.Round(num/den)))
	var sse float64
	for n, i := range idx {
		p := e.cases[i].PublishedMs * 1e-3 * e.chip.ClockHz
		r := (float64(runs[n].Cycles)+float64(d))/p - 1
		sse += r * r
	}
	return d, sse
}

// bestRowCost is the fractal row cost that minimises the squared errors of the extract
// busy of the cases idx that extract, against the published ones (the chip's cost
// when none does). An extract's time is linear in the cost, so the MTE1 busy cycles
// of a run are too; the task's cycles change by a few percent and are taken as
// linear between runs at 0 and rowCostProbe. The busy ratios' denominators take
// dispatch (fit alternates it with the time fit's).
func (e *evaluator) bestRowCost(idx []int, dispatch int) (int, error) {
	var ext []int
	for _, i := range idx {
		if e.cases[i].Extracts() {
			ext = append(ext, i)
		}
	}
	if len(ext) == 0 {
		return e.chip.L1ToL0FractalRowCycles, nil
	}
	at0, err := e.stats(ext, 0, 0)
	if err != nil {
		return 0, err
	}
	atP, err := e.stats(ext, 0, rowCostProbe)
	if err != nil {
		return 0, err
	}
	lerp := func(a, b int64, x int) float64 { return float64(a) + float64(b-a)*float64(x)/rowCostProbe }
	best, bestErr := 0, math.Inf(1)
	for x := 0; x <= rowCostMax; x++ {
		var sse float64
		for n, i := range ext {
			c := e.cases[i]
			u := c.unit(isa.PipeMTE1)
			busy := lerp(at0[n].PipeBusy[isa.PipeMTE1], atP[n].PipeBusy[isa.PipeMTE1], x) /
				((lerp(at0[n].Cycles, atP[n].Cycles, x) + float64(dispatch)) * float64(at0[n].ActiveCores))
			sse += (busy - c.PublishedBusy[u]) * (busy - c.PublishedBusy[u])
		}
		if sse < bestErr {
			best, bestErr = x, sse
		}
	}
	return best, nil
}

// fit fits the constants to the cases idx: the fractal row cost to the extract busy
// (bestRowCost, whose busy ratios take a dispatch), then the sort rate and the
// dispatch to the times (fitTimes), and again while the dispatch changes the row
// cost. When the row costs cycle (the busy error's best cost sits on an integer's
// edge), the fit is the smallest cost of the cycle's, so that it is the same from
// any start: a chip holding the fit refits to it (-update checks it).
func (e *evaluator) fit(idx []int) (Fitted, float64, error) {
	type fitted struct {
		f   Fitted
		sse float64
	}
	fits := map[int]fitted{}
	var order []int
	dispatch := e.chip.DispatchCycles
	for {
		rowCost, err := e.bestRowCost(idx, dispatch)
		if err != nil {
			return Fitted{}, 0, err
		}
		if _, ok := fits[rowCost]; ok {
			cycle := order[slices.Index(order, rowCost):]
			best := fits[slices.Min(cycle)]
			return best.f, best.sse, nil
		}
		f, sse, err := e.fitTimes(idx, rowCost)
		if err != nil {
			return Fitted{}, 0, err
		}
		fits[rowCost] = fitted{f, sse}
		order = append(order, rowCost)
		dispatch = f.DispatchCycles
	}
}

// fitTimes fits the sort rate and the dispatch to the times of cases idx at fractal
// row cost rowCost: a golden-section search over the rate (the error is unimodal in
// it), with the best dispatch at each rate. When no case of idx sorts, the rate stays
// the chip's.
func (e *evaluator) fitTimes(idx []int, rowCost int) (Fitted, float64, error) {
	objective := func(rate int) (int, float64, error) {
		runs, err := e.stats(idx, rate, rowCost)
		if err != nil {
			return 0, 0, err
		}
		d, sse := e.bestDispatch(idx, runs)
		return d, sse, nil
	}
	sorts := false
	for _, i := range idx {
		sorts = sorts || e.cases[i].Sorts()
	}
	if !sorts {
		d, sse, err := objective(e.chip.SortBytesPerCycle)
		return Fitted{DispatchCycles: d, SortBytesPerCycle: e.chip.SortBytesPerCycle, L1ToL0FractalRowCycles: rowCost}, sse, err
	}
	memo := map[int]float64{}
	f := func(rate int) (float64, error) {
		if v, ok := memo[rate]; ok {
			return v, nil
		}
		_, sse, err := objective(rate)
		memo[rate] = sse
		return sse, err
	}
	lo, hi := sortRateMin, sortRateMax
	const invPhi = 0.6180339887498949
	for hi-lo > 3 {
		m1 := hi - int(math.Round(invPhi*float64(hi-lo)))
		m2 := lo + int(math.Round(invPhi*float64(hi-lo)))
		f1, err := f(m1)
		if err != nil {
			return Fitted{}, 0, err
		}
		f2, err := f(m2)
		if err != nil {
			return Fitted{}, 0, err
		}
		if f1 <= f2 {
			hi = m2
		} else {
			lo = m1
		}
	}
	best, bestF := lo, math.Inf(1)
	for r := lo; r <= hi; r++ {
		v, err := f(r)
		if err != nil {
			return Fitted{}, 0, err
		}
		if v < bestF {
			best, bestF = r, v
		}
	}
	d, sse, err := objective(best)
	return Fitted{DispatchCycles: d, SortBytesPerCycle: best, L1ToL0FractalRowCycles: rowCost}, sse, err
}

// predict is case i's run under the fitted constants f, in milliseconds, with its
// stats (simulated without the dispatch).
func (e *evaluator) predict(i int, f Fitted) (float64, *device.TaskStats, error) {
	runs, err := e.stats([]int{i}, f.SortBytesPerCycle, f.L1ToL0FractalRowCycles)
	if err != nil {
		return 0, nil, err
	}
	return float64(runs[0].Cycles+int64(f.DispatchCycles)) / e.chip.ClockHz * 1e3, runs[0], nil
}

// Fit fits the constants to every case.
func Fit(chip *device.Chip) (Fitted, error) {
	cases := Cases(chip)
	f, _, err := newEvaluator(chip, cases).fit(allIndices(len(cases)))
	return f, err
}

func allIndices(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// Result is one case simulated with chip's constants as they are, and predicted by
// a fit made without it.
type Result struct {
	Case
	Stats *device.TaskStats
	SimMs float64
	Busy  []float64 // per unit of the case
	// LooMs is the case's time under constants fitted to the other cases.
	LooMs float64
	Loo   Fitted
}

// Calibrate simulates every case on chip, fits the fitted constants to all cases
// (returned, for checking that the presets hold them) and refits them once per case
// without it (leave-one-out).
func Calibrate(chip *device.Chip) ([]Result, Fitted, error) {
	cases := Cases(chip)
	e := newEvaluator(chip, cases)
	all := allIndices(len(cases))
	out := make([]Result, len(cases))
	for i, c := range cases {
		ms, st, err := e.predict(i, FittedOf(chip))
		if err != nil {
			return nil, Fitted{}, err
		}
		busy := make([]float64, len(c.Units))
		cycles := float64(st.Cycles + int64(chip.DispatchCycles))
		for u, unit := range c.Units {
			busy[u] = float64(st.PipeBusy[unit.Pipe]) / (cycles * float64(st.ActiveCores))
		}
		out[i] = Result{Case: c, Stats: st, SimMs: ms, Busy: busy}
	}
	for i := range cases {
		rest := append(append([]int{}, all[:i]...), all[i+1:]...)
		f, _, err := e.fit(rest)
		if err != nil {
			return nil, Fitted{}, err
		}
		if out[i].LooMs, _, err = e.predict(i, f); err != nil {
			return nil, Fitted{}, err
		}
		out[i].Loo = f
	}
	f, _, err := e.fit(all)
	return out, f, err
}

// Apply sets the fitted constants f on chip.
func (f Fitted) Apply(chip *device.Chip) {
	chip.DispatchCycles, chip.SortBytesPerCycle, chip.L1ToL0FractalRowCycles = f.DispatchCycles, f.SortBytesPerCycle, f.L1ToL0FractalRowCycles
}

// String names the fitted constants and their values.
func (f Fitted) String() string {
	return fmt.Sprintf("DispatchCycles=%d SortBytesPerCycle=%d L1ToL0FractalRowCycles=%d", f.DispatchCycles, f.SortBytesPerCycle, f.L1ToL0FractalRowCycles)
}
