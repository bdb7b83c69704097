package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// chainProgram is the smallest cube pipeline: load A and B, move them to L0, multiply,
// store through the fixpipe.
func chainProgram() *isa.Program {
	b := newProg("chain", isa.Cube)
	pa := b.param("a", dtype.Float16, 32*32)
	pb := b.param("b", dtype.Float16, 32*32)
	pc := b.param("c", dtype.Float32, 32*32)
	am := b.tile("a_l1", isa.Mat, dtype.Float16, 32, 32)
	bm := b.tile("b_l1", isa.Mat, dtype.Float16, 32, 32)
	al := b.tile("a_l0", isa.Left, dtype.Float16, 32, 32)
	bl := b.tile("b_l0", isa.Right, dtype.Float16, 32, 32)
	acc := b.tile("acc", isa.Acc, dtype.Float32, 32, 32)
	b.op(isa.TLOAD, tl(am), view(pa, 0, 32, 32, 32))
	b.op(isa.TLOAD, tl(bm), view(pb, 0, 32, 32, 32))
	b.op(isa.TMOV, tl(al), tl(am))
	b.op(isa.TMOV, tl(bl), tl(bm))
	b.op(isa.TMATMUL, tl(acc), tl(al), tl(bl))
	b.op(isa.TSTORE, view(pc, 0, 32, 32, 32), tl(acc))
	return b.p
}

func TestSyncLoadMatmulStoreChain(t *testing.T) {
	m := compile(t, preset(t, "tiny"), chainProgram())
	// Each set goes right after its producer and each wait right before its consumer,
	// so the first tmov can run while B is still loading.
	assert.Equal(t, []string{
		"mte2 tload", "mte2 set_flag",
		"mte2 tload", "mte2 set_flag",
		"mte1 wait_flag", "mte1 tmov",
		"mte1 wait_flag", "mte1 tmov", "mte1 set_flag", // one flag: the tmovs share a pipe
		"m wait_flag", "m tmatmul", "m set_flag",
		"fix wait_flag", "fix tstore",
	}, listingOps(m), "%s", m)
	assert.Equal(t, map[string]int{"mte2->mte1": 2, "mte1->m": 1, "m->fix": 1}, countFlags(m))
	// The two mte2->mte1 syncs overlap in program order, so they need distinct ids.
	assert.Equal(t, 0.0, m.Instrs[1].Args[2].Imm)
	assert.Equal(t, 1.0, m.Instrs[3].Args[2].Imm)
	requireFlagsPaired(t, m)
	for _, in := range m.Instrs {
		if in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG {
			assert.Equal(t, -1, in.Src, "inserted flags have no source instruction")
		} else {
			assert.GreaterOrEqual(t, in.Src, 0)
		}
	}
}

func TestSyncNoFlagsOnOnePipe(t *testing.T) {
	b := newProg("vec", isa.Vector)
	x := b.param("x", dtype.Float16, 16*16)
	y := b.param("y", dtype.Float16, 16*16)
	t0 := b.tile("t0", isa.Vec, dtype.Float16, 16, 16)
	t1 := b.tile("t1", isa.Vec, dtype.Float16, 16, 16)
	t2 := b.tile("t2", isa.Vec, dtype.Float16, 16, 16)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 16, 16, 16))
	b.op(isa.TLOAD, tl(t1), view(x, 0, 16, 16, 16)) // same pipe as the first load: no flag
	b.op(isa.TADD, tl(t2), tl(t0), tl(t1))
	b.op(isa.TMUL, tl(t2), tl(t2), tl(t0)) // RAW on t2 within V: no flag
	b.op(isa.TRELU, tl(t2), tl(t2))
	b.op(isa.TSTORE, view(y, 0, 16, 16, 16), tl(t2))
	m := compile(t, preset(t, "tiny"), b.p)
	assert.Equal(t, map[string]int{"mte2->v": 1, "v->mte3": 1}, countFlags(m), "%s", m)
	requireFlagsPaired(t, m)
}

func TestSyncGMStoreThenLoad(t *testing.T) {
	// A store to GM followed by a load of overlapping bytes is a RAW hazard through GM.
	b := newProg("gm_raw", isa.Vector)
	x := b.param("x", dtype.Float32, 64)
	t0 := b.tile("t0", isa.Vec, dtype.Float32, 8, 8)
	t1 := b.tile("t1", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 8, 8, 8))
	b.op(isa.TSTORE, view(x, 0, 1, 8, 8), tl(t0))
	b.op(isa.TLOAD, tl(t1), view(x, 4, 2, 4, 8)) // elements 4..7 and 12..15 overlap the store
	m := compile(t, preset(t, "tiny"), b.p)
	assert.Equal(t, map[string]int{"mte2->mte3": 1, "mte3->mte2": 1}, countFlags(m), "%s", m)

	// Disjoint GM bytes need no flag.
	b.p.Body[2] = isa.Instr{Op: isa.TLOAD, Args: []isa.Operand{tl(t1), view(x, 8, 2, 8, 8)}}
	m = compile(t, preset(t, "tiny"), b.p)
	assert.Equal(t, map[string]int{"mte2->mte3": 1}, countFlags(m), "%s", m)
}

func TestSyncTransitiveCoverage(t *testing.T) {
	// The matmul reads L0 tiles written by MTE1, which waited for MTE2; the store
	// reading acc needs only m->fix. A later load that overwrites a_l1 (read by the
	// tmov) needs mte1->mte2 but no extra m->mte2.
	p := chainProgram()
	p.Body = append(p.Body, isa.Instr{Op: isa.TLOAD, Args: []isa.Operand{tl(0), view(0, 0, 32, 32, 32)}})
	m := compile(t, preset(t, "tiny"), p)
	assert.Equal(t, map[string]int{"mte2->mte1": 2, "mte1->m": 1, "m->fix": 1, "mte1->mte2": 1}, countFlags(m), "%s", m)
	requireFlagsPaired(t, m)
}

func TestSyncManualFlagsAreKeptAndCount(t *testing.T) {
	b := newProg("manual", isa.Vector)
	x := b.param("x", dtype.Float16, 16*16)
	y := b.param("y", dtype.Float16, 16*16)
	t0 := b.tile("t0", isa.Vec, dtype.Float16, 16, 16)
	t1 := b.tile("t1", isa.Vec, dtype.Float16, 16, 16)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 16, 16, 16))
	b.flag(isa.SET_FLAG, isa.PipeMTE2, isa.PipeV, 0)
	b.flag(isa.WAIT_FLAG, isa.PipeMTE2, isa.PipeV, 0)
	b.op(isa.TRELU, tl(t1), tl(t0))
	b.op(isa.TSTORE, view(y, 0, 16, 16, 16), tl(t1))
	m := compile(t, preset(t, "tiny"), b.p)
	// The manual mte2->v pair covers the relu; only v->mte3 is inserted.
	assert.Equal(t, map[string]int{"mte2->v": 1, "v->mte3": 1}, countFlags(m), "%s", m)
	assert.Equal(t, 1, m.Instrs[1].Src, "manual flags keep their source index")
	requireFlagsPaired(t, m)
}

func TestSyncReservesManualIDs(t *testing.T) {
	// A manual flag uses mte2->v id 0, so the inserted mte2->v sync must pick another.
	b := newProg("reserve", isa.Vector)
	x := b.param("x", dtype.Float16, 16*16)
	t0 := b.tile("t0", isa.Vec, dtype.Float16, 16, 16)
	t1 := b.tile("t1", isa.Vec, dtype.Float16, 16, 16)
	b.flag(isa.SET_FLAG, isa.PipeMTE2, isa.PipeV, 0)
	b.flag(isa.WAIT_FLAG, isa.PipeMTE2, isa.PipeV, 0)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 16, 16, 16))
	b.op(isa.TRELU, tl(t1), tl(t0))
	m := compile(t, preset(t, "tiny"), b.p)
	var ids []float64
	for _, in := range m.Instrs {
		if in.Op == isa.SET_FLAG && in.Src < 0 {
			ids = append(ids, in.Args[2].Imm)
		}
	}
	assert.Equal(t, []float64{1}, ids, "%s", m)
}

func TestSyncBarrierCovers(t *testing.T) {
	b := newProg("barrier", isa.Vector)
	x := b.param("x", dtype.Float16, 16*16)
	t0 := b.tile("t0", isa.Vec, dtype.Float16, 16, 16)
	t1 := b.tile("t1", isa.Vec, dtype.Float16, 16, 16)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 16, 16, 16))
	b.op(isa.TSYNC, isa.PipeOp(isa.PipeAll))
	b.op(isa.TRELU, tl(t1), tl(t0))
	m := compile(t, preset(t, "tiny"), b.p)
	assert.Empty(t, countFlags(m), "%s", m)
	assert.Equal(t, isa.PipeS, m.Instrs[1].Pipe, "a full barrier is the scalar's")

	// A barrier on one pipe orders only that pipe.
	b.p.Body[1] = isa.Instr{Op: isa.TSYNC, Args: []isa.Operand{isa.PipeOp(isa.PipeV)}}
	m = compile(t, preset(t, "tiny"), b.p)
	assert.Equal(t, map[string]int{"mte2->v": 1}, countFlags(m))
}

// fanProgram loads n tiles and then consumes them in order, so n syncs from MTE2 to V
// are live at once.
func fanProgram(n int) *isa.Program {
	b := newProg("fan", isa.Vector)
	x := b.param("x", dtype.Float32, n*64)
	y := b.param("y", dtype.Float32, n*64)
	ins := make([]int, n)
	for i := range n {
		ins[i] = b.tile("in", isa.Vec, dtype.Float32, 8, 8)
		b.op(isa.TLOAD, tl(ins[i]), view(x, 64*i, 8, 8, 8))
	}
	for i := range n {
		out := b.tile("out", isa.Vec, dtype.Float32, 8, 8)
		b.op(isa.TRELU, tl(out), tl(ins[i]))
		b.op(isa.TSTORE, view(y, 64*i, 8, 8, 8), tl(out))
	}
	return b.p
}

func TestSyncEventPoolExhaustion(t *testing.T) {
	chip := preset(t, "tiny")
	m := compile(t, chip, fanProgram(5))
	assert.Equal(t, 5, countFlags(m)["mte2->v"], "with 8 ids every consumer gets its own sync:\n%s", m)
	requireFlagsPaired(t, m)

	chip.FlagEventIDs = 2
	m = compile(t, chip, fanProgram(5))
	requireFlagsPaired(t, m) // ids never overlap even though 5 syncs want to be live
	for _, in := range m.Instrs {
		if in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG {
			assert.Less(t, in.Args[2].Imm, 2.0)
		}
	}

	// And the moved sets still order everything: the results are right.
	x := make([]float64, 5*64)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	l := layout(dtype.Encode(dtype.Float32, x), make([]byte, 5*64*4))
	_, err := RunTask(chip, l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	got := dtype.Decode(dtype.Float32, l.bytes(1, 5*64*4), 5*64)
	for i, v := range x {
		assert.Equal(t, max(v, 0), got[i])
	}
}

func TestSyncManualIDsExhaustPool(t *testing.T) {
	chip := preset(t, "tiny")
	chip.FlagEventIDs = 1
	b := newProg("full", isa.Vector)
	x := b.param("x", dtype.Float16, 16*16)
	t0 := b.tile("t0", isa.Vec, dtype.Float16, 16, 16)
	t1 := b.tile("t1", isa.Vec, dtype.Float16, 16, 16)
	b.flag(isa.SET_FLAG, isa.PipeMTE2, isa.PipeV, 0)
	b.flag(isa.WAIT_FLAG, isa.PipeMTE2, isa.PipeV, 0)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 16, 16, 16))
	b.op(isa.TRELU, tl(t1), tl(t0))
	_, err := Compile(chip, b.p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no event id left for flags from mte2 to v")
}

func TestCompileIsDeterministic(t *testing.T) {
	s := gemmSpec{M: 96, N: 64, K: 96, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	chip := preset(t, "tiny")
	first := compile(t, chip, s.program(1, 1)).String()
	for range 5 {
		require.Equal(t, first, compile(t, chip, s.program(1, 1)).String())
	}
}
