package device

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/isa"
)

// No task moves more bytes per cycle than the chip's memory system carries: the HBM
// (its fills and write-through, HBMBytesPerCycle), the L2 (every GM byte the pipes
// move, L2TotalBytesPerCycle) and each core's ports (L2ReadBytesPerCycle,
// L2WriteBytesPerCycle). The sweep covers whole-line and half-line rows (a row
// shorter than a line: two rows share the fill of one line, which once counted
// only half of it against the HBM), transposed and element-wise windows, a small
// L2 that evicts, prefetch, balanced blocks, a GEMM and a mixed task.
func TestNoTaskExceedsTheMemoryPeaks(t *testing.T) {
	type run struct {
		name string
		st   *TaskStats
		chip *Chip
	}
	var runs []run
	for _, k := range timingReferenceKernels(t) {
		st, err := RunTask(k.chip, k.gm, k.kind, k.blocks, k.opts)
		require.NoError(t, err, k.name)
		runs = append(runs, run{k.name, st, k.chip})
	}
	a2 := preset(t, "a2")
	for _, cols := range []int{64, 128, 256, 384} { // f16 rows of 128, 256, 512, 768 bytes
		st, err := RunTask(a2, make([]byte, 3*2*48*8*64*cols), isa.Vector, streamingAdd(t, a2, cols), RunOptions{NoValues: true})
		require.NoError(t, err)
		runs = append(runs, run{fmt.Sprintf("add_f16_%dcols", cols), st, a2})
	}
	gm, gs := loadingGroups(t, a2)
	st, err := RunGroupTask(a2, gm, gs, RunOptions{NoValues: true})
	require.NoError(t, err)
	runs = append(runs, run{"mixed", st, a2})
	for _, r := range runs {
		k := float64(r.st.KernelCycles)
		hbm := float64(r.st.HBMBytesRead + r.st.HBMBytesWritten)
		assert.Positive(t, hbm, r.name)
		assert.LessOrEqual(t, hbm/k, float64(r.chip.HBMBytesPerCycle), "%s: HBM bytes per kernel cycle above the chip's HBM rate", r.name)
		assert.GreaterOrEqual(t, r.st.HBMBytesRead, r.st.L2Misses*int64(r.chip.L2LineBytes), "%s: every missed line is filled whole", r.name)
		l2 := float64(r.st.GMBytesRead + r.st.GMBytesWritten)
		assert.LessOrEqual(t, l2/k, float64(r.chip.L2TotalBytesPerCycle), "%s: GM bytes per kernel cycle above the L2's rate", r.name)
		ports := float64(r.chip.L2ReadBytesPerCycle + r.chip.L2WriteBytesPerCycle)
		assert.LessOrEqual(t, l2/k, ports*float64(r.st.ActiveCores*coresPerUnit(r.st)), "%s: GM bytes above the active cores' ports", r.name)
	}
}

// coresPerUnit is how many cores with ports of their own an active unit of the task
// has: an AI core of a mixed task has a cube core and its vector cores.
func coresPerUnit(st *TaskStats) int {
	if st.Mixed {
		return 3
	}
	return 1
}

// streamingAdd is c = a + b in f16 over 48 vector cores, each adding 8 tiles of 64 x
// cols from its own slice of the three arrays.
func streamingAdd(t *testing.T, chip *Chip, cols int) []Block {
	const cores, tiles, rows = 48, 8, 64
	n := cores * tiles * rows * cols
	slice := tiles * rows * cols // one core's elements of each array
	m := compile(t, chip, parse(t, fmt.Sprintf(`kernel add vector
param %%a: f16[%[1]d]
param %%b: f16[%[1]d]
param %%c: f16[%[1]d]
reg %%i
reg %%off
tile %%x: vec f16[%[2]dx%[3]d]
tile %%y: vec f16[%[2]dx%[3]d]
tile %%z: vec f16[%[2]dx%[3]d]
  loop %%i, %[4]d
    smul %%off, %%i, %[5]d
    tload %%x, %%a[%%off; %[2]dx%[3]d; %[3]d,1]
    tload %%y, %%b[%%off; %[2]dx%[3]d; %[3]d,1]
    tadd %%z, %%x, %%y
    tstore %%c[%%off; %[2]dx%[3]d; %[3]d,1], %%z
  endloop
end
`, slice, rows, cols, tiles, rows*cols)))
	blocks := make([]Block, cores)
	for b := range blocks {
		blocks[b] = Block{Prog: m, ParamAddrs: []int{2 * b * slice, 2 * (n + b*slice), 2 * (2*n + b*slice)}}
	}
	return blocks
}
