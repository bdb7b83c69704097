package device

import (
	"slices"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// A relu whose input no load writes: the backend inserts no flag between the load
// and the relu, so pointing the relu at the loaded tile makes a race.
func reluOfOtherTile() *isa.Program {
	b := newProg("other", isa.Vector)
	x := b.param("x", dtype.Float32, 64)
	y := b.param("y", dtype.Float32, 64)
	t0 := b.tile("t0", isa.Vec, dtype.Float32, 8, 8)
	t1 := b.tile("t1", isa.Vec, dtype.Float32, 8, 8)
	t2 := b.tile("t2", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 8, 8, 8))
	b.op(isa.TRELU, tl(t1), tl(t2))
	b.op(isa.TSTORE, view(y, 0, 8, 8, 8), tl(t1))
	return b.p
}

// kept is the progInfo kept for m (nil: none yet), read without counting as a run.
func kept(m *MachineProgram) *progInfo {
	v, ok := programInfos.Load(weak.Make(m))
	if !ok {
		return nil
	}
	return v.(*programEntry).info.Load()
}

// A program's first run only notes it; its second keeps its progInfo and, finding no
// race, marks it, and later runs skip the checker with the same bytes and times;
// changed in place, it is read and checked again.
func TestRaceFreeProgramIsCheckedOnce(t *testing.T) {
	chip := preset(t, "tiny")
	m := compile(t, chip, reluOfOtherTile())
	run := func() (*TaskStats, []byte, error) {
		gm := make([]byte, 512)
		for i := range gm {
			gm[i] = byte(i * 7)
		}
		st, err := RunTask(chip, gm, isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0, 256}}}, RunOptions{})
		return st, gm, err
	}
	first, gm1, err := run()
	require.NoError(t, err)
	assert.Nil(t, kept(m), "a first run keeps nothing")
	second, gm2, err := run()
	require.NoError(t, err)
	require.NotNil(t, kept(m))
	require.True(t, kept(m).raceFree.Load(), "a clean run of the kept program marks it")
	third, gm3, err := run()
	require.NoError(t, err)
	for _, st := range []*TaskStats{second, third} {
		assert.Equal(t, first.Cycles, st.Cycles)
		assert.Equal(t, first.CoreCycles, st.CoreCycles)
	}
	assert.Equal(t, gm1, gm2)
	assert.Equal(t, gm1, gm3)

	relu := slices.IndexFunc(m.Instrs, func(in Instr) bool { return in.Op == isa.TRELU })
	load := slices.IndexFunc(m.Instrs, func(in Instr) bool { return in.Op == isa.TLOAD })
	m.Instrs[relu].Args[1].Addr = m.Instrs[load].Args[0].Addr // in place: same length, same pointer
	_, _, err = run()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race")
	assert.False(t, kept(m).raceFree.Load(), "new contents are read again, and a race never marks them")
}

// A program whose registers come from memory (SLD) may take another path in another
// run: it is checked in every run.
func TestProgramsReadingRegistersFromMemoryAreAlwaysChecked(t *testing.T) {
	p := &MachineProgram{Instrs: []Instr{{Op: isa.SLD}}}
	assert.False(t, newProgInfo(p, false).replayable)
	q := &MachineProgram{Instrs: []Instr{{Op: isa.TADD}}}
	assert.True(t, newProgInfo(q, false).replayable)
}
