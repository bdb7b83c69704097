package device

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// loadTwice loads the same 64 x 128 f32 window (32 KB) twice, then another window.
func loadTwice(off int) string {
	return fmt.Sprintf(`
kernel l2 vector
param %%x: f32[262144]
tile %%t: vec f32[64x128]
tile %%u: vec f32[64x128]
  tload %%t, %%x[%[1]d; 64x128; 128,1]
  tload %%u, %%x[%[1]d; 64x128; 128,1]
  tload %%t, %%x[%[2]d; 64x128; 128,1]
end
`, off, off+8192)
}

// loadDurations runs the blocks and returns each block's TLOAD durations.
func loadDurations(t *testing.T, chip *Chip, blocks int) ([][]int64, *TaskStats) {
	t.Helper()
	gm := make([]byte, 262144*4)
	var bs []Block
	for i := range blocks {
		bs = append(bs, Block{Prog: compile(t, chip, parse(t, loadTwice(i*16384))), ParamAddrs: []int{0}})
	}
	st, err := RunTask(chip, gm, isa.Vector, bs, RunOptions{Trace: true, NoValues: true})
	require.NoError(t, err)
	out := make([][]int64, blocks)
	for _, e := range st.Trace {
		if e.Op == isa.TLOAD {
			out[e.Block] = append(out[e.Block], e.End-e.Start)
		}
	}
	return out, st
}

func TestL2HitsAreFasterThanMisses(t *testing.T) {
	chip := preset(t, "a2")
	d, st := loadDurations(t, chip, 1)
	const bytes = 64 * 128 * 4
	// The first load misses every line: alone on the chip it streams at the L2 port
	// rate (HBM's whole rate exceeds one core's port) after the miss latency.
	assert.Equal(t, int64(chip.L2MissCycles)+ceilDiv(bytes, chip.L2ReadBytesPerCycle), d[0][0])
	assert.Equal(t, int64(chip.L2HitCycles)+ceilDiv(bytes, chip.L2ReadBytesPerCycle), d[0][1])
	assert.Greater(t, d[0][0], d[0][1])
	assert.Equal(t, int64(bytes/chip.L2LineBytes), st.L2Hits)
	assert.Equal(t, int64(2*bytes/chip.L2LineBytes), st.L2Misses)
	assert.InDelta(t, 1.0/3, st.L2HitRate(), 1e-9)
}

func TestL2EvictsTheLeastRecentLine(t *testing.T) {
	chip := preset(t, "a2")
	chip.L2Bytes, chip.L2Ways = 32*1024, 64 // one fully associative set of 64 lines
	m := newMemSystem(chip, 1<<20)
	assert.False(t, m.touch(0))
	assert.False(t, m.touch(1))
	assert.True(t, m.touch(0))
	for l := 2; l < 64; l++ {
		m.touch(l) // 64 lines fill the 32 KB L2 exactly
	}
	assert.True(t, m.touch(1), "64 distinct lines fit")
	assert.False(t, m.touch(64), "the 65th line evicts line 0, the least recent")
	assert.False(t, m.touch(0))
}

func TestL2StartsEmptyForEveryTask(t *testing.T) {
	// The tags of a finished task are reused by the next one: they must come back
	// empty, and a task's hits must not depend on what ran before it.
	chip := preset(t, "a2")
	for range 3 {
		m := newMemSystem(chip, 1<<20)
		for l := range 200 {
			assert.False(t, m.touch(l), "line %d in a new task's L2", l)
		}
		assert.True(t, m.touch(7))
		m.release()
	}
	_, first := loadDurations(t, chip, 2)
	_, again := loadDurations(t, chip, 2)
	assert.Equal(t, first.L2Hits, again.L2Hits)
	assert.Equal(t, first.L2Misses, again.L2Misses)
	assert.Equal(t, first.Cycles, again.Cycles)
}

func TestL2SetsConflict(t *testing.T) {
	chip := preset(t, "a2")
	chip.L2Bytes, chip.L2Ways = 32*1024, 2 // 32 sets of 2 ways
	m := newMemSystem(chip, 1<<20)
	// Three lines of one set (the index is hashed): the third evicts the first.
	var same []int
	other := -1
	for l := 0; len(same) < 3 || other < 0; l++ {
		switch {
		case m.setOf(l) == m.setOf(0):
			if len(same) < 3 {
				same = append(same, l)
			}
		case other < 0:
			other = l
		}
	}
	for _, l := range same {
		assert.False(t, m.touch(l))
	}
	assert.False(t, m.touch(same[0]))
	assert.True(t, m.touch(same[2]))
	assert.False(t, m.touch(other), "other sets are untouched")
	sets := map[int]bool{}
	for l := range 1024 {
		sets[m.setOf(l)] = true
	}
	assert.Len(t, sets, 32, "consecutive lines spread over every set")
}

func TestHBMIsSharedByTheCoresThatMiss(t *testing.T) {
	chip := preset(t, "a2")
	chip.HBMBytesPerCycle = 64 // below one core's port: two missing cores halve it
	alone, _ := loadDurations(t, chip, 1)
	both, _ := loadDurations(t, chip, 2)
	const bytes = 64 * 128 * 4
	assert.Equal(t, int64(chip.L2MissCycles)+ceilDiv(bytes, 64), alone[0][0])
	// Core 1 starts its first load while core 0's is in flight: it gets half.
	assert.Equal(t, int64(chip.L2MissCycles)+ceilDiv(bytes, 32), both[1][0])
	assert.Greater(t, both[1][0], alone[0][0])
}

func TestSharedMemoryRunIsDeterministic(t *testing.T) {
	chip := preset(t, "a2")
	prev := runtime.GOMAXPROCS(1)
	d1, st1 := loadDurations(t, chip, 8)
	runtime.GOMAXPROCS(4)
	d4, st4 := loadDurations(t, chip, 8)
	runtime.GOMAXPROCS(prev)
	assert.Equal(t, d1, d4)
	assert.Equal(t, st1.Cycles, st4.Cycles)
	assert.Equal(t, st1.Trace, st4.Trace)
}

func TestChipWithoutL2KeepsPerCoreRates(t *testing.T) {
	chip := preset(t, "tiny")
	require.Zero(t, chip.L2Bytes)
	m := compile(t, chip, parse(t, `
kernel one vector
param %x: f32[1024]
tile %t: vec f32[8x128]
  tload %t, %x[0; 8x128; 128,1]
end
`))
	st, err := RunTask(chip, make([]byte, 4096), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0}}}, RunOptions{Trace: true})
	require.NoError(t, err)
	assert.Equal(t, int64(chip.PipeStartup[isa.PipeMTE2])+4096/int64(chip.GMReadBytesPerCycle), st.Trace[0].End-st.Trace[0].Start)
	assert.Zero(t, st.L2HitRate())
}

func TestValuesApartOnlyWithoutValueDependentControl(t *testing.T) {
	chip := preset(t, "a2")
	plain := compile(t, chip, parse(t, loadTwice(0)))
	sld := compile(t, chip, parse(t, `
kernel dyn vector
param %n: i32[1]
reg %r
  sld %r, %n[0; 1x1; 1,1]
end
`))
	assert.True(t, valuesApart([]Block{{Prog: plain}}))
	assert.False(t, valuesApart([]Block{{Prog: plain}, {Prog: sld}}))
}

// With an L2 the values of a timed run come from a functional run beside the timing
// loop: the bytes equal a chip without L2 (whose run computes them in the timing
// loop), and a race is still reported.
func TestTimedRunWithL2ComputesTheSameValues(t *testing.T) {
	s := gemmSpec{M: 256, N: 256, K: 128, TM: 128, TN: 128, TK: 64, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	rng := rand.New(rand.NewPCG(11, 12))
	a := randValues(rng, s.In, s.M*s.K, 1)
	b := randValues(rng, s.In, s.K*s.N, 1)
	withL2, st := s.run(t, preset(t, "a2"), a, b, RunOptions{})
	plain := preset(t, "a2")
	plain.L2Bytes = 0
	without, _ := s.run(t, plain, a, b, RunOptions{})
	assert.Equal(t, without, withL2)
	assert.Equal(t, s.refMirror(a, b), dtype.Decode(s.Out, withL2, s.M*s.N))
	assert.Positive(t, st.L2Hits+st.L2Misses)
}

// The timing loop of a chip with an L2 still reports a missing flag, while the
// values run beside it.
func TestRaceReportedWithL2(t *testing.T) {
	chip := preset(t, "a2")
	m := compile(t, chip, loadReluStore())
	dropFlags(m, isa.PipeMTE2, isa.PipeV)
	_, err := RunTask(chip, make([]byte, 512), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0, 256}}}, RunOptions{})
	require.ErrorContains(t, err, "race")
	require.ErrorContains(t, err, "set_flag mte2, v")
}

// A transposed window (rows adjacent, columns strided) moves the bytes it holds: it
// costs what the same elements cost read as rows, not the span of the gaps between them.
func TestTransposedWindowMovesItsOwnBytes(t *testing.T) {
	chip, err := Preset("a2")
	require.NoError(t, err)
	count := func(v isa.GMView) (lines, bytes int) {
		m := newMemSystem(chip, 1<<22)
		m.window(0, Operand{Kind: isa.KindGM, DType: dtype.Float16, GM: v}, func(_, n int) { lines++; bytes += n })
		return
	}
	rowsL, rowsB := count(isa.GMView{Rows: 64, Cols: 128, RowStride: 1024, ColStride: 1})
	colsL, colsB := count(isa.GMView{Rows: 128, Cols: 64, RowStride: 1, ColStride: 1024})
	require.Equal(t, rowsB, colsB)
	require.Equal(t, rowsL, colsL)
	_, elemB := count(isa.GMView{Rows: 8, Cols: 8, RowStride: 2048, ColStride: 1024})
	require.Equal(t, 64*2, elemB, "neither axis contiguous: element by element")
	_, bcastB := count(isa.GMView{Rows: 8, Cols: 16, RowStride: 0, ColStride: 1})
	require.Equal(t, 8*16*2, bcastB, "a broadcast row is read once per row")
}
