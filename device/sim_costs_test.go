package device

import (
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

const vStartup = 8 // a2's PipeStartup[v]

func TestVectorCostFollowsTheValidRegion(t *testing.T) {
	// Whole rows are contiguous: 16 x 128 f32 = 8 KB = 32 repeats of 256 B. Eight
	// valid columns of each row take a repeat per row: 16.
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
	assert.Equal(t, []int64{vStartup + 32, vStartup + 16}, d)
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
	// tsort32: 15 passes over the 2 KB of pairs it writes, each at the sort rate.
	pass := int64((2048 + a2.SortBytesPerCycle - 1) / a2.SortBytesPerCycle)
	assert.Equal(t, []int64{vStartup + 15*pass}, durations(t, src, isa.TSORT32))
	// tmrgsort: 2 passes.
	assert.Equal(t, []int64{vStartup + 2*pass}, durations(t, src, isa.TMRGSORT))
	// tgather: 256 elements at GatherElemsPerCycle = 8.
	assert.Equal(t, []int64{vStartup + 32}, durations(t, src, isa.TGATHER))
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
