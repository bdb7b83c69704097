package device

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/isa"
)

// copyKernel copies rows x 128 f32 from x at element in to x at element out, in tiles
// of 64 rows, one tile in flight per block.
func copyKernel(rows, in, out int) string {
	src := fmt.Sprintf(`
kernel copy vector
param %%x: f32[%d]
tile %%t: vec f32[64x128]
`, 1<<21)
	for r := 0; r < rows; r += 64 {
		src += fmt.Sprintf("  tload %%t, %%x[%d; 64x128; 128,1]\n  tstore %%x[%d; 64x128; 128,1], %%t\n", in+r*128, out+r*128)
	}
	return src + "end\n"
}

// copyRows is the rows of 128 f32 the copies move (512 KB), in copyBlocks blocks.
const copyRows, copyBlocks = 1024, 4

// copyBlocksOf are the blocks of the copy of copyRows rows from element in to out.
func copyBlocksOf(t *testing.T, chip *Chip, in, out int) []Block {
	t.Helper()
	var bs []Block
	per := copyRows / copyBlocks
	for b := range copyBlocks {
		bs = append(bs, Block{Prog: compile(t, chip, parse(t, copyKernel(per, in+b*per*128, out+b*per*128))), ParamAddrs: []int{0}})
	}
	return bs
}

// runCopies runs the copy from in to out with opts and returns the stats.
func runCopies(t *testing.T, chip *Chip, gm []byte, in, out int, opts RunOptions) *TaskStats {
	t.Helper()
	st, err := RunTask(chip, gm, isa.Vector, copyBlocksOf(t, chip, in, out), opts)
	require.NoError(t, err)
	return st
}

func TestSharedL2KeepsAnIntermediateBetweenTasks(t *testing.T) {
	chip := preset(t, "a2")
	gm := make([]byte, 4<<21)
	const in, mid, out = 0, 1 << 18, 1 << 19 // elements: x, the intermediate, the result
	midBytes := [2]int{mid * 4, mid*4 + copyRows*128*4}
	cold := runCopies(t, chip, gm, mid, out, RunOptions{NoValues: true})

	l2 := NewSharedL2([][2]int{midBytes})
	first := runCopies(t, chip, gm, in, mid, RunOptions{NoValues: true, L2: l2})
	second := runCopies(t, chip, gm, mid, out, RunOptions{NoValues: true, L2: l2})
	dirty := l2.Close()

	// The intermediate's store stays in L2: no HBM bytes written.
	assert.Zero(t, first.HBMBytesWritten)
	assert.Equal(t, int64(copyRows*128*4), dirty, "the intermediate is written back after the run")
	// The second task reads it from L2 and writes its result through.
	assert.Zero(t, second.L2Misses)
	assert.Equal(t, int64(copyRows*128*4/chip.L2LineBytes), second.L2Hits)
	assert.Equal(t, int64(copyRows*128*4), second.HBMBytesWritten)
	assert.Less(t, second.KernelCycles, cold.KernelCycles, "hits are faster than a cold L2's misses")
	// A cold L2 writes its output through and misses its input.
	assert.Equal(t, int64(copyRows*128*4/chip.L2LineBytes), cold.L2Misses)
	assert.Equal(t, int64(copyRows*128*4), cold.HBMBytesWritten)
}

func TestSharedL2KeepsASingleTaskProgramsTime(t *testing.T) {
	// A task that writes no write-back range (a program's outputs) takes the same time
	// in a run's L2 as alone, and leaves nothing dirty.
	chip := preset(t, "a2")
	gm := make([]byte, 4<<21)
	alone := runCopies(t, chip, gm, 0, 1<<19, RunOptions{NoValues: true})
	l2 := NewSharedL2([][2]int{{1 << 20, 1 << 21}})
	shared := runCopies(t, chip, gm, 0, 1<<19, RunOptions{NoValues: true, L2: l2})
	assert.Zero(t, l2.Close())
	assert.Equal(t, alone.Cycles, shared.Cycles)
	assert.Equal(t, alone.PipeBusy, shared.PipeBusy)
	assert.Equal(t, alone.HBMBytesWritten, shared.HBMBytesWritten)
}

func TestEvictedDirtyLinesAreWrittenBack(t *testing.T) {
	// An L2 of 64 KB: the 256 KB intermediate cannot stay; its dirty lines are written
	// to HBM as later misses evict them, and the next task misses what left.
	chip := preset(t, "a2")
	chip.L2Bytes = 64 << 10
	gm := make([]byte, 4<<21)
	const in, mid, out = 0, 1 << 18, 1 << 19
	l2 := NewSharedL2([][2]int{{mid * 4, mid*4 + copyRows*128*4}})
	first := runCopies(t, chip, gm, in, mid, RunOptions{NoValues: true, L2: l2})
	second := runCopies(t, chip, gm, mid, out, RunOptions{NoValues: true, L2: l2})
	dirty := l2.Close()
	assert.Positive(t, first.HBMBytesWritten, "evicted while the task runs")
	assert.Positive(t, second.L2Misses)
	// Every byte of the intermediate reaches HBM once: evicted in a task or at the end.
	var evictedLater int64 = second.HBMBytesWritten - copyRows*128*4
	assert.Equal(t, int64(copyRows*128*4), first.HBMBytesWritten+evictedLater+dirty)
}

func TestTimingCacheReplaysASharedL2(t *testing.T) {
	// The third run of the same two tasks: the first task's times come from the cache,
	// and its lookups are replayed, so the second task finds the L2 as the loop left
	// it and takes its times from the cache too; a fourth run checks every hit against
	// a fresh loop (checkTimingCache).
	check := checkTimingCache
	checkTimingCache = false
	t.Cleanup(func() { checkTimingCache = check })
	timingCache.clear()
	chip := preset(t, "a2")
	gm := make([]byte, 4<<21)
	const in, mid, out = 0, 1 << 18, 1 << 19
	bs := [2][]Block{copyBlocksOf(t, chip, in, mid), copyBlocksOf(t, chip, mid, out)}
	require.False(t, smallTask(bs[0]), "a task the timing cache keeps")
	var firsts, seconds []*TaskStats
	for run := range 5 {
		// Run 3 times the second task afresh on the L2 the first one's record left;
		// run 4 checks every hit against a fresh loop.
		checkTimingCache = run == 4
		l2 := NewSharedL2([][2]int{{mid * 4, mid*4 + copyRows*128*4}})
		a, err := RunTask(chip, gm, isa.Vector, bs[0], RunOptions{L2: l2})
		require.NoError(t, err)
		b, err := RunTask(chip, gm, isa.Vector, bs[1], RunOptions{L2: l2, NoTimingCache: run == 3})
		require.NoError(t, err)
		l2.Close()
		firsts, seconds = append(firsts, a), append(seconds, b)
	}
	assert.True(t, firsts[2].TimingCached)
	assert.True(t, seconds[2].TimingCached, "the second task's key names what the first left")
	assert.True(t, firsts[3].TimingCached)
	assert.False(t, seconds[3].TimingCached)
	for k := 1; k < 5; k++ {
		assert.Equal(t, withoutFlag(firsts[0]), withoutFlag(firsts[k]), "run %d", k)
		assert.Equal(t, withoutFlag(seconds[0]), withoutFlag(seconds[k]), "run %d", k)
	}
	// The second task after another first task is another key: a cold L2 here.
	l2 := NewSharedL2([][2]int{{mid * 4, mid*4 + copyRows*128*4}})
	b, err := RunTask(chip, gm, isa.Vector, bs[1], RunOptions{L2: l2})
	require.NoError(t, err)
	l2.Close()
	assert.False(t, b.TimingCached)
	assert.Greater(t, b.L2Misses, seconds[0].L2Misses)
}
