package device

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// runOne runs a single-block vector task and returns its error; it fails the test if
// the run takes long (a hang would otherwise stall the suite).
func runOne(t *testing.T, m *MachineProgram, gm []byte, addrs []int) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := RunTask(preset(t, "tiny"), gm, m.Core, []Block{{Prog: m, ParamAddrs: addrs}}, RunOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("RunTask did not return")
		return nil
	}
}

// flagInstr is a machine SET_FLAG or WAIT_FLAG (on the pipe that executes it).
func flagInstr(op isa.Opcode, src, dst isa.Pipe, id int) Instr {
	p := src
	if op == isa.WAIT_FLAG {
		p = dst
	}
	return Instr{Op: op, Pipe: p, Src: -1, Args: []Operand{{Kind: isa.KindPipe, Pipe: src}, {Kind: isa.KindPipe, Pipe: dst}, {Kind: isa.KindImm, Imm: float64(id)}}}
}

// flagsOnly is a machine program of the tiny chip made of the given instructions.
func flagsOnly(core isa.CoreKind, ins ...Instr) *MachineProgram {
	return &MachineProgram{Name: "flags", Chip: "tiny", Core: core, Instrs: ins}
}

func TestDeadlockWaitNeverSet(t *testing.T) {
	b := newProg("deadlock", isa.Vector)
	x := b.param("x", dtype.Float16, 256)
	t0 := b.tile("t0", isa.Vec, dtype.Float16, 16, 16)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 16, 16, 16))
	b.op(isa.TRELU, tl(t0), tl(t0))
	// The verifier rejects a wait nobody sets; a machine program edited after Compile
	// can still hold one.
	m := compile(t, preset(t, "tiny"), b.p)
	relu := slices.IndexFunc(m.Instrs, func(in Instr) bool { return in.Op == isa.TRELU })
	m.Instrs = slices.Insert(m.Instrs, relu, flagInstr(isa.WAIT_FLAG, isa.PipeMTE3, isa.PipeV, 3))
	err := runOne(t, m, make([]byte, 512), []int{0})
	require.Error(t, err)
	var se *SimError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 0, se.Core)
	assert.Equal(t, 0, se.Block)
	assert.Equal(t, isa.WAIT_FLAG, m.Instrs[se.PC].Op)
	assert.Contains(t, err.Error(), "deadlock")
	assert.Contains(t, err.Error(), "wait_flag mte3, v, 3")
	assert.ErrorIs(t, err, ErrSync)
}

func TestDeadlockPipesWaitingOnEachOther(t *testing.T) {
	// V waits for MTE2, which waits for V: each set comes after the other's wait.
	m := flagsOnly(isa.Vector,
		flagInstr(isa.WAIT_FLAG, isa.PipeMTE2, isa.PipeV, 0),
		flagInstr(isa.SET_FLAG, isa.PipeV, isa.PipeMTE2, 0),
		flagInstr(isa.WAIT_FLAG, isa.PipeV, isa.PipeMTE2, 0),
		flagInstr(isa.SET_FLAG, isa.PipeMTE2, isa.PipeV, 0))
	err := runOne(t, m, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "deadlock")
	assert.Contains(t, err.Error(), "also blocked: pc 2")
}

func TestWaitBeforeSetInProgramOrderIsFine(t *testing.T) {
	// Pipes run independently: V may wait for an event MTE2 sets later in program
	// order. The verifier rejects such programs; the simulator still runs them.
	b := newProg("reverse", isa.Vector)
	x := b.param("x", dtype.Float32, 64)
	t0 := b.tile("t0", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 8, 8, 8))
	m := compile(t, preset(t, "tiny"), b.p)
	m.Instrs = append([]Instr{flagInstr(isa.WAIT_FLAG, isa.PipeMTE2, isa.PipeV, 0)}, m.Instrs...)
	m.Instrs = append(m.Instrs, flagInstr(isa.SET_FLAG, isa.PipeMTE2, isa.PipeV, 0))
	require.NoError(t, runOne(t, m, make([]byte, 256), []int{0}))
}

func TestUnconsumedSetIsAnError(t *testing.T) {
	m := flagsOnly(isa.Vector, flagInstr(isa.SET_FLAG, isa.PipeMTE2, isa.PipeV, 1))
	err := runOne(t, m, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "never consumed")
}

func TestGMViewOutOfRange(t *testing.T) {
	b := newProg("oob", isa.Vector)
	x := b.param("x", dtype.Float32, 64)
	t0 := b.tile("t0", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, 8, 8, 8, 8)) // elements 8..71 of 64
	_, err := Compile(preset(t, "tiny"), b.p)
	require.Error(t, err)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 0, ce.PC)
	assert.Contains(t, err.Error(), "reaches past the end of %x")

	// A machine program edited after Compile is checked again at run time.
	b.p.Body[0] = isa.Instr{Op: isa.TLOAD, Args: []isa.Operand{tl(t0), view(x, 0, 8, 8, 8)}}
	m := compile(t, preset(t, "tiny"), b.p)
	m.Instrs[0].Args[1].GM.RowStride = 9
	err = runOne(t, m, make([]byte, 256), []int{0})
	require.Error(t, err)
	var se *SimError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 0, se.Block)
	assert.Equal(t, 0, se.PC)
	assert.Contains(t, se.Instr, "tload")
	assert.Contains(t, err.Error(), "outside its 64 elements")

	// A param placed past the end of GM.
	m.Instrs[0].Args[1].GM.RowStride = 8
	err = runOne(t, m, make([]byte, 256), []int{64})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "outside the 256-byte GM")
	require.NoError(t, runOne(t, m, make([]byte, 256), []int{0}))
}

func TestRunTaskRejectsBadInput(t *testing.T) {
	chip := preset(t, "tiny")
	b := newProg("ok", isa.Vector)
	x := b.param("x", dtype.Float32, 64)
	t0 := b.tile("t0", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 8, 8, 8))
	m := compile(t, chip, b.p)
	gm := make([]byte, 256)
	good := []Block{{Prog: m, ParamAddrs: []int{0}}}

	cases := map[string]func() error{
		"nil chip":  func() error { _, err := RunTask(nil, gm, isa.Vector, good, RunOptions{}); return err },
		"no blocks": func() error { _, err := RunTask(chip, gm, isa.Vector, nil, RunOptions{}); return err },
		"kind":      func() error { _, err := RunTask(chip, gm, isa.Cube, good, RunOptions{}); return err },
		"nil prog": func() error {
			_, err := RunTask(chip, gm, isa.Vector, []Block{{}}, RunOptions{})
			return err
		},
		"params": func() error {
			_, err := RunTask(chip, gm, isa.Vector, []Block{{Prog: m}}, RunOptions{})
			return err
		},
		"chip name": func() error {
			_, err := RunTask(preset(t, "a2"), gm, isa.Vector, good, RunOptions{})
			return err
		},
		"bad tile address": func() error {
			bad := *m
			bad.Instrs = append([]Instr(nil), m.Instrs...)
			bad.Instrs[0].Args = append([]Operand(nil), m.Instrs[0].Args...)
			bad.Instrs[0].Args[0].Addr = chip.Capacity(isa.Vec) - 32
			_, err := RunTask(chip, gm, isa.Vector, []Block{{Prog: &bad, ParamAddrs: []int{0}}}, RunOptions{})
			return err
		},
		"bad operand": func() error {
			bad := *m
			bad.Instrs = []Instr{{Op: isa.TLOAD, Pipe: isa.PipeMTE2}}
			_, err := RunTask(chip, gm, isa.Vector, []Block{{Prog: &bad, ParamAddrs: []int{0}}}, RunOptions{})
			return err
		},
	}
	for name, run := range cases {
		assert.Error(t, run(), name)
	}
	_, err := RunTask(chip, gm, isa.Vector, good, RunOptions{})
	require.NoError(t, err)
}

func TestCompileRejectsBadPrograms(t *testing.T) {
	chip := preset(t, "tiny")
	type build func(b *progBuilder)
	cases := map[string]struct {
		core isa.CoreKind
		fn   build
		want string
	}{
		"vec tile on cube": {isa.Cube, func(b *progBuilder) { b.tile("v", isa.Vec, dtype.Float16, 16, 16) }, "does not have"},
		"load into left": {isa.Cube, func(b *progBuilder) {
			x := b.param("x", dtype.Float16, 256)
			l := b.tile("l", isa.Left, dtype.Float16, 16, 16)
			b.op(isa.TLOAD, tl(l), view(x, 0, 16, 16, 16))
		}, "tload writes mat or vec tiles"},
		"load converts": {isa.Vector, func(b *progBuilder) {
			x := b.param("x", dtype.Float16, 256)
			v := b.tile("v", isa.Vec, dtype.Float32, 16, 16)
			b.op(isa.TLOAD, tl(v), view(x, 0, 16, 16, 16))
		}, "tload does not convert"},
		"window larger than tile": {isa.Vector, func(b *progBuilder) {
			x := b.param("x", dtype.Float16, 1024)
			v := b.tile("v", isa.Vec, dtype.Float16, 16, 16)
			b.op(isa.TLOAD, tl(v), view(x, 0, 32, 16, 16))
		}, "larger than tile"},
		"matmul shapes": {isa.Cube, func(b *progBuilder) {
			a := b.tile("a", isa.Left, dtype.Float16, 16, 32)
			w := b.tile("w", isa.Right, dtype.Float16, 16, 16)
			c := b.tile("c", isa.Acc, dtype.Float32, 16, 16)
			b.op(isa.TMATMUL, tl(c), tl(a), tl(w))
		}, "inner dimensions differ"},
		"matmul dtypes": {isa.Cube, func(b *progBuilder) {
			a := b.tile("a", isa.Left, dtype.Float16, 16, 16)
			w := b.tile("w", isa.Right, dtype.Float16, 16, 16)
			c := b.tile("c", isa.Acc, dtype.Float16, 16, 16)
			b.op(isa.TMATMUL, tl(c), tl(a), tl(w))
		}, "acc tiles hold f32 or i32"},
		"vec store converts": {isa.Vector, func(b *progBuilder) {
			x := b.param("x", dtype.Float16, 256)
			v := b.tile("v", isa.Vec, dtype.Float32, 16, 16)
			b.op(isa.TSTORE, view(x, 0, 16, 16, 16), tl(v))
		}, "tstore from vec does not convert"},
		"fixpipe int8": {isa.Cube, func(b *progBuilder) {
			x := b.param("x", dtype.Int8, 256)
			c := b.tile("c", isa.Acc, dtype.Int32, 16, 16)
			b.op(isa.TSTORE, view(x, 0, 16, 16, 16), tl(c))
		}, "cannot convert i32 to i8"},
		"tmov path": {isa.Cube, func(b *progBuilder) {
			l := b.tile("l", isa.Left, dtype.Float16, 16, 16)
			m := b.tile("m", isa.Mat, dtype.Float16, 16, 16)
			b.op(isa.TMOV, tl(m), tl(l))
		}, "tmov cannot move left -> mat"},
		"add mixed dtypes": {isa.Vector, func(b *progBuilder) {
			h := b.tile("h", isa.Vec, dtype.Float16, 16, 16)
			f := b.tile("f", isa.Vec, dtype.Float32, 16, 16)
			b.op(isa.TADD, tl(f), tl(f), tl(h))
		}, "tadd does not convert"},
		"extract out of bounds": {isa.Cube, func(b *progBuilder) {
			m := b.tile("m", isa.Mat, dtype.Float16, 32, 32)
			l := b.tile("l", isa.Left, dtype.Float16, 16, 16)
			b.op(isa.TEXTRACT, tl(l), tl(m), isa.ImmOp(16), isa.ImmOp(17))
		}, "does not fit in %m"},
		"operand count": {isa.Vector, func(b *progBuilder) {
			v := b.tile("v", isa.Vec, dtype.Float16, 16, 16)
			b.op(isa.TADD, tl(v), tl(v))
		}, "takes 3 operands"},
		"operand kind": {isa.Vector, func(b *progBuilder) {
			v := b.tile("v", isa.Vec, dtype.Float16, 16, 16)
			b.op(isa.TRELU, tl(v), isa.ImmOp(1))
		}, "want tile"},
		"tile index": {isa.Vector, func(b *progBuilder) { b.op(isa.TRELU, tl(0), tl(5)) }, "declares 0 tiles"},
		"param index": {isa.Vector, func(b *progBuilder) {
			v := b.tile("v", isa.Vec, dtype.Float16, 16, 16)
			b.op(isa.TLOAD, tl(v), view(3, 0, 1, 1, 1))
		}, "refers to param 3"},
		"opcode":     {isa.Vector, func(b *progBuilder) { b.op(isa.Opcode(999)) }, "undefined opcode 999"},
		"event id":   {isa.Vector, func(b *progBuilder) { b.flag(isa.SET_FLAG, isa.PipeMTE2, isa.PipeV, 8) }, "event id 8"},
		"flag pipe":  {isa.Vector, func(b *progBuilder) { b.flag(isa.SET_FLAG, isa.PipeM, isa.PipeV, 0) }, "which a vector core does not have"},
		"flag self":  {isa.Vector, func(b *progBuilder) { b.flag(isa.SET_FLAG, isa.PipeV, isa.PipeV, 0) }, "to itself"},
		"core kind":  {isa.CoreInvalid, func(b *progBuilder) {}, "want cube or vector"},
		"tile shape": {isa.Vector, func(b *progBuilder) { b.tile("z", isa.Vec, dtype.Float16, 0, 16) }, "must be at least 1"},
	}
	for name, c := range cases {
		b := newProg(name, c.core)
		c.fn(b)
		_, err := Compile(chip, b.p)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), c.want, name)
		}
	}
	_, err := Compile(chip, nil)
	assert.Error(t, err)
	_, err = Compile(nil, newProg("x", isa.Vector).p)
	assert.Error(t, err)
}
