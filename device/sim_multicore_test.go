package device

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

func TestMoreBlocksThanCores(t *testing.T) {
	s := biasReluSpec{rows: 40, cols: 100, tr: 16, tc: 64, dt: dtype.Float16}
	x, y, bias := s.inputs(5)
	want := s.ref(x, y, bias)

	// Six blocks on four cores: cores 0 and 1 run two blocks each.
	got, st := s.run(t, preset(t, "tiny"), x, y, bias, RunOptions{})
	require.Equal(t, want, got)
	require.Len(t, st.CoreCycles, 4)
	assert.Greater(t, st.CoreCycles[0], st.CoreCycles[2])
	assert.Greater(t, st.CoreCycles[1], st.CoreCycles[3])
	tiny := preset(t, "tiny")
	assert.Equal(t, int64(tiny.DispatchCycles+tiny.CoreStartCycles+tiny.FinalSyncCycles)+slices.Max(st.CoreCycles), st.Cycles)

	// The same task on a single core computes the same values, more slowly.
	one := preset(t, "tiny")
	one.VectorCores = 1
	got1, st1 := s.run(t, one, x, y, bias, RunOptions{})
	require.Equal(t, want, got1)
	assert.Equal(t, 1, st1.ActiveCores)
	assert.Greater(t, st1.Cycles, st.Cycles)

	// And on a2, with more cores than blocks, every block has a core of its own.
	gotA2, stA2 := s.run(t, preset(t, "a2"), x, y, bias, RunOptions{})
	require.Equal(t, want, gotA2)
	assert.Equal(t, 6, stA2.ActiveCores)
	assert.Len(t, stA2.CoreCycles, 48)
}

func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	s := gemmSpec{M: 96, N: 96, K: 64, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	rng := rand.New(rand.NewPCG(9, 9))
	a := randValues(rng, dtype.Float16, s.M*s.K, 1)
	b := randValues(rng, dtype.Float16, s.K*s.N, 1)
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)

	var outs [][]byte
	var stats []*TaskStats
	for _, procs := range []int{1, 4, 1, 4} {
		runtime.GOMAXPROCS(procs)
		out, st := s.run(t, preset(t, "tiny"), a, b, RunOptions{Trace: true})
		outs = append(outs, append([]byte(nil), out...))
		stats = append(stats, st)
	}
	for i := 1; i < len(outs); i++ {
		require.Equal(t, outs[0], outs[i])
		require.Equal(t, stats[0], stats[i], "statistics and trace are deterministic too")
	}
}

func TestBlocksMustNotShareWrittenGM(t *testing.T) {
	// Two blocks storing the same C tile would race.
	s := gemmSpec{M: 32, N: 32, K: 32, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float16}
	chip := preset(t, "tiny")
	m := compile(t, chip, s.program(0, 0))
	l := layout(make([]byte, 2048), make([]byte, 2048), make([]byte, 2048))
	_, err := RunTask(chip, l.gm, isa.Cube, []Block{{Prog: m, ParamAddrs: l.addrs}, {Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.Error(t, err)
	var se *SimError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 1, se.Block)
	assert.Contains(t, err.Error(), "must not share GM")

	// Reading what another block writes is a race as well: block 1's C is block 0's A.
	addrs1 := []int{l.addrs[2], l.addrs[1], l.addrs[0]}
	_, err = RunTask(chip, l.gm, isa.Cube, []Block{{Prog: m, ParamAddrs: l.addrs}, {Prog: m, ParamAddrs: addrs1}}, RunOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must not share GM")

	// Blocks that only read shared inputs are fine (every GEMM block reads A and B).
	s2 := gemmSpec{M: 32, N: 64, K: 32, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float16}
	_, _ = s2.run(t, chip, make([]float64, 32*32), make([]float64, 32*64), RunOptions{})
}

func TestParamsOfOneBlockMustNotAliasWhenWritten(t *testing.T) {
	b := newProg("alias", isa.Vector)
	px := b.param("x", dtype.Float32, 64)
	py := b.param("y", dtype.Float32, 64)
	tt := b.tile("t", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(tt), view(px, 0, 8, 8, 8))
	b.op(isa.TSTORE, view(py, 0, 8, 8, 8), tl(tt))
	m := compile(t, preset(t, "tiny"), b.p)
	gm := make([]byte, 512)
	_, err := RunTask(preset(t, "tiny"), gm, isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0, 128}}}, RunOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "params x and y overlap")
	_, err = RunTask(preset(t, "tiny"), gm, isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0, 256}}}, RunOptions{})
	require.NoError(t, err)
}
