package device

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// randomProgram draws a program of random instructions whose operands have the right
// kinds but arbitrary tiles, windows and immediates: most are rejected by Compile,
// some compile and run. Neither may end in a recovered panic ("internal error").
// Half the programs use one dtype, aligned tile shapes and in-range windows, so that
// more of them pass the verifier and reach the simulator.
func randomProgram(rng *rand.Rand) *isa.Program {
	core := []isa.CoreKind{isa.Cube, isa.Vector}[rng.IntN(2)]
	b := newProg("random", core)
	dts := []dtype.DType{dtype.Float16, dtype.Float32, dtype.BFloat16, dtype.Int8, dtype.Int32}
	tame := rng.IntN(2) == 0
	dt0 := []dtype.DType{dtype.Float32, dtype.Int32}[rng.IntN(2)]
	pick := func() dtype.DType {
		if tame && rng.IntN(4) > 0 {
			return dt0
		}
		return dts[rng.IntN(len(dts))]
	}
	for range 1 + rng.IntN(3) {
		n := rng.IntN(600)
		if tame {
			n = 4096
		}
		b.param("p", pick(), n)
	}
	locs := []isa.Location{isa.Vec}
	if core == isa.Cube {
		locs = []isa.Location{isa.Mat, isa.Left, isa.Right, isa.Acc}
	}
	for range 1 + rng.IntN(5) {
		rows, cols := 1+rng.IntN(20), 1+rng.IntN(20)
		if tame {
			rows, cols = []int{1, 16, 32}[rng.IntN(3)], []int{16, 32, 64}[rng.IntN(3)]
		}
		b.tile("t", locs[rng.IntN(len(locs))], pick(), rows, cols)
	}
	pipes := []isa.Pipe{isa.PipeMTE2, isa.PipeMTE1, isa.PipeM, isa.PipeFIX, isa.PipeV, isa.PipeMTE3, isa.PipeS, isa.PipeAll}
	for i := range 1 + rng.IntN(3) {
		b.p.Regs = append(b.p.Regs, isa.RegDecl{Name: fmt.Sprintf("r%d", i)})
	}
	for range rng.IntN(12) {
		op := isa.Opcode(1 + rng.IntN(isa.NumOpcodes()-1))
		var args []isa.Operand
		for _, k := range op.Info().Operands {
			if k == isa.KindScalar {
				k = []isa.OperandKind{isa.KindReg, isa.KindImm}[rng.IntN(2)]
			}
			switch k {
			case isa.KindReg:
				args = append(args, isa.RegOp(rng.IntN(len(b.p.Regs))))
			case isa.KindTile:
				args = append(args, tl(rng.IntN(len(b.p.Tiles))))
			case isa.KindGM:
				v := isa.GMView{Param: rng.IntN(len(b.p.Params)), Offset: rng.IntN(40) - 5,
					Rows: rng.IntN(22), Cols: rng.IntN(22), RowStride: rng.IntN(30) - 3, ColStride: rng.IntN(4) - 1}
				if tame {
					v = isa.GMView{Param: v.Param, Rows: 1 + rng.IntN(16), Cols: 1 + rng.IntN(16), RowStride: 64, ColStride: 1}
					if rng.IntN(3) == 0 {
						v.OffsetReg = isa.UseReg(rng.IntN(len(b.p.Regs)))
					}
				}
				args = append(args, isa.GMOp(v))
			case isa.KindImm:
				args = append(args, isa.ImmOp(float64(rng.IntN(20)-2)))
			case isa.KindPipe:
				args = append(args, isa.PipeOp(pipes[rng.IntN(len(pipes))]))
			}
		}
		in := isa.Instr{Op: op, Args: args}
		if modes := op.Info().Modes; len(modes) > 0 && rng.IntN(3) > 0 {
			in.Mode = modes[rng.IntN(len(modes))]
		}
		b.p.Body = append(b.p.Body, in)
	}
	return b.p
}

func TestRandomProgramsNeverPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 12))
	chip := preset(t, "tiny")
	compiled, ran := 0, 0
	for range 20000 {
		p := randomProgram(rng)
		m, err := Compile(chip, p)
		if err != nil {
			require.NotContains(t, err.Error(), "internal error", "%+v", p)
			continue
		}
		compiled++
		addrs := make([]int, len(p.Params))
		off := 0
		for i, prm := range p.Params {
			addrs[i] = off
			off += prm.Elems*prm.DType.Size() + 32
		}
		gm := make([]byte, off)
		for i := range gm {
			gm[i] = byte(rng.IntN(256))
		}
		_, err = RunTask(chip, gm, p.Core, []Block{{Prog: m, ParamAddrs: addrs}}, RunOptions{Trace: true})
		if err != nil {
			require.NotContains(t, err.Error(), "internal error", "%s", m)
			continue
		}
		ran++
	}
	t.Logf("%d compiled, %d ran", compiled, ran)
	require.Positive(t, ran)
}
