package device

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// A cube program pushes three successive accumulators through queue 2; the vector
// program of its group pops each, adds 1 and stores it. Compared with the reference
// interpreter running the same two programs as the cores of one block.
const pushProducer = `
kernel producer cube
param %a: f16[256]
param %b: f16[256]
reg %k
tile %ma: mat f16[16x16]
tile %mb: mat f16[16x16]
tile %la: left f16[16x16]
tile %rb: right f16[16x16]
tile %acc: acc f32[16x16]
  tload %ma, %a[0; 16x16; 16,1]
  tload %mb, %b[0; 16x16; 16,1]
  tmov %la, %ma
  tmov %rb, %mb
  tmatmul %acc, %la, %rb
  loop %k, 3
    tpush 2, %acc
    tmatmul.acc %acc, %la, %rb
  endloop
end
`

const popConsumer = `
kernel consumer vector
param %y: f32[768]
reg %k
reg %off
tile %v: vec f32[16x16]
  loop %k, 3
    tpop %v, 2
    tfree 2
    tadds %v, %v, 1
    smul %off, %k, 256
    tstore %y[%off; 16x16; 16,1], %v
  endloop
end
`

func TestGroupPushPopMatchesReference(t *testing.T) {
	cube, vec := parse(t, pushProducer), parse(t, popConsumer)
	a, b := make([]float64, 256), make([]float64, 256)
	for i := range a {
		a[i], b[i] = float64(i%7)-3, float64(i%5)*0.5
	}
	ab, bb := dtype.Encode(dtype.Float16, a), dtype.Encode(dtype.Float16, b)
	want := make([]byte, 768*4)
	require.NoError(t, isa.InterpretCores([]isa.Core{
		{Prog: cube, Params: [][]byte{append([]byte(nil), ab...), append([]byte(nil), bb...)}},
		{Prog: vec, Params: [][]byte{want}},
	}, isa.InterpOptions{}))

	chip := preset(t, "tiny")
	l := layout(ab, bb, make([]byte, 768*4))
	st, err := RunGroupTask(chip, l.gm, []Group{{
		Cube:   &Block{Prog: compile(t, chip, cube), ParamAddrs: l.addrs[:2]},
		Vector: []Block{{Prog: compile(t, chip, vec), ParamAddrs: l.addrs[2:]}},
	}}, RunOptions{Trace: true})
	require.NoError(t, err)
	// Small integers: the fp32 accumulation is exact, so the results are equal.
	assert.Equal(t, want, l.bytes(2, 768*4))
	assert.True(t, st.Mixed)
	assert.Equal(t, 1, st.ActiveCores)
	assert.Equal(t, int64(3*16*16*4), st.GMBytesWritten-int64(768*4), "each push goes out through GM")

	// The vector core's pops wait for the cube's pushes: each pop starts after the
	// push it takes has ended.
	var pushEnds, popStarts []int64
	for _, e := range st.Trace {
		switch e.Op {
		case isa.TPUSH:
			pushEnds = append(pushEnds, e.End)
		case isa.TPOP:
			popStarts = append(popStarts, e.Start)
		}
	}
	require.Len(t, popStarts, 3)
	for i := range popStarts {
		assert.GreaterOrEqual(t, popStarts[i], pushEnds[i])
	}
}

func TestGroupQueueWaitsForFree(t *testing.T) {
	// Three pushes into a two-slot queue: the third waits until the consumer frees a
	// slot, after its pop.
	push := parse(t, "kernel p vector\nparam %x: f32[8]\ntile %v: vec f32[1x8]\n  tload %v, %x[0; 1x8; 8,1]\n  tpush 0, %v\n  tpush 0, %v\n  tpush 0, %v\nend\n")
	pop := parse(t, "kernel c vector\nparam %y: f32[24]\nreg %k\nreg %off\ntile %w: vec f32[1x8]\n  loop %k, 3\n    tpop %w, 0\n    tfree 0\n    smul %off, %k, 8\n    tstore %y[%off; 1x8; 8,1], %w\n  endloop\nend\n")
	chip := preset(t, "tiny")
	x := dtype.Encode(dtype.Float32, []float64{1, 2, 3, 4, 5, 6, 7, 8})
	l := layout(x, make([]byte, 24*4))
	st, err := RunGroupTask(chip, l.gm, []Group{{Vector: []Block{
		{Prog: compile(t, chip, push), ParamAddrs: l.addrs[:1]},
		{Prog: compile(t, chip, pop), ParamAddrs: l.addrs[1:]},
	}}}, RunOptions{Trace: true})
	require.NoError(t, err)
	got := dtype.Decode(dtype.Float32, l.bytes(1, 24*4), 24)
	for i := range got {
		assert.Equal(t, float64(i%8+1), got[i])
	}
	var pushes []TraceEvent
	var firstFree TraceEvent
	for _, e := range st.Trace {
		switch {
		case e.Op == isa.TPUSH:
			pushes = append(pushes, e)
		case e.Op == isa.TFREE && firstFree.Op == 0:
			firstFree = e
		}
	}
	require.Len(t, pushes, 3)
	assert.GreaterOrEqual(t, pushes[2].Start, firstFree.Start, "the third push needs the slot the first free releases")
}

func TestGroupQueueDeadlock(t *testing.T) {
	pop := parse(t, "kernel c vector\ntile %w: vec f32[1x8]\n  tpop %w, 1\nend\n")
	chip := preset(t, "tiny")
	_, err := RunGroupTask(chip, nil, []Group{{Vector: []Block{{Prog: compile(t, chip, pop)}}}}, RunOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "deadlock: tpop waits on a queue no core will serve")

	// Alone in a plain task, a block's queues are its own: a push it never pops
	// blocks the third push.
	push := parse(t, "kernel p vector\ntile %v: vec f32[1x8]\n  texpands %v, 0\n  tpush 0, %v\n  tpush 0, %v\n  tpush 0, %v\nend\n")
	_, err = RunTask(chip, nil, isa.Vector, []Block{{Prog: compile(t, chip, push)}}, RunOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tpush waits on a queue")
}

func TestGroupRejectsBadGroups(t *testing.T) {
	chip := preset(t, "tiny")
	p := compile(t, chip, parse(t, "kernel e vector\nend\n"))
	_, err := RunGroupTask(chip, nil, nil, RunOptions{})
	assert.ErrorContains(t, err, "no groups")
	_, err = RunGroupTask(chip, nil, []Group{{Vector: []Block{{Prog: p}, {Prog: p}, {Prog: p}}}}, RunOptions{})
	assert.ErrorContains(t, err, "2 vector cores")
	_, err = RunGroupTask(chip, nil, []Group{{Cube: &Block{Prog: p}}}, RunOptions{})
	assert.ErrorContains(t, err, "is a vector program, run as a cube task")
}

func TestPrintOutputMatchesReference(t *testing.T) {
	src := `
kernel dbg vector
param %x: f32[16]
tile %t: vec f32[2x8] valid 2x3
  tload %t, %x[0; 2x8; 8,1]
  tprint %t
  tmuls %t, %t, 2
  tprint %t
end
`
	p := parse(t, src)
	x := make([]float64, 16)
	for i := range x {
		x[i] = float64(i) / 2
	}
	params := [][]byte{dtype.Encode(dtype.Float32, x)}
	var want bytes.Buffer
	require.NoError(t, isa.InterpretCores([]isa.Core{{Prog: p, Params: cloneAll(params)}}, isa.InterpOptions{Print: &want}))
	_, st := runDevice(t, preset(t, "tiny"), p, params)
	assert.Equal(t, want.String(), st.Output())
	require.Len(t, st.Prints, 2)
	assert.Less(t, st.Prints[0].Cycle, st.Prints[1].Cycle)
}

// On a chip with an L2, the AI cores of a mixed task share it: groups reading the same
// operands hit the lines the first one brought in, and the values are those of a
// run without the L2 model (AI cores in parallel goroutines).
func TestGroupTasksShareTheL2(t *testing.T) {
	cube, vec := parse(t, pushProducer), parse(t, popConsumer)
	a, b := make([]float64, 256), make([]float64, 256)
	for i := range a {
		a[i], b[i] = float64(i%3)-1, float64(i%4)*0.25
	}
	ab, bb := dtype.Encode(dtype.Float16, a), dtype.Encode(dtype.Float16, b)
	const groups = 6
	bufs := [][]byte{ab, bb}
	for range groups {
		bufs = append(bufs, make([]byte, 768*4))
	}
	chip := preset(t, "a2")
	noL2 := preset(t, "a2")
	noL2.L2Bytes = 0
	cm, vm := compile(t, chip, cube), compile(t, chip, vec)
	run := func(chip *Chip) (*gmLayout, *TaskStats) {
		l := layout(bufs...)
		var gs []Group
		for g := range groups {
			gs = append(gs, Group{
				Cube:   &Block{Prog: cm, ParamAddrs: l.addrs[:2]},
				Vector: []Block{{Prog: vm, ParamAddrs: []int{l.addrs[2+g]}}},
			})
		}
		st, err := RunGroupTask(chip, l.gm, gs, RunOptions{})
		require.NoError(t, err)
		return l, st
	}
	timed, st := run(chip)
	apart, stApart := run(noL2)
	assert.Equal(t, apart.gm, timed.gm)
	assert.Zero(t, stApart.L2Hits)
	assert.Greater(t, st.L2Hits, int64(0), "later groups find the operands in L2")
	assert.Greater(t, st.L2Misses, int64(0))
	again, st2 := run(chip)
	assert.Equal(t, timed.gm, again.gm)
	assert.Equal(t, st.Cycles, st2.Cycles, "deterministic")
}
