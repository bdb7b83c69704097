package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

func TestAssignPinsTilesAndAliasesAreSynchronised(t *testing.T) {
	// Manual placement: %a and %b share bytes 0..1023 of UB. The device honours the
	// addresses (unlike the reference, which keeps tiles apart), the flag inserter
	// sees the aliasing through the addresses, and %c goes around them.
	src := `
kernel pin vector
param %x: f32[256]
param %y: f32[256]
tile %a: vec f32[16x16]
tile %b: vec f32[16x16]
tile %c: vec f32[16x16]
  tassign %a, 0
  tassign %b, 0
  tload %a, %x[0; 16x16; 16,1]
  texpands %b, 3
  tadds %c, %a, 1
  tstore %y[0; 16x16; 16,1], %c
end
`
	chip := preset(t, "tiny")
	p := parse(t, src)
	m := compile(t, chip, p)
	assert.Equal(t, 0, m.Tiles[0].Addr)
	assert.Equal(t, 0, m.Tiles[1].Addr)
	assert.GreaterOrEqual(t, m.Tiles[2].Addr, 1024)
	assert.Equal(t, 1, countFlags(m)["mte2->v"], "the expand into %%b waits for the load into %%a:\n%s", m)
	l := layout(randParams(p, 1)...)
	_, err := RunTask(chip, l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	for _, v := range dtype.Decode(dtype.Float32, l.bytes(1, 1024), 256) {
		assert.Equal(t, 4.0, v, "%%a was overwritten through its alias")
	}

	_, err = Compile(chip, parse(t, "kernel twice vector\ntile %a: vec f32[8x8]\n  tassign %a, 0\n  tassign %a, 256\nend\n"))
	assert.ErrorContains(t, err, "already bound to 0x0")
	_, err = Compile(chip, parse(t, "kernel far vector\ntile %a: vec f32[8x8]\n  tassign %a, 32768\nend\n"))
	assert.Error(t, err)
}

func TestScalarPipeFlags(t *testing.T) {
	// tprint reads a tile on the scalar unit: the backend makes it wait for the load
	// (mte2 -> s); a manual program may name the scalar pipe in its flags too.
	chip := preset(t, "tiny")
	m := compile(t, chip, parse(t, `
kernel sflags vector
param %x: f32[64]
tile %t: vec f32[8x8]
  tload %t, %x[0; 8x8; 8,1]
  tprint %t
  tmuls %t, %t, 2
  set_flag v, s, 1
  wait_flag v, s, 1
  tprint %t
end
`))
	assert.Equal(t, 1, countFlags(m)["mte2->s"], "%s", m)
	l := layout(dtype.Encode(dtype.Float32, make([]float64, 64)))
	st, err := RunTask(chip, l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{Trace: true})
	require.NoError(t, err)
	require.Len(t, st.Prints, 2)
	var mulEnd int64
	for _, e := range st.Trace {
		if e.Op == isa.TMULS {
			mulEnd = e.End
		}
	}
	assert.Greater(t, st.Prints[1].Cycle, mulEnd, "the second print waits for the multiply through the v -> s flag")
}
