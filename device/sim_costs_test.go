package device

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/isa"
)

// The cost formulas of the instructions added with the full ISA (docs/device.md,
// "Timing model"), checked on the durations the trace records.

// durations runs src alone on the a2 and returns the pipe time of each executed
// instruction with opcode op, in order.
func durations(t *testing.T, src string, op isa.Opcode) []int64 {
	t.Helper()
	p := parse(t, src)
	chip := preset(t, "a2")
	m := compile(t, chip, p)
	l := layout(randParams(p, 1)...)
	st, err := RunTask(chip, l.gm, p.Core, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{Trace: true})
	require.NoError(t, err)
	var out []int64
	for _, e := range st.Trace {
		if e.Op == op {
			out = append(out, e.End-e.Start)
		}
	}
	require.NotEmpty(t, out, "%s did not run", op)
	return out
}

func TestVectorCostFollowsTheValidRegion(t *testing.T) {
	// Whole rows are contiguous: 16 x 128 f32 = 8 KB = 32 repeats of 256 B. Eight
	// valid columns of each row take a repeat per row: 16. An exponential takes the
	// special-function path's cycles a repeat, then the float result latency.
	a2 := preset(t, "a2")
	v, sfu, lat := int64(a2.PipeStartup[isa.PipeV]), int64(a2.VectorSFUCyclesPerRepeat), int64(a2.VectorFloatLatencyCycles)
	d := durations(t, `
kernel v vector
param %x: f32[2048]
tile %a: vec f32[16x128]
tile %b: vec f32[16x128] valid 16x8
  tload %a, %x[0; 16x128; 128,1]
  texp %a, %a
  texp %b, %a
end
`, isa.TEXP)
	assert.Equal(t, []int64{v + sfu*32 + lat, v + sfu*16 + lat}, d)
}

func TestSortGatherCosts(t *testing.T) {
	a2 := preset(t, "a2")
	src := `
kernel s vector
param %v: f32[256]
param %i: i32[256]
param %g: f32[512]
tile %tv: vec f32[4x64]
tile %ti: vec i32[4x64]
tile %to: vec f32[4x128]
tile %tg: vec f32[4x64]
  tload %tv, %v[0; 4x64; 64,1]
  tload %ti, %i[0; 4x64; 64,1]
  tsort32 %to, %tv, %ti
  tmrgsort %to, %to, 32
  tands %ti, %ti, 127
  tgather %tg, %to, %ti
  mgather %tg, %g[0; 4x128; 128,1], %ti
end
`
	// tsort32: 15 passes over the 2 KB of pairs it writes, each at the sort rate,
	// then the comparisons' result latency.
	v, lat := int64(a2.PipeStartup[isa.PipeV]), int64(a2.VectorFloatLatencyCycles)
	pass := int64((2048 + a2.SortBytesPerCycle - 1) / a2.SortBytesPerCycle)
	assert.Equal(t, []int64{v + 15*pass + lat}, durations(t, src, isa.TSORT32))
	// tmrgsort: 2 passes.
	assert.Equal(t, []int64{v + 2*pass + lat}, durations(t, src, isa.TMRGSORT))
	// tgather: 256 elements at GatherElemsPerCycle = 8, a move (no result latency).
	assert.Equal(t, []int64{v + 32}, durations(t, src, isa.TGATHER))
	// mgather: 256 elements, one 32-byte GM transfer each at 32 B/cycle, after the
	// MTE2 startup of 200.
	assert.Equal(t, []int64{200 + 256}, durations(t, src, isa.MGATHER))
}

func TestMatmulCostFollowsValidSizes(t *testing.T) {
	src := `
kernel mm cube
param %a: f16[4096]
param %b: f16[4096]
tile %ma: mat f16[64x64]
tile %mb: mat f16[64x64]
tile %la: left f16[64x64] valid 64x40
tile %rb: right f16[64x64]
tile %acc: acc f32[64x64] valid 20x64
  tload %ma, %a[0; 64x64; 64,1]
  tload %mb, %b[0; 64x64; 64,1]
  tmov %la, %ma
  tmov %rb, %mb
  tmatmul %acc, %la, %rb
  tgemv %acc, %la, %rb
end
`
	// tmatmul: m = 20 valid rows (2 fractal rows), k = 40 valid cols of a (3 fractal
	// steps), n = 64 (4): 2*3*4 = 24 cycles after the cube's startup of 8. tgemv
	// computes one row, still a whole fractal row: 1*3*4.
	assert.Equal(t, []int64{8 + 24}, durations(t, src, isa.TMATMUL))
	assert.Equal(t, []int64{8 + 12}, durations(t, src, isa.TGEMV))
}

func TestScalarUnitCosts(t *testing.T) {
	// Scalar arithmetic costs its issue slot; sld stalls issue for the GM latency;
	// treshape and tassign take no pipe time.
	src := `
kernel sc vector
param %n: i32[8]
reg %a
tile %t: vec f32[8x8]
tile %u: vec i32[8x8]
  tassign %t, 0
  sld %a, %n[0; 1x1; 1,1]
  sadd %a, %a, 1
  texpands %t, 1
  treshape %u, %t
end
`
	assert.Equal(t, []int64{4}, durations(t, src, isa.SADD))
	assert.Equal(t, []int64{4 + 200}, durations(t, src, isa.SLD))
	assert.Equal(t, []int64{4}, durations(t, src, isa.TASSIGN))
	assert.Equal(t, []int64{4}, durations(t, src, isa.TRESHAPE))
}

func TestQueueCosts(t *testing.T) {
	// A push from UB leaves at the UB -> GM rate after MTE3's startup; a pop reads
	// its slot, which the push left in L2, at the L2 hit latency and rate; a free
	// takes no time.
	src := `
kernel q vector
tile %v: vec f32[16x64]
  texpands %v, 1
  tpush 0, %v
  tpop %v, 0
  tfree 0
end
`
	assert.Equal(t, []int64{100 + 4096/64}, durations(t, src, isa.TPUSH))
	assert.Equal(t, []int64{200 + (4096+109)/110}, durations(t, src, isa.TPOP))
	assert.Equal(t, []int64{0}, durations(t, src, isa.TFREE))
}

// A column-major window (each column a contiguous run of GM) into UB moves by
// bursts, one per column of StridedBurstCycles and StridedSectorCycles per 32-byte
// sector, when that is slower than the port; into L1 the DMA converts the layout as
// it moves and pays the port's rate only, as a row-major window does.
func TestStridedWindowsIntoUBMoveByBursts(t *testing.T) {
	a2 := preset(t, "a2")
	walk := int64(a2.PageWalkCycles) // the first touch of the window's page
	const rows, cols = 64, 128       // f32: 32 KB, a column of 256 bytes
	bytes := int64(rows * cols * 4)
	miss := int64(a2.L2MissCycles) + walk
	port := ceilDiv(bytes, a2.L2ReadBytesPerCycle)
	contiguous := fmt.Sprintf(`
kernel c vector
param %%x: f32[%[1]d]
tile %%t: vec f32[%[2]dx%[3]d]
  tload %%t, %%x[0; %[2]dx%[3]d; %[3]d,1]
end
`, rows*cols, rows, cols)
	assert.Equal(t, []int64{miss + port}, durations(t, contiguous, isa.TLOAD))
	dn := fmt.Sprintf(`
kernel dn vector
param %%x: f32[%[1]d]
tile %%t: vec f32[%[2]dx%[3]d]
  tload %%t, %%x[0; %[2]dx%[3]d; 1,%[2]d]
end
`, rows*cols, rows, cols)
	bursts := int64(cols) * (int64(a2.StridedBurstCycles) + int64(rows*4/32)*int64(a2.StridedSectorCycles))
	require.Greater(t, bursts, port, "the bursts bind")
	assert.Equal(t, []int64{miss + bursts}, durations(t, dn, isa.TLOAD))
	toL1 := fmt.Sprintf(`
kernel dn cube
param %%x: f16[%[1]d]
tile %%t: mat f16[%[2]dx%[3]d]
  tload %%t, %%x[0; %[2]dx%[3]d; 1,%[2]d]
end
`, rows*cols, rows, cols)
	assert.Equal(t, []int64{miss + ceilDiv(bytes/2, a2.L2ReadBytesPerCycle)}, durations(t, toL1, isa.TLOAD))
}

// A vector instruction leaves the pipe after its repeats and delivers its result
// its latency later: an independent instruction starts as the pipe frees, one that
// reads the result waits for it.
func TestDependentVectorInstructionWaitsForTheResult(t *testing.T) {
	a2 := preset(t, "a2")
	starts := func(second string) []TraceEvent {
		src := `
kernel dep vector
param %x: f32[1024]
tile %a: vec f32[16x64]
tile %b: vec f32[16x64]
tile %c: vec f32[16x64]
  tload %a, %x[0; 16x64; 64,1]
  tadds %b, %a, 1
  ` + second + `
end
`
		p := parse(t, src)
		l := layout(randParams(p, 1)...)
		st, err := RunTask(a2, l.gm, isa.Vector, []Block{{Prog: compile(t, a2, p), ParamAddrs: l.addrs}}, RunOptions{Trace: true})
		require.NoError(t, err)
		adds := eventsOf(st, isa.TADDS)
		require.Len(t, adds, 2)
		return adds
	}
	// 16 rows of 256 bytes: 16 repeats, row by row.
	occupy := int64(a2.PipeStartup[isa.PipeV]) + 16
	lat := int64(a2.VectorScalarFormLatencyCycles)
	require.Positive(t, lat)
	ind := starts("tadds %c, %a, 2")
	assert.Equal(t, occupy+lat, ind[0].End-ind[0].Start, "an instruction's cycles are its occupancy and its result latency")
	assert.Equal(t, ind[0].Start+occupy, ind[1].Start, "an independent instruction overlaps the latency")
	dep := starts("tadds %c, %b, 2")
	assert.Equal(t, dep[0].End, dep[1].Start, "a dependent one waits for the result")
}

// A column reduction adds its rows in a chain of dependent steps, each one
// instruction over the whole row's repeats: the 256-byte chunks of a wide row ride in
// one step, so widening a 16-row tile from 64 columns to 512 adds a cycle a chunk to
// each of the 15 steps (and a tree pass a chunk), not a chain a chunk. Each step waits
// for its unit's result latency (float, integer).
func TestColumnReductionStepCoversTheWholeRow(t *testing.T) {
	a2 := preset(t, "a2")
	v, tree, issue := int64(a2.PipeStartup[isa.PipeV]), int64(a2.VectorReduceRepeatCycles), int64(a2.IssueCycles)
	for _, c := range []struct {
		op   isa.Opcode
		dt   string
		size int
		lat  int
	}{{isa.TCOLSUM, "f32", 4, a2.VectorFloatLatencyCycles}, {isa.TCOLMAX, "f16", 2, a2.VectorFloatLatencyCycles}, {isa.TCOLMIN, "i32", 4, a2.VectorIntLatencyCycles}} {
		require.Positive(t, c.lat)
		lat := int64(c.lat)
		for _, cols := range []int{64, 512} {
			d := durations(t, fmt.Sprintf(`
kernel c vector
param %%x: %[1]s[%[2]d]
tile %%a: vec %[1]s[16x%[3]d]
tile %%s: vec %[1]s[1x%[3]d]
  tload %%a, %%x[0; 16x%[3]d; %[3]d,1]
  %[4]s %%s, %%a
end
`, c.dt, 16*cols, cols, c.op), c.op)
			chunks := ceilDiv(int64(cols*c.size), a2.VectorBytesPerCycle)
			assert.Equal(t, []int64{v + chunks*tree + 15*(issue+v+lat+chunks) + lat}, d, "%s %s 16x%d", c.op, c.dt, cols)
		}
	}
}
