package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// dropFlags removes every SET_FLAG / WAIT_FLAG the backend inserted for one pipe pair.
func dropFlags(m *MachineProgram, src, dst isa.Pipe) {
	out := m.Instrs[:0]
	for _, in := range m.Instrs {
		if (in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG) && in.Args[0].Pipe == src && in.Args[1].Pipe == dst {
			continue
		}
		out = append(out, in)
	}
	m.Instrs = out
	rematch(m)
}

// rematch recomputes the LOOP / ENDLOOP pairing of an edited machine program.
func rematch(m *MachineProgram) {
	match, err := matchLoops(m.Instrs)
	if err != nil {
		panic(err)
	}
	for i := range m.Instrs {
		m.Instrs[i].Match = match[i]
	}
}

func loadReluStore() *isa.Program {
	b := newProg("lrs", isa.Vector)
	x := b.param("x", dtype.Float32, 64)
	y := b.param("y", dtype.Float32, 64)
	t0 := b.tile("t0", isa.Vec, dtype.Float32, 8, 8)
	t1 := b.tile("t1", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 8, 8, 8))
	b.op(isa.TRELU, tl(t1), tl(t0))
	b.op(isa.TSTORE, view(y, 0, 8, 8, 8), tl(t1))
	return b.p
}

func TestRaceMissingFlagIsReported(t *testing.T) {
	m := compile(t, preset(t, "tiny"), loadReluStore())
	require.NoError(t, runOne(t, m, make([]byte, 512), []int{0, 256}))
	dropFlags(m, isa.PipeMTE2, isa.PipeV)
	err := runOne(t, m, make([]byte, 512), []int{0, 256})
	require.Error(t, err)
	var se *SimError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Instr, "trelu")
	assert.Contains(t, err.Error(), "race")
	assert.Contains(t, err.Error(), "tload")
	assert.Contains(t, err.Error(), "set_flag mte2, v")
	assert.ErrorIs(t, err, ErrSync, "callers tell a synchronisation failure apart")
}

func TestRaceReportedEvenWhenTimingHidesIt(t *testing.T) {
	// Forty vector instructions on another tile keep V busy until the load is long
	// done, so without its flag the relu would still read the loaded data; the race
	// is reported all the same, since no synchronisation orders the two.
	b := newProg("hidden", isa.Vector)
	x := b.param("x", dtype.Float32, 64)
	t0 := b.tile("t0", isa.Vec, dtype.Float32, 8, 8)
	busy := b.tile("busy", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 8, 8, 8))
	for range 40 {
		b.op(isa.TRELU, tl(busy), tl(busy))
	}
	b.op(isa.TRELU, tl(t0), tl(t0))
	m := compile(t, preset(t, "tiny"), b.p)
	st, err := RunTask(preset(t, "tiny"), make([]byte, 256), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0}}}, RunOptions{Trace: true})
	require.NoError(t, err)
	var loadEnd, reluStart int64
	for _, e := range st.Trace {
		switch {
		case e.Op == isa.TLOAD:
			loadEnd = e.End
		case e.Op == isa.TRELU:
			reluStart = e.Start // the last relu is the one on t0
		}
	}
	require.Less(t, loadEnd, reluStart, "the timing orders them by itself")
	dropFlags(m, isa.PipeMTE2, isa.PipeV)
	err = runOne(t, m, make([]byte, 256), []int{0})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race")

	// WAR: a load overwriting a tile a vector instruction still reads.
	b = newProg("war", isa.Vector)
	x = b.param("x", dtype.Float32, 64)
	t0 = b.tile("t0", isa.Vec, dtype.Float32, 8, 8)
	t1 := b.tile("t1", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 8, 8, 8))
	b.op(isa.TRELU, tl(t1), tl(t0))
	b.op(isa.TLOAD, tl(t0), view(x, 0, 8, 8, 8))
	b.op(isa.TRELU, tl(t1), tl(t0))
	m = compile(t, preset(t, "tiny"), b.p)
	require.NoError(t, runOne(t, m, make([]byte, 256), []int{0}))
	dropFlags(m, isa.PipeV, isa.PipeMTE2)
	err = runOne(t, m, make([]byte, 256), []int{0})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race")
	assert.Contains(t, err.Error(), "set_flag v, mte2")
}

func TestRaceTransitiveOrderIsEnough(t *testing.T) {
	// MTE2 -> V -> MTE3 orders the load before the store of the same bytes' consumer;
	// the GEMM chain MTE2 -> MTE1 -> M -> FIX is the cube's version. Neither needs a
	// direct flag, and neither is a race.
	m := compile(t, preset(t, "tiny"), chainProgram())
	_, err := RunTask(preset(t, "tiny"), make([]byte, 3*32*32*4), isa.Cube,
		[]Block{{Prog: m, ParamAddrs: []int{0, 2048, 4096}}}, RunOptions{})
	require.NoError(t, err)
}
