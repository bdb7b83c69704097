package calib

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"pypto/device"
)

// SensitivityRow is the effect of one assumed constant scaled by Factor (the fitted
// constants held): each case's time relative to the preset's, minus one.
type SensitivityRow struct {
	Constant string
	Factor   float64
	Change   []float64 // per case of Cases, in order
}

// SensitivityFactors are the scalings of the sensitivity table.
var SensitivityFactors = []float64{0.5, 2}

// simulateAll runs every case on chip (in parallel) and returns their times in ms and
// their stats.
func simulateAll(chip *device.Chip, cases []Case) ([]float64, []*device.TaskStats, error) {
	ms := make([]float64, len(cases))
	sts := make([]*device.TaskStats, len(cases))
	errs := make([]error, len(cases))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			st, err := c.Simulate(chip)
			if err == nil {
				ms[i], sts[i] = st.Seconds()*1e3, st
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return ms, sts, nil
}

// withOverhead is the time in ms of a run like st on chip c when only c's start and
// end constants differ from the run's, and each core ran one block (so every
// prologue and epilogue is in StartCycles and EndCycles); ok is false otherwise.
func withOverhead(c *device.Chip, st *device.TaskStats) (float64, bool) {
	if st.Blocks != st.ActiveCores {
		return 0, false
	}
	return float64(int64(c.StartCycles())+st.KernelCycles+int64(c.EndCycles())) / c.ClockHz * 1e3, true
}

// Sensitivity scales each assumed timing constant of chip by each of
// SensitivityFactors and reports the change of every case's time. A start or end
// constant (Constant.Overhead) adds to each task's time without changing what the
// cores do, so its rows are computed from the preset's runs instead of run again.
func Sensitivity(chip *device.Chip) ([]Case, []SensitivityRow, error) {
	cases := Cases(chip)
	base, baseStats, err := simulateAll(chip, cases)
	if err != nil {
		return nil, nil, err
	}
	var out []SensitivityRow
	for _, k := range device.TimingConstants() {
		if k.Source != device.Assumed || k.Get(chip) == 0 {
			continue
		}
		for _, f := range SensitivityFactors {
			c := chip.Clone()
			k.Set(c, k.Get(chip)*f)
			if err := c.Validate(); err != nil {
				return nil, nil, fmt.Errorf("calib: %s x %g: %w", k.Name, f, err)
			}
			ms := make([]float64, len(cases))
			computed := k.Overhead
			for i, st := range baseStats {
				if computed {
					ms[i], computed = withOverhead(c, st)
				}
			}
			if !computed {
				if ms, _, err = simulateAll(c, cases); err != nil {
					return nil, nil, fmt.Errorf("calib: %s x %g: %w", k.Name, f, err)
				}
			}
			row := SensitivityRow{Constant: k.Name, Factor: f, Change: make([]float64, len(cases))}
			for i := range cases {
				row.Change[i] = ms[i]/base[i] - 1
			}
			out = append(out, row)
		}
	}
	return cases, out, nil
}

// SensitivityMarkdown is the sensitivity table of docs/device.md.
func SensitivityMarkdown(cases []Case, rows []SensitivityRow) string {
	var b strings.Builder
	b.WriteString("| assumed constant | x |")
	for _, c := range cases {
		b.WriteString(" " + c.Name + " |")
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" --- |", len(cases)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %g |", r.Constant, r.Factor)
		for _, v := range r.Change {
			fmt.Fprintf(&b, " %+.1f%% |", 100*v)
		}
		b.WriteString("\n")
	}
	return b.String()
}
