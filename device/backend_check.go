package device

import (
	"errors"
	"fmt"

	"pypto/isa"
)

// The backend's checks. The ISA's own rules (operand kinds and indices, locations,
// dtypes, shapes, alignment, loops and events) are isa.Verify's: every program goes
// through it first, so the opTable entries may rely on them. What remains here is
// what this chip adds: the buffers and pipes its cores have. Value rules that depend on
// run-time data (GM addresses, register values) are the simulator's.

// checkProgram validates p with the ISA verifier and against the chip's cores.
func checkProgram(chip *Chip, p *isa.Program) error {
	if err := isa.Verify(p, chip.Capacity); err != nil {
		ce := &CompileError{Program: p.Name, PC: -1, Msg: err.Error()}
		var ve *isa.VerifyError
		if errors.As(err, &ve) {
			ce.Msg = ve.Msg
			if ve.Index >= 0 {
				ce.PC, ce.Instr = ve.Index, ve.Where
			} else if ve.Where != "" {
				ce.Msg = ve.Where + ": " + ve.Msg
			}
		}
		return ce
	}
	for i, t := range p.Tiles {
		if !chip.HasLocation(p.Core, t.Loc) {
			return &CompileError{Program: p.Name, PC: -1, Msg: fmt.Sprintf("tile %d (%s) is in %s, which a %s core of chip %s does not have (it has %v)",
				i, t.Name, t.Loc, p.Core, chip.Name, chip.CoreLocations[p.Core])}
		}
	}
	return nil
}

// checkInstr routes instruction pc of p (already verified) and checks that the chip's
// core has the pipe.
func checkInstr(chip *Chip, p *isa.Program, pc int) (isa.Pipe, error) {
	in := p.Body[pc]
	fail := func(format string, args ...any) (isa.Pipe, error) {
		return isa.PipeInvalid, &CompileError{Program: p.Name, PC: pc, Instr: sourceInstrString(p, pc), Msg: fmt.Sprintf(format, args...)}
	}
	pipe, msg := checkSemantics(chip, p, in)
	if msg != "" {
		return fail("%s", msg)
	}
	if pipe != isa.PipeS && !HasPipe(p.Core, pipe) {
		return fail("%s runs on pipe %s, which a %s core does not have", in.Op, pipe, p.Core)
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

// checkCtx is what a route function of opTable sees: the chip and the program.
type checkCtx struct {
	chip *Chip
	p    *isa.Program
}

// tile is the declaration of the tile operand i of in (indices are already checked).
func (ck *checkCtx) tile(in isa.Instr, i int) isa.TileDecl { return ck.p.Tiles[in.Args[i].Tile] }

// checkSemantics resolves the pipe of an instruction with its opTable entry: the
// entry's route function, or the fixed pipe of the ISA's table. It returns a message
// instead of an error so that checkInstr wraps every failure the same way.
func checkSemantics(chip *Chip, p *isa.Program, in isa.Instr) (isa.Pipe, string) {
	impl := lookupOp(in.Op)
	switch {
	case impl == nil:
		return 0, fmt.Sprintf("the device does not support %s", in.Op)
	case impl.route != nil:
		return impl.route(&checkCtx{chip: chip, p: p}, in)
	}
	info := in.Op.Info()
	if info.PipeClass != isa.PipeClassFixed {
		return 0, fmt.Sprintf("internal: %s is routed by its operands but has no route", in.Op)
	}
	return info.Pipe, ""
}
