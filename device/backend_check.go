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

// checkSemantics applies the per-opcode rules on locations, shapes and dtypes and
// resolves the pipe. It returns a message instead of an error so that checkInstr
// wraps every failure the same way.
func checkSemantics(chip *Chip, p *isa.Program, in isa.Instr) (isa.Pipe, string) {
	tile := func(i int) isa.TileDecl { return p.Tiles[in.Args[i].Tile] }
	info := in.Op.Info()
	switch in.Op {
	case isa.TLOAD:
		dst, v := tile(0), in.Args[1].GM
		prm := p.Params[v.Param]
		if dst.Loc != isa.Mat && dst.Loc != isa.Vec {
			return 0, fmt.Sprintf("tload writes %s tile %s; MTE2 loads GM into mat (L1) or vec (UB) only", dst.Loc, dst.Name)
		}
		if v.Rows > dst.Rows || v.Cols > dst.Cols {
			return 0, fmt.Sprintf("GM window %dx%d is larger than tile %s (%dx%d)", v.Rows, v.Cols, dst.Name, dst.Rows, dst.Cols)
		}
		if prm.DType != dst.DType {
			return 0, fmt.Sprintf("tload does not convert: param %s is %s, tile %s is %s", prm.Name, prm.DType, dst.Name, dst.DType)
		}
		return isa.PipeMTE2, ""
	case isa.TSTORE:
		v, src := in.Args[0].GM, tile(1)
		prm := p.Params[v.Param]
		if v.Rows > src.Rows || v.Cols > src.Cols {
			return 0, fmt.Sprintf("GM window %dx%d is larger than tile %s (%dx%d)", v.Rows, v.Cols, src.Name, src.Rows, src.Cols)
		}
		switch src.Loc {
		case isa.Vec:
			if prm.DType != src.DType {
				return 0, fmt.Sprintf("MTE3 does not convert: tile %s is %s, param %s is %s (convert with tcvt first)", src.Name, src.DType, prm.Name, prm.DType)
			}
			return isa.PipeMTE3, ""
		case isa.Acc:
			if !fixpipeConverts(src.DType, prm.DType) {
				return 0, fmt.Sprintf("the fixpipe cannot store %s tile %s as %s", src.DType, src.Name, prm.DType)
			}
			return isa.PipeFIX, ""
		}
		return 0, fmt.Sprintf("tstore reads %s tile %s; only vec (MTE3) and acc (FIX) tiles can be stored", src.Loc, src.Name)
	case isa.TMOV:
		dst, src := tile(0), tile(1)
		if dst.Rows != src.Rows || dst.Cols != src.Cols {
			return 0, fmt.Sprintf("tmov copies a whole tile: %s is %dx%d, %s is %dx%d", dst.Name, dst.Rows, dst.Cols, src.Name, src.Rows, src.Cols)
		}
		switch {
		case src.Loc == isa.Mat && (dst.Loc == isa.Left || dst.Loc == isa.Right):
			if dst.DType != src.DType {
				return 0, fmt.Sprintf("MTE1 does not convert: %s is %s, %s is %s", src.Name, src.DType, dst.Name, dst.DType)
			}
			return isa.PipeMTE1, ""
		case src.Loc == isa.Acc && dst.Loc == isa.Vec:
			if !fixpipeConverts(src.DType, dst.DType) {
				return 0, fmt.Sprintf("the fixpipe cannot move %s tile %s to %s", src.DType, src.Name, dst.DType)
			}
			return isa.PipeFIX, ""
		case src.Loc == isa.Vec && dst.Loc == isa.Vec:
			return isa.PipeV, ""
		}
		return 0, fmt.Sprintf("no tmov path from %s to %s (mat->left/right, acc->vec, vec->vec)", src.Loc, dst.Loc)
	case isa.TEXTRACT:
		dst, src := tile(0), tile(1)
		r, c := in.Args[2].Imm, in.Args[3].Imm
		if src.Loc != isa.Mat || (dst.Loc != isa.Left && dst.Loc != isa.Right) {
			return 0, fmt.Sprintf("textract copies mat -> left/right, not %s -> %s", src.Loc, dst.Loc)
		}
		if dst.DType != src.DType {
			return 0, fmt.Sprintf("textract does not convert: %s is %s, %s is %s", src.Name, src.DType, dst.Name, dst.DType)
		}
		if r != math.Trunc(r) || c != math.Trunc(c) || r < 0 || c < 0 {
			return 0, fmt.Sprintf("sub-tile offset (%g, %g) must be non-negative integers", r, c)
		}
		if int(r)+dst.Rows > src.Rows || int(c)+dst.Cols > src.Cols {
			return 0, fmt.Sprintf("sub-tile %dx%d at (%d, %d) leaves %s (%dx%d)", dst.Rows, dst.Cols, int(r), int(c), src.Name, src.Rows, src.Cols)
		}
		return isa.PipeMTE1, ""
	case isa.TMATMUL, isa.TMATMUL_ACC:
		dst, a, b := tile(0), tile(1), tile(2)
		if dst.Loc != isa.Acc || a.Loc != isa.Left || b.Loc != isa.Right {
			return 0, fmt.Sprintf("%s needs acc = left x right, got %s = %s x %s", info.Name, dst.Loc, a.Loc, b.Loc)
		}
		if a.Cols != b.Rows || dst.Rows != a.Rows || dst.Cols != b.Cols {
			return 0, fmt.Sprintf("shapes do not chain: %s %dx%d = %s %dx%d x %s %dx%d",
				dst.Name, dst.Rows, dst.Cols, a.Name, a.Rows, a.Cols, b.Name, b.Rows, b.Cols)
		}
		ok := a.DType == b.DType && (a.DType.IsFloat() && dst.DType == dtype.Float32 ||
			a.DType == dtype.Int8 && dst.DType == dtype.Int32)
		if !ok {
			return 0, fmt.Sprintf("the cube computes f16/bf16/f32 x same -> f32 or i8 x i8 -> i32, not %s x %s -> %s", a.DType, b.DType, dst.DType)
		}
		return isa.PipeM, ""
	case isa.TADD, isa.TMUL, isa.TRELU, isa.TCVT:
		dst := tile(0)
		for i := range in.Args {
			t := tile(i)
			if t.Loc != isa.Vec {
				return 0, fmt.Sprintf("%s works on vec tiles; %s is in %s", info.Name, t.Name, t.Loc)
			}
			if t.Rows != dst.Rows || t.Cols != dst.Cols {
				return 0, fmt.Sprintf("%s needs equal shapes: %s is %dx%d, %s is %dx%d", info.Name, dst.Name, dst.Rows, dst.Cols, t.Name, t.Rows, t.Cols)
			}
			// Arithmetic operands share the destination's dtype, as on the hardware;
			// that is also what makes computing in float32 correctly rounded.
			if in.Op != isa.TCVT && (t.DType != dst.DType || !numeric(t.DType)) {
				return 0, fmt.Sprintf("%s needs operands of one numeric dtype: %s is %s, %s is %s", info.Name, dst.Name, dst.DType, t.Name, t.DType)
			}
		}
		return isa.PipeV, ""
	case isa.SET_FLAG, isa.WAIT_FLAG:
		src, dst, id := in.Args[0].Pipe, in.Args[1].Pipe, in.Args[2].Imm
		for _, q := range [2]isa.Pipe{src, dst} {
			if q == isa.PipeS || !HasPipe(p.Core, q) {
				return 0, fmt.Sprintf("%s between %s and %s: pipe %s is not a flag endpoint of a %s core", info.Name, src, dst, q, p.Core)
			}
		}
		if src == dst {
			return 0, fmt.Sprintf("%s from pipe %s to itself; a pipe is in order (use tsync)", info.Name, src)
		}
		if id != math.Trunc(id) || id < 0 || int(id) >= chip.FlagEventIDs {
			return 0, fmt.Sprintf("event id %g is not one of the chip's %d ids", id, chip.FlagEventIDs)
		}
		if in.Op == isa.SET_FLAG {
			return src, ""
		}
		return dst, ""
	case isa.TSYNC:
		q := in.Args[0].Pipe
		if q == isa.PipeAll {
			return isa.PipeS, "" // a full barrier stops issue on the scalar pipe
		}
		if q == isa.PipeS || !HasPipe(p.Core, q) {
			return 0, fmt.Sprintf("tsync on pipe %s, which a %s core does not have", q, p.Core)
		}
		return q, ""
	}
	return 0, fmt.Sprintf("the backend does not support %s", info.Name)
}
