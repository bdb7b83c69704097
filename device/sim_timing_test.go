package device

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

func runChain(t *testing.T, chip *Chip, opts RunOptions) *TaskStats {
	t.Helper()
	m := compile(t, chip, chainProgram())
	l := layout(make([]byte, 2048), make([]byte, 2048), make([]byte, 4096))
	st, err := RunTask(chip, l.gm, isa.Cube, []Block{{Prog: m, ParamAddrs: l.addrs}}, opts)
	require.NoError(t, err)
	return st
}

func TestTimingPerInstructionCosts(t *testing.T) {
	chip := preset(t, "tiny")
	st := runChain(t, chip, RunOptions{})
	s := chip.PipeStartup
	// Two loads of 32x32 fp16 (2 KB each) at 32 B/cycle.
	assert.Equal(t, int64(2*(s[isa.PipeMTE2]+2048/32)), st.PipeBusy[isa.PipeMTE2])
	// L1 -> L0A at 512 B/cycle and L1 -> L0B at 256 B/cycle.
	assert.Equal(t, int64(s[isa.PipeMTE1]+2048/512+s[isa.PipeMTE1]+2048/256), st.PipeBusy[isa.PipeMTE1])
	// 32x32x32 is 2x2x2 cube blocks of 16x16x16.
	assert.Equal(t, int64(s[isa.PipeM]+8), st.PipeBusy[isa.PipeM])
	// 32x32 fp32 out of L0C at 128 B/cycle.
	assert.Equal(t, int64(s[isa.PipeFIX]+4096/128), st.PipeBusy[isa.PipeFIX])
	assert.Equal(t, int64(2*2048), st.GMBytesRead)
	assert.Equal(t, int64(4096), st.GMBytesWritten)
	assert.Equal(t, int64(14), st.Instructions) // 6 + 4 flag pairs
}

func TestTimingCriticalPath(t *testing.T) {
	// The chain is a dependency chain, so the core's time is at least the sum of the
	// stage times on it; flags add their latency per hop.
	chip := preset(t, "tiny")
	st := runChain(t, chip, RunOptions{})
	core := st.CoreCycles[0]
	lower := st.PipeBusy[isa.PipeM] + st.PipeBusy[isa.PipeFIX] + int64(3*chip.FlagLatencyCycles)
	assert.Greater(t, core, lower)
	// The core's time holds its block's prologue and epilogue; the task adds dispatch,
	// core start and the final sync around it.
	assert.Equal(t, int64(chip.DispatchCycles+chip.CoreStartCycles+chip.FinalSyncCycles)+core, st.Cycles)
	assert.Equal(t, core-int64(chip.PrologueCycles+chip.EpilogueCycles), st.KernelCycles)
	assert.Equal(t, st.StartCycles+st.KernelCycles+st.EndCycles, st.Cycles)
	assert.Equal(t, 1, st.ActiveCores)

	// Doubling the flag latency makes it slower by exactly the hops on the critical
	// path: mte2->mte1, mte1->m, m->fix.
	slow := preset(t, "tiny")
	slow.FlagLatencyCycles *= 2
	assert.Equal(t, st.Cycles+int64(3*chip.FlagLatencyCycles), runChain(t, slow, RunOptions{}).Cycles)
}

func TestTimingBiggerMatmulTakesLonger(t *testing.T) {
	chip := preset(t, "a2")
	rng := rand.New(rand.NewPCG(1, 1))
	var prev int64
	for _, n := range []int{32, 64, 128} {
		s := gemmSpec{M: n, N: n, K: n, TM: n, TN: n, TK: n, In: dtype.Float16, Out: dtype.Float16}
		_, st := s.run(t, chip, randValues(rng, dtype.Float16, n*n, 1), randValues(rng, dtype.Float16, n*n, 1), RunOptions{})
		assert.Greater(t, st.Cycles, prev, "n=%d", n)
		prev = st.Cycles
		r := st.BusyRatio(isa.PipeM)
		assert.Greater(t, r, 0.0)
		assert.LessOrEqual(t, r, 1.0)
		want := int64(chip.PipeStartup[isa.PipeM]) + int64((n/16)*(n/16)*(n/16))
		assert.Equal(t, want, st.PipeBusy[isa.PipeM], "n=%d", n)
	}
}

func TestTimingInt8ConsumesDoubleK(t *testing.T) {
	chip := preset(t, "tiny")
	s := gemmSpec{M: 32, N: 32, K: 64, TM: 32, TN: 32, TK: 64, In: dtype.Int8, Out: dtype.Int32}
	_, st := s.run(t, chip, make([]float64, 32*64), make([]float64, 64*32), RunOptions{})
	assert.Equal(t, int64(chip.PipeStartup[isa.PipeM]+2*2*2), st.PipeBusy[isa.PipeM], "K=64 is two 32-deep int8 steps")
}

func TestTimingPingPongOverlapsMovesWithCompute(t *testing.T) {
	// With the published 32 B/cycle GM feed a GEMM step is load-bound whatever the
	// buffering (MTE2 never idles). Give the chip a fast GM so MTE1 and the cube
	// matter: with one set of L0 tiles, the next step's moves must wait for this step's
	// multiply; with two they overlap it.
	chip := preset(t, "tiny")
	chip.GMReadBytesPerCycle = 1024
	chip.PipeStartup[isa.PipeMTE2] = 16
	rng := rand.New(rand.NewPCG(2, 2))
	s := gemmSpec{M: 32, N: 32, K: 256, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float32}
	a := randValues(rng, dtype.Float16, s.M*s.K, 1)
	b := randValues(rng, dtype.Float16, s.K*s.N, 1)
	_, single := s.run(t, chip, a, b, RunOptions{})
	s.PingPong = true
	_, double := s.run(t, chip, a, b, RunOptions{})
	assert.Less(t, double.Cycles, single.Cycles, "two buffers overlap moves with the multiply")
	// With overlap, the core is busier than its pipes' sum would allow if serial.
	var sum int64
	for _, b := range double.PipeBusy {
		sum += b
	}
	assert.Less(t, double.KernelCycles, sum)
}

func TestTimingIssueBoundsShortInstructions(t *testing.T) {
	// 64 tiny vector ops on one pipe: each costs startup + 1, issue is 4 per op.
	chip := preset(t, "tiny")
	chip.PipeStartup[isa.PipeV] = 0
	b := newProg("short", isa.Vector)
	v := b.tile("v", isa.Vec, dtype.Float32, 1, 8)
	for range 64 {
		b.op(isa.TRELU, tl(v), tl(v))
	}
	m := compile(t, chip, b.p)
	st, err := RunTask(chip, nil, isa.Vector, []Block{{Prog: m}}, RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(64), st.PipeBusy[isa.PipeV])
	assert.Equal(t, int64(64*chip.IssueCycles+1), st.KernelCycles, "issue-bound: the last op issues at 256 and takes 1")
}

func TestTraceEvents(t *testing.T) {
	chip := preset(t, "tiny")
	s := gemmSpec{M: 64, N: 64, K: 64, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	_, st := s.run(t, chip, make([]float64, 64*64), make([]float64, 64*64), RunOptions{Trace: true})
	require.Len(t, st.Trace, int(st.Instructions))
	type lane struct{ core, block int }
	last := map[lane]map[isa.Pipe]int64{}
	setAt := map[int]int64{}
	for _, e := range st.Trace {
		assert.GreaterOrEqual(t, e.Start, int64(chip.StartCycles()))
		assert.GreaterOrEqual(t, e.End, e.Start)
		assert.LessOrEqual(t, e.End, st.Cycles)
		assert.Equal(t, e.Block%chip.CubeCores, e.Core)
		k := lane{e.Core, e.Block}
		if last[k] == nil {
			last[k] = map[isa.Pipe]int64{}
		}
		// A pipe runs one instruction at a time.
		assert.GreaterOrEqual(t, e.Start, last[k][e.Pipe], "pipe %s overlaps itself", e.Pipe)
		last[k][e.Pipe] = e.End
		if e.Op == isa.SET_FLAG {
			setAt[e.Block] = e.Start
		}
	}
	// Blocks of one core do not overlap in time: block 2 starts after block 0 ends.
	var end0, start2 int64 = 0, 1 << 62
	for _, e := range st.Trace {
		if e.Block == 0 {
			end0 = max(end0, e.End)
		}
		if e.Block == 2 {
			start2 = min(start2, e.Start)
		}
	}
	assert.GreaterOrEqual(t, start2, end0)
	assert.Empty(t, runChain(t, chip, RunOptions{}).Trace, "no trace unless asked")
}

func TestStatsSummary(t *testing.T) {
	st := runChain(t, preset(t, "tiny"), RunOptions{})
	out := st.String()
	assert.Contains(t, out, "cube task on tiny")
	assert.Contains(t, out, "m=")
	assert.InDelta(t, float64(st.Cycles)/1.85e9, st.Seconds(), 1e-15)
	assert.Equal(t, 4096, st.HighWater[isa.Mat])
	assert.Equal(t, 4096, st.HighWater[isa.Acc])
}
