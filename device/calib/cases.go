package calib

import (
	"fmt"
	"strings"

	"pypto/device"
	"pypto/isa"
)

// Unit is one unit whose busy ratio a published row gives, and the pipe that is it.
type Unit struct {
	Name string
	Pipe isa.Pipe
}

// The units of the two tables, in their column order.
var (
	gemmUnits = []Unit{{"cube", isa.PipeM}, {"extract", isa.PipeMTE1}, {"load", isa.PipeMTE2}, {"store", isa.PipeFIX}}
	topkUnits = []Unit{{"vector", isa.PipeV}, {"scalar", isa.PipeS}, {"mte2", isa.PipeMTE2}, {"mte3", isa.PipeMTE3}}
)

// Case is one published row: the kernel that ran and what was measured.
type Case struct {
	Name string // gemm_1536, topk_f32_4800, ...
	Kind string // "gemm" or "topk"
	// GEMM is set for a gemm row, TopK for a topk row.
	GEMM          *GEMM
	TopK          *TopK
	Units         []Unit
	PublishedMs   float64
	PublishedBusy []float64 // per unit, as fractions
}

// Cases is every row of both published tables, for chip (its cube or vector cores).
func Cases(chip *device.Chip) []Case {
	var out []Case
	for _, r := range Table {
		g := Published(r.MKN, chip.CubeCores)
		out = append(out, Case{Name: fmt.Sprintf("gemm_%d", r.MKN), Kind: "gemm", GEMM: &g, Units: gemmUnits,
			PublishedMs: r.Ms, PublishedBusy: []float64{r.CubeBusy, r.ExtractBusy, r.LoadBusy, r.StoreBusy}})
	}
	for _, r := range TopKTable {
		t := PublishedTopK(r.DType, r.Rows, r.ValidCol, r.Cols, r.K, chip.VectorCores)
		out = append(out, Case{Name: fmt.Sprintf("topk_%s_%d", r.DType, r.Rows), Kind: "topk", TopK: &t, Units: topkUnits,
			PublishedMs: r.Ms, PublishedBusy: []float64{r.VectorBusy, r.ScalarBusy, r.MTE2Busy, r.MTE3Busy}})
	}
	return out
}

// Simulate runs the case's kernel on chip, timing-only.
func (c Case) Simulate(chip *device.Chip) (*device.TaskStats, error) {
	opts := device.RunOptions{NoValues: true}
	var st *device.TaskStats
	var err error
	if c.GEMM != nil {
		st, _, err = Run(chip, *c.GEMM, nil, nil, opts)
	} else {
		st, _, _, err = RunTopK(chip, *c.TopK, nil, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("calib: %s: %w", c.Name, err)
	}
	return st, nil
}

// Extracts reports whether the case's kernel moves L1 -> L0 (MTE1), whose cost per
// row of fractals Chip.L1ToL0FractalRowCycles sets, and has a published extract busy.
func (c Case) Extracts() bool { return c.GEMM != nil && c.unit(isa.PipeMTE1) >= 0 }

// unit is the index of the case's unit on pipe p, -1 if none.
func (c Case) unit(p isa.Pipe) int {
	for u, unit := range c.Units {
		if unit.Pipe == p {
			return u
		}
	}
	return -1
}

// Sorts reports whether the case's kernel runs sort instructions (whose rate
// Chip.SortBytesPerCycle sets).
func (c Case) Sorts() bool {
	if c.TopK == nil {
		return false
	}
	src := c.TopK.source()
	return strings.Contains(src, "tsort32") || strings.Contains(src, "tmrgsort")
}
