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

// simulateAll runs every case on chip (in parallel) and returns their times in ms.
func simulateAll(chip *device.Chip, cases []Case) ([]float64, error) {
	ms := make([]float64, len(cases))
	errs := make([]error, len(cases))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			st, err := c.Simulate(chip)
			if err == nil {
				ms[i] = st.Seconds() * 1e3
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// Sensitivity scales each assumed timing constant of chip by each of
// SensitivityFactors and reports the change of every case's time.
func Sensitivity(chip *device.Chip) ([]Case, []SensitivityRow, error) {
	cases := Cases(chip)
	base, err := simulateAll(chip, cases)
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
			ms, err := simulateAll(c, cases)
			if err != nil {
				return nil, nil, fmt.Errorf("calib: %s x %g: %w", k.Name, f, err)
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
