package device

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

func parse(t testing.TB, src string) *isa.Program {
	t.Helper()
	p, err := isa.Parse(src)
	require.NoError(t, err)
	return p
}

// randParams fills every param with values representable in its dtype.
func randParams(p *isa.Program, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([][]byte, len(p.Params))
	for i, prm := range p.Params {
		out[i] = dtype.Encode(prm.DType, randValues(rng, prm.DType, prm.Elems, 4))
	}
	return out
}

// A loop over row blocks: each iteration loads a block, computes on it and stores
// it. Iteration k+1's load overwrites the tile iteration k's relu reads (V -> MTE2)
// and its relu overwrites the tile iteration k's store reads (MTE3 -> V): both are
// loop-carried hazards.
const reluLoop = `
kernel relu_loop vector
param %x: f32[2048]
param %y: f32[2048]
reg %i
reg %off
tile %a: vec f32[8x32]
tile %b: vec f32[8x32]
  loop %i, 8
    smul %off, %i, 256
    tload %a, %x[%off; 8x32; 32,1]
    trelu %b, %a
    tstore %y[%off; 8x32; 32,1], %b
  endloop
end
`

func TestLoopCarriedSyncsArePrimedAndDrained(t *testing.T) {
	p := parse(t, reluLoop)
	m := compile(t, preset(t, "tiny"), p)
	ops := listingOps(m)
	loop := indexOf(ops, "s loop")
	end := indexOf(ops, "s endloop")
	require.Positive(t, loop)
	// Before the loop: one priming set per carried pair, no barrier (the loop runs a
	// constant number of times, at least once).
	assert.ElementsMatch(t, []string{"v set_flag", "mte3 set_flag"}, ops[loop-2:loop])
	assert.NotContains(t, ops, "s tsync")
	// After it: the draining waits.
	assert.ElementsMatch(t, []string{"mte2 wait_flag", "v wait_flag"}, ops[end+1:end+3])
	assert.Len(t, ops, end+3)
	// In the body, each carried wait comes right before its consumer.
	body := strings.Join(ops[loop:end], " | ")
	assert.Contains(t, body, "mte2 wait_flag | mte2 tload")
	assert.Contains(t, body, "v wait_flag | v trelu")

	params := randParams(p, 1)
	want := runReference(t, p, params)
	got, _ := runDevice(t, preset(t, "tiny"), p, params)
	compareOutputs(t, p, want, got)
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func TestLoopCarriedSyncIsNeeded(t *testing.T) {
	// Without the V -> MTE2 carried flag the second iteration's load overwrites what
	// the first iteration's relu may still read: the race checker says so.
	p := parse(t, reluLoop)
	m := compile(t, preset(t, "tiny"), p)
	dropFlags(m, isa.PipeV, isa.PipeMTE2)
	l := layout(randParams(p, 2)...)
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race")
	assert.Contains(t, err.Error(), "tload")
}

func TestLoopZeroTripsAndNesting(t *testing.T) {
	// A zero-trip loop still balances its primed and drained flags; nested loops
	// accumulate into one tile across the inner loop's iterations.
	src := `
kernel nest vector
param %x: f32[1024]
param %y: f32[256]
param %n: i32[1]
reg %i
reg %j
reg %zero
reg %off
tile %acc: vec f32[8x32]
tile %t: vec f32[8x32]
  sld %zero, %n[0; 1x1; 1,1]
  texpands %acc, 0
  loop %i, %zero
    tload %t, %x[0; 8x32; 32,1]
    tadd %acc, %acc, %t
  endloop
  loop %i, 2
    loop %j, 2
      smul %off, %i, 2
      sadd %off, %off, %j
      smul %off, %off, 256
      tload %t, %x[%off; 8x32; 32,1]
      tadd %acc, %acc, %t
    endloop
    tmuls %acc, %acc, 0.5
  endloop
  tstore %y[0; 8x32; 32,1], %acc
end
`
	p := parse(t, src)
	params := randParams(p, 3)
	params[2] = dtype.Encode(dtype.Int32, []float64{0})
	want := runReference(t, p, params)
	got, st := runDevice(t, preset(t, "tiny"), p, params)
	compareOutputs(t, p, want, got)
	assert.Positive(t, st.Instructions)
}

// A double-buffered loop: two tiles per iteration, so the next iteration's first
// load only waits for this iteration's first relu, and MTE2 overlaps V. The same
// kernel with a barrier at every iteration (what the flag inserter falls back to)
// is slower.
const doubleBuffered = `
kernel db vector
param %x: f32[16384]
param %y: f32[16384]
reg %i
reg %off
tile %a0: vec f32[16x64]
tile %a1: vec f32[16x64]
tile %b0: vec f32[16x64]
tile %b1: vec f32[16x64]
  loop %i, 8
    smul %off, %i, 2048
    tload %a0, %x[%off; 16x64; 64,1]
    texp %b0, %a0
    tstore %y[%off; 16x64; 64,1], %b0
    tload %a1, %x[%off+1024; 16x64; 64,1]
    texp %b1, %a1
    tstore %y[%off+1024; 16x64; 64,1], %b1
  endloop
end
`

func TestLoopCarriedSyncsOverlapIterations(t *testing.T) {
	p := parse(t, doubleBuffered)
	chip := preset(t, "a2")
	params := randParams(p, 4)
	want := runReference(t, p, params)
	got, st := runDevice(t, chip, p, params)
	compareOutputs(t, p, want, got)

	m := compile(t, chip, p)
	m.Instrs = withIterationBarrier(m)
	l := layout(params...)
	slow, err := RunTask(chip, l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	assert.Less(t, st.Cycles, slow.Cycles, "carried syncs let iterations overlap; a barrier per iteration does not")
}

// withIterationBarrier is the fallback form of a compiled one-loop program: its
// carried flags (primes, drains and the ones in the body) replaced by a barrier at
// the start of every iteration.
func withIterationBarrier(m *MachineProgram) []Instr {
	var out []Instr
	loop := -1
	for pc, in := range m.Instrs {
		if in.Op == isa.LOOP {
			loop = pc
		}
	}
	carried := map[flagKey]bool{}
	for _, in := range m.Instrs[:loop] {
		if in.Op == isa.SET_FLAG {
			carried[flagKeyOf(&in)] = true
		}
	}
	for pc, in := range m.Instrs {
		if (in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG) && carried[flagKeyOf(&in)] {
			continue
		}
		out = append(out, in)
		if pc == loop {
			out = append(out, barrierInstr())
		}
	}
	tmp := &MachineProgram{Instrs: out}
	rematch(tmp)
	return tmp.Instrs
}

func TestLoopFallsBackToBarrierWhenIDsRunOut(t *testing.T) {
	// With one event id per pipe pair the carried syncs and the per-iteration ones
	// cannot both have one: the loop gets a barrier per iteration and stays correct.
	chip := preset(t, "tiny")
	chip.FlagEventIDs = 1
	p := parse(t, doubleBuffered)
	params := randParams(p, 5)
	want := runReference(t, p, params)
	m := compile(t, chip, p)
	ops := listingOps(m)
	loop := indexOf(ops, "s loop")
	assert.Equal(t, "s tsync", ops[loop+1], "barrier at the start of every iteration:\n%s", m)
	l := layout(params...)
	_, err := RunTask(chip, l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	got := make([][]byte, len(params))
	for i := range params {
		got[i] = l.bytes(i, len(params[i]))
	}
	compareOutputs(t, p, want, got)
}

// longLoop accumulates one GM row into a tile n times: a small body with a long trip
// count, whose instructions the simulator must not keep.
const longLoop = `
kernel long vector
param %x: f32[64]
param %y: f32[64]
param %n: i32[1]
reg %i
reg %count
tile %t: vec f32[1x64]
tile %acc: vec f32[1x64]
  sld %count, %n[0; 1x1; 1,1]
  texpands %acc, 0
  loop %i, %count
    tload %t, %x[0; 1x64; 64,1]
    tadd %acc, %acc, %t
  endloop
  tstore %y[0; 1x64; 64,1], %acc
end
`

func TestLongLoopRunsInBoundedMemory(t *testing.T) {
	p := parse(t, longLoop)
	chip := preset(t, "tiny")
	m := compile(t, chip, p)
	x := make([]float64, 64)
	for i := range x {
		x[i] = float64(i)
	}
	const n = 100000
	l := layout(dtype.Encode(dtype.Float32, x), make([]byte, 256), dtype.Encode(dtype.Int32, []float64{n}))
	st, err := RunTask(chip, l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	y := dtype.Decode(dtype.Float32, l.bytes(1, 256), 64)
	assert.Equal(t, float64(n*5), y[5])
	assert.Greater(t, st.Instructions, int64(4*n))

	// Step the block by hand: what the simulator keeps (issued instructions and pipe
	// queues) stays at what is in flight, not the 400k executed, and the race history
	// within its bound.
	c := newCoreSim(chip, isa.Vector, 0, l.gm, RunOptions{})
	c.bufs[isa.Vec] = make([]byte, chip.Capacity(isa.Vec))
	r := newBlockRun(c, 0, &Block{Prog: m, ParamAddrs: l.addrs}, newQueueSet())
	for !r.finished() {
		if err := r.issueAhead(); err != nil {
			require.NoError(t, err)
		}
		if r.finished() {
			break
		}
		di, start, ok := r.next()
		require.True(t, ok)
		if err := r.start(di, start); err != nil {
			require.NoError(t, err)
		}
		if r.done%1000 != 0 {
			continue
		}
		kept, hist := len(r.dyn), 0
		for q := range r.queues {
			kept += len(r.queues[q])
			hist = max(hist, len(r.races.hist[q]))
		}
		require.Less(t, kept, 10000, "after %d instructions", r.issued)
		require.LessOrEqual(t, hist, maxHistory+1024)
	}
	assert.Greater(t, r.issued, 2*n)

	_, err = RunTask(chip, l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{MaxInstructions: 1000})
	assert.ErrorContains(t, err, "kernel long exceeds its budget of 1000 executed instructions in the loop at pc 4")
}

func TestRegisterMovedViewsAreOrdered(t *testing.T) {
	// Each iteration stores row i of y and loads it back through a view whose static
	// offset differs from the store's: only the registers make them the same row, so
	// the backend must treat both as touching all of y.
	src := `
kernel rw vector
param %x: f32[512]
param %y: f32[512]
param %z: f32[512]
reg %i
reg %a
reg %b
tile %t: vec f32[1x64]
tile %u: vec f32[1x64]
  loop %i, 8
    smul %a, %i, 64
    ssub %b, %a, 64
    tload %t, %x[%a; 1x64; 64,1]
    tstore %y[%a; 1x64; 64,1], %t
    tload %u, %y[%b+64; 1x64; 64,1]
    tadds %u, %u, 1
    tstore %z[%a; 1x64; 64,1], %u
  endloop
end
`
	p := parse(t, src)
	m := compile(t, preset(t, "tiny"), p)
	assert.Positive(t, countFlags(m)["mte3->mte2"], "%s", m)
	params := randParams(p, 6)
	want := runReference(t, p, params)
	got, _ := runDevice(t, preset(t, "tiny"), p, params)
	compareOutputs(t, p, want, got)

	dropFlags(m, isa.PipeMTE3, isa.PipeMTE2)
	l := layout(params...)
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	assert.ErrorContains(t, err, "race")
}

// Before the loop two syncs V -> MTE2 overlap (the first tmuls must finish before the
// reload of a, the second before the reload of b) and a third follows them; the
// loop's carried sync of the same pair (the next iteration's load into c after this
// one's read of it) has no producer ahead of the loop, so its priming set goes to the
// start of the program and its interval spans everything before the loop. Its id
// must differ from the second sync's, whose interval it covers, although the third
// sync took the first id back: with the same id the second sync's wait would consume
// the priming set and order nothing (a race between the second tmuls and the reload
// of b).
const primedOverOverlappingSyncs = `
kernel primed vector
param %x: f32[1024]
param %y: f32[1024]
reg %i
reg %off
tile %a: vec f32[8x32]
tile %b: vec f32[8x32]
tile %c: vec f32[8x32]
tile %d: vec f32[8x32]
tile %e: vec f32[8x32]
  tload %a, %x[0; 8x32; 32,1]
  tload %b, %x[256; 8x32; 32,1]
  tmuls %d, %a, 2
  tmuls %e, %b, 2
  tload %a, %x[512; 8x32; 32,1]
  tload %b, %x[768; 8x32; 32,1]
  tadd %d, %a, %b
  tload %a, %x[0; 8x32; 32,1]
  tadd %e, %a, %d
  tstore %y[0; 8x32; 32,1], %e
  loop %i, 3
    smul %off, %i, 256
    tload %c, %x[%off; 8x32; 32,1]
    tmuls %d, %c, 3
    tstore %y[%off; 8x32; 32,1], %d
  endloop
end
`

func TestPrimingSetGetsAnIDNoOverlappingSyncHolds(t *testing.T) {
	m := compile(t, preset(t, "tiny"), parse(t, primedOverOverlappingSyncs))
	require.NoError(t, runOne(t, m, make([]byte, 8192), []int{0, 4096}))
	// Before the loop every (pair, id) alternates set, wait in program order.
	open := map[flagKey]int{}
	for pc, in := range m.Instrs {
		if in.Op == isa.LOOP {
			break
		}
		switch in.Op {
		case isa.SET_FLAG:
			open[flagKeyOf(&in)]++
		case isa.WAIT_FLAG:
			k := flagKeyOf(&in)
			require.Positive(t, open[k], "pc %d: a wait with no set of its own open", pc)
			open[k]--
		}
		for k, n := range open {
			require.LessOrEqual(t, n, 1, "pc %d: two sets of %v open at once: a wait would take the wrong one", pc, k)
		}
	}
}
