package calib

import (
	"fmt"
	"slices"
	"strings"

	"pypto/device"
	"pypto/isa"
)

// The fit of the instruction costs to the single-instruction rows. The constants are
// integers, fitted by coordinate search from the chip's values (so that refitting the
// presets is a fixed point): each in turn moves by 8, 4, 2 or 1 while that raises
// the objective, the mean precision of the kept rows less the mean shortfall of any
// row below instrFloor (a row far below the floor pulls the constants towards it). A
// row's precision is max(0, 1 - |measured - sim| / measured), the vendor's figure.
//
// Leave one op out: the constants are refitted without an op's rows and predict
// them. A constant that no remaining row changes takes its prior (instrPrior): the
// value it would have without measurements.

// InstrConstant is one fitted constant of the instruction costs.
type InstrConstant struct {
	Name string
	Get  func(*device.Chip) int
	Set  func(*device.Chip, int)
	Min  int
	// Prior is its value when no row pins it, from the chip's other constants, and
	// why.
	Prior     func(*device.Chip) int
	PriorNote string
}

// InstrConstants lists the constants the instruction rows fit.
func InstrConstants() []InstrConstant {
	field := func(name string, f func(*device.Chip) *int, min int, prior func(*device.Chip) int, note string) InstrConstant {
		return InstrConstant{Name: name, Get: func(c *device.Chip) int { return *f(c) }, Set: func(c *device.Chip, v int) { *f(c) = v },
			Min: min, Prior: prior, PriorNote: note}
	}
	same := func(c *device.Chip) int { return 0 }
	return []InstrConstant{
		{Name: "PipeStartup[v]", Get: func(c *device.Chip) int { return c.PipeStartup[isa.PipeV] }, Set: func(c *device.Chip, v int) { c.PipeStartup[isa.PipeV] = v },
			Prior: func(c *device.Chip) int { return c.PipeStartup[isa.PipeV] }, PriorNote: "every vector row pins it"},
		field("VectorFloatLatencyCycles", func(c *device.Chip) *int { return &c.VectorFloatLatencyCycles }, 0,
			func(c *device.Chip) int { return c.VectorFloatLatencyCycles }, "most vector rows pin it"),
		field("VectorIntLatencyCycles", func(c *device.Chip) *int { return &c.VectorIntLatencyCycles }, 0,
			func(c *device.Chip) int { return c.VectorFloatLatencyCycles }, "integer arithmetic as float"),
		field("VectorScalarFormLatencyCycles", func(c *device.Chip) *int { return &c.VectorScalarFormLatencyCycles }, 0,
			func(c *device.Chip) int { return c.VectorFloatLatencyCycles }, "a tile-scalar form is the same arithmetic as the tile-tile one"),
		field("VectorSFUCyclesPerRepeat", func(c *device.Chip) *int { return &c.VectorSFUCyclesPerRepeat }, 1,
			func(*device.Chip) int { return 1 }, "the plain rate of a repeat a cycle"),
		field("VectorReduceRepeatCycles", func(c *device.Chip) *int { return &c.VectorReduceRepeatCycles }, 1,
			func(*device.Chip) int { return 6 }, "a reduction tree of log2(64 lanes) levels, a cycle each"),
		field("UBScalarReadCycles", func(c *device.Chip) *int { return &c.UBScalarReadCycles }, 0,
			func(c *device.Chip) int { return c.VectorFloatLatencyCycles }, "a UB read into a register waits as a vector result does"),
		field("StridedBurstCycles", func(c *device.Chip) *int { return &c.StridedBurstCycles }, 0, same, "none: the port's rate"),
		field("StridedSectorCycles", func(c *device.Chip) *int { return &c.StridedSectorCycles }, 0, same, "none: the port's rate"),
		field("LoadSetupCycles", func(c *device.Chip) *int { return &c.LoadSetupCycles }, 0, same, "none: a read's requests leave at once"),
	}
}

// instrFloor is the precision below which a row's shortfall counts against a fit.
const instrFloor = 0.75

// instrEval simulates the cases on variants of one chip, keeping the cycles of each
// case under the values of the constants it depends on.
type instrEval struct {
	base   *device.Chip
	cases  []InstrCase
	consts []InstrConstant
	uses   [][]bool // uses[case][constant]: changing the constant changes the case's cycles
	memo   map[string]int64
}

func newInstrEval(chip *device.Chip, cases []InstrCase) (*instrEval, error) {
	e := &instrEval{base: chip, cases: cases, consts: InstrConstants(), memo: map[string]int64{}}
	e.uses = make([][]bool, len(cases))
	for i, c := range cases {
		e.uses[i] = make([]bool, len(e.consts))
		if c.Prog == nil {
			continue
		}
		at, err := c.Cycles(chip)
		if err != nil {
			return nil, err
		}
		for k, k0 := range e.consts {
			probe := chip.Clone()
			k0.Set(probe, k0.Get(chip)+7)
			moved, err := c.Cycles(probe)
			if err != nil {
				return nil, err
			}
			e.uses[i][k] = moved != at
		}
	}
	return e, nil
}

// cycles is case i's cycles with the constants vals.
func (e *instrEval) cycles(i int, vals []int) (int64, error) {
	var key strings.Builder
	fmt.Fprintf(&key, "%d", i)
	for k, v := range vals {
		if e.uses[i][k] {
			fmt.Fprintf(&key, ",%d", v)
		}
	}
	if c, ok := e.memo[key.String()]; ok {
		return c, nil
	}
	chip := e.base.Clone()
	for k, v := range vals {
		e.consts[k].Set(chip, v)
	}
	c, err := e.cases[i].Cycles(chip)
	if err == nil {
		e.memo[key.String()] = c
	}
	return c, err
}

// precision is the vendor's figure: max(0, 1 - |measured - sim| / measured).
func precision(measured, sim int64) float64 {
	return max(0, 1-abs64(float64(sim-measured))/float64(measured))
}

// objective is the mean precision of cases idx less the mean shortfall below the floor.
func (e *instrEval) objective(idx []int, vals []int) (float64, error) {
	var sum float64
	for _, i := range idx {
		c, err := e.cycles(i, vals)
		if err != nil {
			return 0, err
		}
		p := precision(e.cases[i].Measured, c)
		sum += p - 2*max(0, instrFloor-p)
	}
	return sum / float64(len(idx)), nil
}

// fit improves vals (the constants free to move) by coordinate search on cases idx.
func (e *instrEval) fit(idx []int, vals []int, free []bool) ([]int, error) {
	vals = slices.Clone(vals)
	best, err := e.objective(idx, vals)
	if err != nil {
		return nil, err
	}
	for improved := true; improved; {
		improved = false
		for k := range vals {
			if !free[k] {
				continue
			}
			for _, step := range []int{8, -8, 4, -4, 2, -2, 1, -1} {
				for {
					v := vals[k] + step
					if v < e.consts[k].Min {
						break
					}
					old := vals[k]
					vals[k] = v
					o, err := e.objective(idx, vals)
					if err != nil {
						return nil, err
					}
					if o <= best+1e-12 {
						vals[k] = old
						break
					}
					best, improved = o, true
				}
			}
		}
	}
	return vals, nil
}

// InstrResult is one row with the simulator's cycles under the chip's constants and
// under constants fitted without the row's op.
type InstrResult struct {
	InstrCase
	Sim, Loo           int64 // 0 when the row is not run
	Precision, LooPrec float64
}

// InstrFit is the instruction calibration: the rows, the fitted constants and the
// figures the goals are stated in.
type InstrFit struct {
	Rows   []InstrResult
	Consts []InstrConstant
	Values []int    // the fit's values, in Consts' order
	UsedBy []string // per constant, the ops of the kept rows it changes
	// Means over the kept rows: ours, leave one op out, the vendor model's; Min is
	// the lowest kept row's precision.
	Mean, LooMean, VendorMean, Min float64
	Kept                           int
}

// FitInstr fits the instruction constants to the kept rows on chip (starting from
// its values) without changing chip.
func FitInstr(chip *device.Chip) ([]int, error) {
	e, err := instrEvalOf(chip)
	if err != nil {
		return nil, err
	}
	return e.fit(keptIndices(e.cases, ""), e.values(chip), e.allFree())
}

// instrEvalOf is the evaluator of every row on chip.
func instrEvalOf(chip *device.Chip) (*instrEval, error) {
	cases, err := InstrCases()
	if err != nil {
		return nil, err
	}
	return newInstrEval(chip, cases)
}

func (e *instrEval) values(chip *device.Chip) []int {
	vals := make([]int, len(e.consts))
	for k, c := range e.consts {
		vals[k] = c.Get(chip)
	}
	return vals
}

func (e *instrEval) allFree() []bool {
	free := make([]bool, len(e.consts))
	for k := range free {
		free[k] = true
	}
	return free
}

// keptIndices are the cases counted, but those of op.
func keptIndices(cases []InstrCase, op string) []int {
	var idx []int
	for i, c := range cases {
		if c.Left == "" && c.Op != op {
			idx = append(idx, i)
		}
	}
	return idx
}

// CalibrateInstr runs every row on chip as it is and predicts each kept op's rows
// from constants refitted without them; it also returns the fit's values (which
// -update writes into the presets).
func CalibrateInstr(chip *device.Chip) (*InstrFit, error) {
	e, err := instrEvalOf(chip)
	if err != nil {
		return nil, err
	}
	cases, vals := e.cases, e.values(chip)
	kept := keptIndices(cases, "")
	fitted, err := e.fit(kept, vals, e.allFree())
	if err != nil {
		return nil, err
	}
	out := &InstrFit{Consts: e.consts, Values: fitted, UsedBy: make([]string, len(e.consts))}
	for k := range e.consts {
		var ops []string
		for _, i := range kept {
			if e.uses[i][k] && !slices.Contains(ops, cases[i].Op) {
				ops = append(ops, cases[i].Op)
			}
		}
		out.UsedBy[k] = strings.Join(ops, ", ")
	}
	loo := map[string][]int{} // op -> constants refitted without its rows
	for _, i := range kept {
		op := cases[i].Op
		if loo[op] != nil {
			continue
		}
		rest := keptIndices(cases, op)
		free := make([]bool, len(e.consts))
		start := slices.Clone(vals)
		for k := range e.consts {
			for _, j := range rest {
				free[k] = free[k] || e.uses[j][k]
			}
			if !free[k] {
				prior := chip.Clone()
				for k2, v := range vals {
					e.consts[k2].Set(prior, v)
				}
				start[k] = e.consts[k].Prior(prior)
			}
		}
		if loo[op], err = e.fit(rest, start, free); err != nil {
			return nil, err
		}
	}
	for i, c := range cases {
		r := InstrResult{InstrCase: c}
		if c.Prog != nil {
			if r.Sim, err = e.cycles(i, vals); err != nil {
				return nil, err
			}
			r.Precision = precision(c.Measured, r.Sim)
		}
		if v := loo[c.Op]; v != nil && c.Left == "" {
			if r.Loo, err = e.cycles(i, v); err != nil {
				return nil, err
			}
			r.LooPrec = precision(c.Measured, r.Loo)
		}
		out.Rows = append(out.Rows, r)
	}
	out.Min = 1
	for _, r := range out.Rows {
		if r.Left != "" {
			continue
		}
		out.Kept++
		out.Mean += r.Precision
		out.LooMean += r.LooPrec
		out.VendorMean += r.VendorPrecision
		out.Min = min(out.Min, r.Precision)
	}
	n := float64(max(1, out.Kept))
	out.Mean, out.LooMean, out.VendorMean = out.Mean/n, out.LooMean/n, out.VendorMean/n
	return out, nil
}

// ApplyInstr sets fitted values on chip.
func ApplyInstr(chip *device.Chip, vals []int) {
	for k, c := range InstrConstants() {
		c.Set(chip, vals[k])
	}
}
