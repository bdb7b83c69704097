package device

import (
	"fmt"
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// The backend checks everything it and the simulator rely on, independently of the isa
// verifier: a program reaching Compile through any path must fail with a message, never
// index out of range later. Value rules that depend on run-time data (GM addresses)
// are the simulator's.

// checkProgram validates the declarations of p for a core of the chip.
func checkProgram(chip *Chip, p *isa.Program) error {
	fail := func(format string, args ...any) error {
		return &CompileError{Program: p.Name, PC: -1, Msg: fmt.Sprintf(format, args...)}
	}
	if p.Core != isa.Cube && p.Core != isa.Vector {
		return fail("program core kind %s is neither cube nor vector", p.Core)
	}
	for i, prm := range p.Params {
		if !prm.DType.Valid() {
			return fail("param %d (%s) has invalid dtype %s", i, prm.Name, prm.DType)
		}
		if prm.Elems < 0 {
			return fail("param %d (%s) has negative size %d", i, prm.Name, prm.Elems)
		}
	}
	for i, t := range p.Tiles {
		switch {
		case !t.DType.Valid():
			return fail("tile %d (%s) has invalid dtype %s", i, t.Name, t.DType)
		case t.Rows < 1 || t.Cols < 1:
			return fail("tile %d (%s) has shape %dx%d; tiles need at least one row and column", i, t.Name, t.Rows, t.Cols)
		case t.Loc == isa.LocInvalid || !chip.HasLocation(p.Core, t.Loc):
			return fail("tile %d (%s) is in %s, which a %s core of chip %s does not have (it has %v)",
				i, t.Name, t.Loc, p.Core, chip.Name, chip.CoreLocations[p.Core])
		}
	}
	return nil
}

// checkInstr validates instruction pc of p and returns the pipe that runs it.
func checkInstr(chip *Chip, p *isa.Program, pc int) (isa.Pipe, error) {
	in := p.Body[pc]
	fail := func(format string, args ...any) (isa.Pipe, error) {
		return isa.PipeInvalid, &CompileError{Program: p.Name, PC: pc, Instr: sourceInstrString(p, pc), Msg: fmt.Sprintf(format, args...)}
	}
	if in.Op == isa.OpInvalid || int(in.Op) >= isa.NumOpcodes() {
		return fail("invalid opcode %d", in.Op)
	}
	info := in.Op.Info()
	if len(in.Args) != len(info.Operands) {
		return fail("%s takes %d operands, got %d", info.Name, len(info.Operands), len(in.Args))
	}
	for i, a := range in.Args {
		if a.Kind != info.Operands[i] {
			return fail("operand %d of %s must be a %s, got a %s", i, info.Name, info.Operands[i], a.Kind)
		}
		switch a.Kind {
		case isa.KindTile:
			if a.Tile < 0 || a.Tile >= len(p.Tiles) {
				return fail("operand %d names tile %d; the program declares %d", i, a.Tile, len(p.Tiles))
			}
		case isa.KindGM:
			if msg := checkView(p.Params, a.GM); msg != "" {
				return fail("operand %d: %s", i, msg)
			}
		case isa.KindImm:
			if math.IsNaN(a.Imm) || math.IsInf(a.Imm, 0) {
				return fail("operand %d is not a finite number", i)
			}
		}
	}
	pipe, msg := checkSemantics(chip, p, in)
	if msg != "" {
		return fail("%s", msg)
	}
	if pipe != isa.PipeS && !HasPipe(p.Core, pipe) {
		return fail("%s runs on pipe %s, which a %s core does not have", info.Name, pipe, p.Core)
	}
	return pipe, nil
}

// checkView checks a GM window against its param: every element it touches must lie
// inside the param. An empty window (0 rows or cols) touches nothing and is allowed:
// the compiler emits one for a zero-sized K step, and TLOAD then only zero-fills.
func checkView(params []isa.Param, v isa.GMView) string {
	if v.Param < 0 || v.Param >= len(params) {
		return fmt.Sprintf("GM view names param %d; the program has %d", v.Param, len(params))
	}
	if v.Rows < 0 || v.Cols < 0 {
		return fmt.Sprintf("GM view has negative shape %dx%d", v.Rows, v.Cols)
	}
	lo, hi, empty := viewSpan(v)
	if empty {
		return ""
	}
	prm := params[v.Param]
	if lo < 0 || hi >= prm.Elems {
		return fmt.Sprintf("GM view of %s touches elements %d..%d, outside its %d elements", prm.Name, lo, hi, prm.Elems)
	}
	return ""
}

// viewSpan is the lowest and highest element index a view touches (strides may be
// zero or negative).
func viewSpan(v isa.GMView) (lo, hi int, empty bool) {
	if v.Rows <= 0 || v.Cols <= 0 {
		return 0, 0, true
	}
	lo, hi = v.Offset, v.Offset
	for _, d := range [2]int{(v.Rows - 1) * v.RowStride, (v.Cols - 1) * v.ColStride} {
		if d < 0 {
			lo += d
		} else {
			hi += d
		}
	}
	return lo, hi, false
}

// numeric dtypes the vector and cube arithmetic accept (bool only converts).
func numeric(d dtype.DType) bool { return d.IsFloat() || d.IsInt() }

// fixpipeConverts reports whether the fixpipe can write an L0C value of type from as
// type to: fp32 accumulators leave as fp32, fp16 or bf16 (rounding to nearest even),
// int32 accumulators as int32 (quantisation is later work).
func fixpipeConverts(from, to dtype.DType) bool {
	switch from {
	case dtype.Float32:
		return to == dtype.Float32 || to == dtype.Float16 || to == dtype.BFloat16
	case dtype.Int32:
		return to == dtype.Int32
	}
	return false
}

// checkCtx is what a route function of opTable sees: the chip and the program.
type checkCtx struct {
	chip *Chip
	p    *isa.Program
}

// tile is the declaration of the tile operand i of in (indices are already checked).
func (ck *checkCtx) tile(in isa.Instr, i int) isa.TileDecl { return ck.p.Tiles[in.Args[i].Tile] }

// checkSemantics applies the per-opcode rules of opTable and resolves the pipe. It
// returns a message instead of an error so that checkInstr wraps every failure the
// same way.
func checkSemantics(chip *Chip, p *isa.Program, in isa.Instr) (isa.Pipe, string) {
	impl := lookupOp(in.Op)
	if impl == nil || impl.route == nil {
		return 0, fmt.Sprintf("the backend does not support %s", in.Op)
	}
	return impl.route(&checkCtx{chip: chip, p: p}, in)
}
