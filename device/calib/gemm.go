// Package calib holds the kernels the device's timing model is calibrated against
// and the published measurements they are compared with (docs/sources.md).
package calib

import (
	"fmt"
	"strings"

	"pypto/isa"
)

// GEMM is the hand-tuned fp16 GEMM of the published measurements: C = A @ B with
// A m x k, B k x n and C m x n row-major fp16, fp32 accumulation in L0C. C is cut
// into BaseM x BaseN tiles, spread in 2-D over the cube cores (each core owns a
// rectangle of tiles); per tile, K advances StepK base blocks (BaseK deep) per L1
// load, L1 and L0 are double-buffered.
type GEMM struct {
	M, K, N             int
	BaseM, BaseN, BaseK int
	StepK               int
	Cores               int
}

// Published is the kernel of the gemm-table (docs/sources.md) on a part with cores cube cores.
func Published(mkn, cores int) GEMM {
	return GEMM{M: mkn, K: mkn, N: mkn, BaseM: 128, BaseN: 256, BaseK: 64, StepK: 4, Cores: cores}
}

// Grid is the split of C's tile grid over the cores: CoreRows x CoreCols cores,
// each owning RegionRows x RegionCols tiles.
type Grid struct {
	CoreRows, CoreCols     int
	RegionRows, RegionCols int
}

// Grid picks the 2-D split: core rows x core cols = Cores, dividing the tile grid
// evenly, with the squarest region (in elements). Among equally square regions the
// one with fewer core rows wins. Square regions minimise the A and B bytes a core
// touches, which is what a hand-tuned split does.
func (g GEMM) Grid() (Grid, error) {
	if err := g.check(); err != nil {
		return Grid{}, err
	}
	tm, tn := g.M/g.BaseM, g.N/g.BaseN
	best, bestDiff := Grid{}, -1
	for cr := 1; cr <= g.Cores; cr++ {
		if g.Cores%cr != 0 {
			continue
		}
		cc := g.Cores / cr
		if tm%cr != 0 || tn%cc != 0 {
			continue
		}
		rr, rc := tm/cr, tn/cc
		diff := abs(rr*g.BaseM - rc*g.BaseN)
		if bestDiff < 0 || diff < bestDiff {
			best, bestDiff = Grid{cr, cc, rr, rc}, diff
		}
	}
	if bestDiff < 0 {
		return Grid{}, fmt.Errorf("calib: the %dx%d tile grid of C does not split evenly over %d cores", tm, tn, g.Cores)
	}
	return best, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (g GEMM) check() error {
	if g.M <= 0 || g.K <= 0 || g.N <= 0 || g.BaseM <= 0 || g.BaseN <= 0 || g.BaseK <= 0 || g.StepK <= 0 || g.Cores <= 0 {
		return fmt.Errorf("calib: GEMM sizes must be positive: %+v", g)
	}
	stage := g.BaseK * g.StepK
	if g.M%g.BaseM != 0 || g.N%g.BaseN != 0 || g.K%(2*stage) != 0 {
		return fmt.Errorf("calib: the kernel needs m %% %d, n %% %d and k %% %d to be 0 (got %d, %d, %d)",
			g.BaseM, g.BaseN, 2*stage, g.M, g.N, g.K)
	}
	return nil
}

// Programs returns one cube program per core; core i's computes the tiles of region
// (i / CoreCols, i % CoreCols). Every program takes params a, b, c.
func (g GEMM) Programs() ([]*isa.Program, error) {
	grid, err := g.Grid()
	if err != nil {
		return nil, err
	}
	progs := make([]*isa.Program, 0, g.Cores)
	for i := range g.Cores {
		src := g.source(i, grid)
		p, err := isa.Parse(src)
		if err != nil {
			return nil, fmt.Errorf("calib: generated kernel does not parse: %w", err)
		}
		progs = append(progs, p)
	}
	return progs, nil
}

// source writes the program of core i. The K loop is unrolled by two L1 stages (ping
// and pong tiles) so that the backend's flags let the load of one stage overlap the
// extracts and matmuls of the other; inside a stage the base blocks alternate between
// two L0A / L0B tiles. The first stage pair of a tile is peeled off the loop because
// its first matmul starts the accumulator (tmatmul, not tmatmul.acc).
func (g GEMM) source(core int, grid Grid) string {
	var b strings.Builder
	w := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat("  ", indent))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	stage := g.BaseK * g.StepK
	row0 := core / grid.CoreCols * grid.RegionRows * g.BaseM
	col0 := core % grid.CoreCols * grid.RegionCols * g.BaseN
	w(0, "kernel gemm_core%d cube", core)
	w(0, "param %%a: f16[%d]", g.M*g.K)
	w(0, "param %%b: f16[%d]", g.K*g.N)
	w(0, "param %%c: f16[%d]", g.M*g.N)
	for _, r := range []string{"tr", "tc", "ks", "arow", "bcol", "aoff", "boff", "coff", "t"} {
		w(0, "reg %%%s", r)
	}
	for s := range 2 {
		w(0, "tile %%a1_%d: mat f16[%dx%d]", s, g.BaseM, stage)
		w(0, "tile %%b1_%d: mat f16[%dx%d]", s, stage, g.BaseN)
	}
	for s := range 2 {
		w(0, "tile %%a0_%d: left f16[%dx%d]", s, g.BaseM, g.BaseK)
		w(0, "tile %%b0_%d: right f16[%dx%d]", s, g.BaseK, g.BaseN)
	}
	w(0, "tile %%acc: acc f32[%dx%d]", g.BaseM, g.BaseN)

	// stageBody loads one L1 stage (A at %aoff, B at %boff) into copy s and runs its
	// StepK base blocks; first says the first block starts the accumulator.
	stageBody := func(ind, s int, first bool) {
		w(ind, "tload %%a1_%d, %%a[%%aoff; %dx%d; %d,1]", s, g.BaseM, stage, g.K)
		w(ind, "tload %%b1_%d, %%b[%%boff; %dx%d; %d,1]", s, stage, g.BaseN, g.N)
		for j := range g.StepK {
			l0 := j % 2
			w(ind, "textract %%a0_%d, %%a1_%d, 0, %d", l0, s, j*g.BaseK)
			w(ind, "textract %%b0_%d, %%b1_%d, %d, 0", l0, s, j*g.BaseK)
			op := "tmatmul.acc"
			if first && j == 0 {
				op = "tmatmul"
			}
			w(ind, "%s %%acc, %%a0_%d, %%b0_%d", op, l0, l0)
		}
	}
	// at sets %aoff and %boff to the stage whose K offset is %t + extra.
	at := func(ind int, kreg string, extra int) {
		w(ind, "sadd %%aoff, %%arow, %s", kreg)
		w(ind, "sadd %%aoff, %%aoff, %d", extra)
		w(ind, "smul %%boff, %s, %d", kreg, g.N)
		w(ind, "sadd %%boff, %%boff, %%bcol")
		w(ind, "sadd %%boff, %%boff, %d", extra*g.N)
	}
	w(1, "loop %%tr, %d", grid.RegionRows)
	w(2, "smul %%arow, %%tr, %d", g.BaseM*g.K)
	w(2, "sadd %%arow, %%arow, %d", row0*g.K)
	w(2, "loop %%tc, %d", grid.RegionCols)
	w(3, "smul %%bcol, %%tc, %d", g.BaseN)
	w(3, "sadd %%bcol, %%bcol, %d", col0)
	w(3, "smov %%t, 0")
	at(3, "%t", 0)
	stageBody(3, 0, true)
	at(3, "%t", stage)
	stageBody(3, 1, false)
	w(3, "loop %%ks, %d", g.K/(2*stage)-1)
	w(4, "smul %%t, %%ks, %d", 2*stage)
	at(4, "%t", 2*stage)
	stageBody(4, 0, false)
	at(4, "%t", 3*stage)
	stageBody(4, 1, false)
	w(3, "endloop")
	w(3, "smul %%coff, %%tr, %d", g.BaseM*g.N)
	w(3, "sadd %%coff, %%coff, %%bcol")
	w(3, "sadd %%coff, %%coff, %d", row0*g.N)
	w(3, "tstore %%c[%%coff; %dx%d; %d,1], %%acc", g.BaseM, g.BaseN, g.N)
	w(2, "endloop")
	w(1, "endloop")
	w(0, "end")
	return b.String()
}
