package device

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// Functional runs compute the same bytes as timed runs.
func TestFunctionalModeMatchesTimedValues(t *testing.T) {
	s := gemmSpec{M: 96, N: 96, K: 96, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	rng := rand.New(rand.NewPCG(5, 6))
	a := randValues(rng, s.In, s.M*s.K, 1)
	b := randValues(rng, s.In, s.K*s.N, 1)
	for _, name := range []string{"a2", "tiny"} {
		timed, st := s.run(t, preset(t, name), a, b, RunOptions{})
		fun, fst := s.run(t, preset(t, name), a, b, RunOptions{Functional: true})
		assert.Equal(t, timed, fun, name)
		assert.Equal(t, st.Instructions, fst.Instructions, name)
		assert.Zero(t, fst.PipeBusy[isa.PipeM], name)
		assert.Zero(t, fst.L2Hits+fst.L2Misses, name)
	}

	const rows = 53
	chip := preset(t, "tiny")
	x := dtype.Encode(dtype.Float32, randValues(rng, dtype.Float32, rows*128, 4))
	var outs [2][]byte
	for i, opts := range []RunOptions{{}, {Functional: true}} {
		l := layout(x, make([]byte, rows*128*4))
		var blocks []Block
		for r0 := 0; r0 < rows; r0 += 16 {
			blocks = append(blocks, Block{Prog: compile(t, chip, parse(t, softmaxBlock(rows, r0))), ParamAddrs: l.addrs})
		}
		_, err := RunTask(chip, l.gm, isa.Vector, blocks, opts)
		require.NoError(t, err)
		outs[i] = l.bytes(1, rows*128*4)
	}
	assert.Equal(t, outs[0], outs[1])
}

// A loop-carried double-buffered program keeps its flags balanced in program order.
func TestFunctionalModeRunsLoops(t *testing.T) {
	chip := preset(t, "a2")
	st, err := RunTask(chip, make([]byte, 8192*4*2), isa.Vector, []Block{{Prog: compile(t, chip, parse(t, `
kernel loopy vector
param %x: f32[8192]
param %y: f32[8192]
reg %i
reg %off
tile %t: vec f32[16x128]
  loop %i, 4
    smul %off, %i, 2048
    tload %t, %x[%off; 16x128; 128,1]
    texp %t, %t
    tstore %y[%off; 16x128; 128,1], %t
  endloop
end
`)), ParamAddrs: []int{0, 8192 * 4}}}, RunOptions{Functional: true})
	require.NoError(t, err)
	assert.Equal(t, int64(8192*4), st.GMBytesRead)
}
