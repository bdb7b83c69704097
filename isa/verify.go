package isa

import (
	"fmt"
	"math"
	"strings"

	"pypto/dtype"
	"pypto/internal/checked"
)

// The verifier's rules. docs/isa.md lists the same rules for readers; the per-opcode
// type rules are the Rule column of the opcode table (verify_ops*.go implement them).
//
// Program
//   - core kind is cube or vector;
//   - params, registers and tiles have non-empty names, unique across all three (one
//     %name namespace);
//   - params have a valid dtype and Elems >= 0;
//   - tiles have a valid location and dtype and rows, cols >= 1;
//   - a vector core (AIV) has only the Vec buffer (UB), so it declares only Vec tiles;
//     a cube core (AIC) may declare every location (Vec as the target of Acc->Vec);
//   - Acc tiles hold f32 or i32 (the cube accumulates in fp32 / int32); Left and Right
//     tiles hold f16, bf16, f32 or i8 (what the cube multiplies);
//   - layouts: Vec ND or DN; Mat any; Left ND or NZ; Right ND or ZN; Acc ND or NZ;
//     Bias and Scaling ND;
//   - alignment: an ND Vec, Mat or Bias tile's row is a multiple of 32 bytes
//     (cols*size % 32 == 0), because UB and L1 are addressed in 32-byte blocks and each
//     tile row starts a block; a DN tile's column likewise (rows*size % 32 == 0); Left,
//     Right and Acc tiles have rows and cols that are multiples of 16, the cube's
//     fractal edge; NZ and ZN tiles are whole numbers of fractals (FractalShape); a
//     Scaling tile is a whole number of 32-byte blocks;
//   - valid sizes: a static valid size lies in [0, rows] / [0, cols] (0 = all); a valid
//     size given by a register names a declared register and leaves the static one 0;
//   - with a capacity function, each tile's bytes (rows*cols*size) fit cap(location).
//     Tiles are checked one by one: placing them (and reusing space) is the backend's job.
//
// Every instruction
//   - has a defined opcode, a mode the opcode takes, and exactly the operands of its
//     row in Opcodes, of the kinds listed there (a scalar is a register or an
//     immediate), with tile, param and register indices in range;
//   - a scalar immediate is an integer of magnitude at most 2^53;
//   - runs on pipes its core has: cube s, mte1, mte2, m, fix; vector s, mte2, mte3, v.
//     Location-routed instructions use the A2/A3 routing of docs/sources.md, "pto-isa" (tstore
//     from Vec on mte3, from Acc on fix; tmov Mat->Left/Right on mte1, Acc->Vec on fix,
//     Vec->Vec on v; tinsert Acc->Mat on fix, Vec->Vec on v; tpush from Acc on fix, from
//     Vec on mte3).
//
// GM views (the gm operands)
//   - rows, cols, offset and strides are >= 0, and rows/cols fit the tile's rows/cols
//     where a tile is the other side (a smaller view is an edge tile: tload zero-fills
//     the rest, tstore writes the window);
//   - a non-empty view stays inside its param: offset + (rows-1)*rowStride +
//     (cols-1)*colStride < Elems, using the static rows and cols (the bounds of register
//     sizes). An empty view (rows or cols 0) touches nothing. A view moved by an offset
//     register is checked when it runs;
//   - a store view does not write an element twice through a zero stride.
//
// Control flow (verify_flow.go)
//   - loop and endloop pair up like brackets; no instruction in a loop body writes
//     the loop's counter;
//   - events: along every path, a wait_flag consumes an event an earlier set_flag of
//     the same (src, dst, id) set and no set_flag sets an event that is still set;
//     every event set is waited for by the end; a loop body leaves the events as it
//     found them, so any trip count keeps them consistent.

// NumEventIDs is the number of event ids per pair of pipes (EVENT_ID0..7 on Ascend).
const NumEventIDs = 8

// NumQueues is the number of inter-core queues (TPUSH / TPOP / TFREE ids) per block,
// and QueueDepth the number of slots of each: two, for double buffering.
const (
	NumQueues  = 8
	QueueDepth = 2
)

// maxScalarImm bounds scalar immediates: every integer up to 2^53 is exact in float64.
const maxScalarImm = 1 << 53

// VerifyError is a rule a program breaks, with where it breaks it.
type VerifyError struct {
	Kernel string
	Index  int    // the instruction's index in Body, or -1 for the header and declarations
	Where  string // the instruction's or declaration's text; "" for the program as a whole
	Msg    string
}

func (e *VerifyError) Error() string {
	switch {
	case e.Index >= 0:
		return fmt.Sprintf("kernel %s: instr %d `%s`: %s", quoteName(e.Kernel), e.Index, e.Where, e.Msg)
	case e.Where != "":
		return fmt.Sprintf("kernel %s: %s: %s", quoteName(e.Kernel), e.Where, e.Msg)
	}
	return fmt.Sprintf("kernel %s: %s", quoteName(e.Kernel), e.Msg)
}

// Verify checks p against the rules above and returns the first broken one as a
// *VerifyError. capacity gives each location's size in bytes; nil skips that check.
func Verify(p *Program, capacity func(Location) int) error {
	if p == nil {
		return &VerifyError{Index: -1, Msg: "nil program"}
	}
	v := &verifier{p: p, capacity: capacity}
	fail := func(where, msg string) error { return &VerifyError{Kernel: p.Name, Index: -1, Where: where, Msg: msg} }
	if p.Core != Cube && p.Core != Vector {
		return fail("", fmt.Sprintf("core kind is %s, want cube or vector", p.Core))
	}
	names := map[string]string{}
	unique := func(name, where string) string {
		switch prev, dup := names[name]; {
		case name == "":
			return "name is empty"
		case dup:
			return "name is already used by " + prev
		}
		names[name] = where
		return ""
	}
	for _, prm := range p.Params {
		where := "param " + formatParam(prm)
		if msg := unique(prm.Name, where); msg != "" {
			return fail(where, msg)
		}
		if msg := checkParam(prm); msg != "" {
			return fail(where, msg)
		}
	}
	for _, r := range p.Regs {
		where := "reg %" + quoteName(r.Name)
		if msg := unique(r.Name, where); msg != "" {
			return fail(where, msg)
		}
	}
	for _, t := range p.Tiles {
		where := "tile " + formatTile(p, t)
		if msg := unique(t.Name, where); msg != "" {
			return fail(where, msg)
		}
		if msg := v.tile(t); msg != "" {
			return fail(where, msg)
		}
	}
	for i, in := range p.Body {
		if msg := v.instr(in); msg != "" {
			return &VerifyError{Kernel: p.Name, Index: i, Where: FormatInstr(p, in), Msg: msg}
		}
	}
	if i, msg := checkFlow(p); msg != "" {
		where := ""
		if i >= 0 && i < len(p.Body) {
			where = FormatInstr(p, p.Body[i])
		}
		return &VerifyError{Kernel: p.Name, Index: i, Where: where, Msg: msg}
	}
	return nil
}

type verifier struct {
	p        *Program
	capacity func(Location) int
}

func checkParam(prm Param) string {
	switch {
	case !prm.DType.Valid():
		return fmt.Sprintf("invalid dtype %s", prm.DType)
	case prm.Elems < 0:
		return fmt.Sprintf("negative element count %d", prm.Elems)
	}
	if _, ok := prm.Bytes(); !ok {
		return "more bytes than a 64-bit size can count"
	}
	return ""
}

// layoutsAt are the layouts a tile may have in each location.
var layoutsAt = map[Location][]Layout{
	Vec:     {LayoutND, LayoutDN},
	Mat:     {LayoutND, LayoutDN, LayoutNZ, LayoutZN},
	Left:    {LayoutND, LayoutNZ},
	Right:   {LayoutND, LayoutZN},
	Acc:     {LayoutND, LayoutNZ},
	Bias:    {LayoutND},
	Scaling: {LayoutND},
}

func (v *verifier) tile(t TileDecl) string {
	switch {
	case t.Loc == LocInvalid || int(t.Loc) >= NumLocations:
		return fmt.Sprintf("invalid location %s", t.Loc)
	case !t.DType.Valid():
		return fmt.Sprintf("invalid dtype %s", t.DType)
	case t.Rows < 1 || t.Cols < 1:
		return fmt.Sprintf("shape %dx%d: rows and cols must be at least 1", t.Rows, t.Cols)
	case v.p.Core == Vector && t.Loc != Vec:
		return fmt.Sprintf("a vector core has only the vec buffer, not %s", t.Loc)
	case t.Loc == Acc && t.DType != dtype.Float32 && t.DType != dtype.Int32:
		return fmt.Sprintf("acc tiles hold f32 or i32, not %s", t.DType)
	case (t.Loc == Left || t.Loc == Right) && !isCubeInput(t.DType):
		return fmt.Sprintf("%s tiles hold f16, bf16, f32 or i8, not %s", t.Loc, t.DType)
	case !inLayouts(t.Layout, layoutsAt[t.Loc]):
		return fmt.Sprintf("%s tiles cannot have layout %s (allowed: %s)", t.Loc, t.Layout, layoutList(layoutsAt[t.Loc]))
	}
	if msg := checkAlignment(t); msg != "" {
		return msg
	}
	if msg := v.validSize("rows", t.ValidRows, t.ValidRowsReg, t.Rows); msg != "" {
		return msg
	}
	if msg := v.validSize("cols", t.ValidCols, t.ValidColsReg, t.Cols); msg != "" {
		return msg
	}
	if v.capacity != nil {
		size, ok := tileBytes(t)
		if c := v.capacity(t.Loc); !ok || size > c {
			return fmt.Sprintf("tile needs %s bytes, the %s buffer holds %d", byteCount(size, ok), t.Loc, c)
		}
	}
	return ""
}

func checkAlignment(t TileDecl) string {
	switch t.Loc {
	case Vec, Mat, Bias:
		switch t.Layout {
		case LayoutND:
			if rowBytes, ok := checked.Mul(t.Cols, t.DType.Size()); !ok || rowBytes%32 != 0 {
				return fmt.Sprintf("row of %d x %s is not a multiple of 32 bytes", t.Cols, t.DType)
			}
		case LayoutDN:
			if colBytes, ok := checked.Mul(t.Rows, t.DType.Size()); !ok || colBytes%32 != 0 {
				return fmt.Sprintf("column of %d x %s (dn) is not a multiple of 32 bytes", t.Rows, t.DType)
			}
		}
	case Left, Right, Acc:
		if t.Rows%16 != 0 || t.Cols%16 != 0 {
			return fmt.Sprintf("%s tile shape %dx%d is not a multiple of 16x16", t.Loc, t.Rows, t.Cols)
		}
	case Scaling:
		if size, ok := tileBytes(t); !ok || size%32 != 0 {
			return fmt.Sprintf("scaling tile of %s bytes is not a multiple of 32 bytes", byteCount(size, ok))
		}
	}
	if fr, fc := t.FractalShape(); t.Rows%fr != 0 || t.Cols%fc != 0 {
		return fmt.Sprintf("%s %s tile shape %dx%d is not a whole number of %dx%d fractals", t.Layout, t.DType, t.Rows, t.Cols, fr, fc)
	}
	return ""
}

func (v *verifier) validSize(what string, n int, r RegRef, full int) string {
	if i, ok := r.Index(); ok {
		switch {
		case i >= len(v.p.Regs):
			return fmt.Sprintf("valid %s refer to register %d, but the program declares %d registers", what, i, len(v.p.Regs))
		case n != 0:
			return fmt.Sprintf("valid %s come from a register and also from the number %d", what, n)
		}
		return ""
	}
	if r < 0 {
		return fmt.Sprintf("valid %s register reference %d is negative", what, r)
	}
	if n < 0 || n > full {
		return fmt.Sprintf("valid %s %d outside [0, %d]", what, n, full)
	}
	return ""
}

func tileBytes(t TileDecl) (int, bool) {
	size, ok := checked.Mul(t.Rows, t.Cols)
	if ok {
		size, ok = checked.Mul(size, t.DType.Size())
	}
	return size, ok
}

func inLayouts(l Layout, ls []Layout) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

func layoutList(ls []Layout) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ", ")
}

func byteCount(n int, ok bool) string {
	if !ok {
		return "more than " + fmt.Sprint(math.MaxInt)
	}
	return fmt.Sprint(n)
}

func isCubeInput(d dtype.DType) bool {
	return d == dtype.Float16 || d == dtype.BFloat16 || d == dtype.Float32 || d == dtype.Int8
}

// instr returns what is wrong with an instruction, or "".
func (v *verifier) instr(in Instr) string {
	if in.Op == OpInvalid || int(in.Op) >= NumOpcodes() {
		return fmt.Sprintf("undefined opcode %d", uint16(in.Op))
	}
	info := in.Op.Info()
	if !in.Op.Takes(in.Mode) {
		return modeMessage(in)
	}
	if len(in.Args) != len(info.Operands) {
		return fmt.Sprintf("%s takes %d operands (%s), has %d", in.Op, len(info.Operands), kindList(info.Operands), len(in.Args))
	}
	for i, a := range in.Args {
		if msg := v.operand(i, a, info.Operands[i]); msg != "" {
			return msg
		}
	}
	check := opRules[in.Op]
	if check == nil {
		return fmt.Sprintf("no verifier rule for %s", in.Op) // a new opcode needs its rules
	}
	if msg := check(v, in); msg != "" {
		return msg
	}
	return v.pipesOnCore(in)
}

func modeMessage(in Instr) string {
	info := in.Op.Info()
	names := make([]string, len(info.Modes))
	for i, m := range info.Modes {
		names[i] = "." + m.String()
	}
	switch {
	case len(info.Modes) == 0:
		return fmt.Sprintf("%s takes no mode, has mode %d (%s)", in.Op, in.Mode, in.Mode)
	case in.Mode == ModeNone:
		return fmt.Sprintf("%s needs a mode (%s)", in.Op, strings.Join(names, " "))
	}
	return fmt.Sprintf("%s does not take mode %d (%s); it takes %s", in.Op, in.Mode, in.Mode, strings.Join(names, " "))
}

func (v *verifier) operand(i int, a Operand, want OperandKind) string {
	if !want.Accepts(a.Kind) {
		return fmt.Sprintf("operand %d is a %s operand, want %s", i+1, a.Kind, want)
	}
	switch a.Kind {
	case KindTile:
		if a.Tile < 0 || a.Tile >= len(v.p.Tiles) {
			return fmt.Sprintf("operand %d refers to tile %d, but the program declares %d tiles", i+1, a.Tile, len(v.p.Tiles))
		}
	case KindGM:
		if a.GM.Param < 0 || a.GM.Param >= len(v.p.Params) {
			return fmt.Sprintf("operand %d refers to param %d, but the program declares %d params", i+1, a.GM.Param, len(v.p.Params))
		}
		for _, r := range []RegRef{a.GM.OffsetReg, a.GM.RowsReg, a.GM.ColsReg} {
			if idx, ok := r.Index(); r < 0 || ok && idx >= len(v.p.Regs) {
				return fmt.Sprintf("operand %d's view refers to register %d, but the program declares %d registers", i+1, idx, len(v.p.Regs))
			}
		}
	case KindPipe:
		if a.Pipe == PipeInvalid || a.Pipe > PipeAll {
			return fmt.Sprintf("operand %d is not a valid pipe", i+1)
		}
	case KindReg:
		if a.Reg < 0 || a.Reg >= len(v.p.Regs) {
			return fmt.Sprintf("operand %d refers to register %d, but the program declares %d registers", i+1, a.Reg, len(v.p.Regs))
		}
	case KindImm:
		if want == KindScalar && (a.Imm != math.Trunc(a.Imm) || math.Abs(a.Imm) > maxScalarImm) {
			return fmt.Sprintf("operand %d: scalar %v is not an integer of magnitude at most 2^53", i+1, a.Imm)
		}
	}
	return ""
}

// corePipes are the pipes each kind of core has (see CoreKind).
var corePipes = map[CoreKind][]Pipe{
	Cube:   {PipeS, PipeMTE1, PipeMTE2, PipeM, PipeFIX},
	Vector: {PipeS, PipeMTE2, PipeMTE3, PipeV},
}

// pipesOnCore checks that every pipe the instruction uses exists on the program's core.
// Run after the per-opcode rules, which guarantee the locations routing relies on.
func (v *verifier) pipesOnCore(in Instr) string {
	info := in.Op.Info()
	var used []Pipe
	switch info.PipeClass {
	case PipeClassFixed:
		used = []Pipe{info.Pipe}
	case PipeClassByLocation:
		used = []Pipe{ReferenceRoute(v.p, in)}
	case PipeClassFlagSource, PipeClassFlagDest:
		used = []Pipe{in.Args[0].Pipe, in.Args[1].Pipe}
	case PipeClassBarrier:
		if in.Args[0].Pipe != PipeAll {
			used = []Pipe{in.Args[0].Pipe}
		}
	}
	have := corePipes[v.p.Core]
	for _, u := range used {
		found := false
		for _, h := range have {
			found = found || h == u
		}
		if !found {
			names := make([]string, len(have))
			for i, h := range have {
				names[i] = h.String()
			}
			return fmt.Sprintf("uses pipe %s, which a %s core does not have (it has %s)", u, v.p.Core, strings.Join(names, ", "))
		}
	}
	return ""
}

// ReferenceRoute is the pipe of a location-routed instruction in the A2/A3 routing
// that the opcode docs state (PipeInvalid for a combination the verifier rejects).
// Backends route for their own chip; the verifier uses this only to decide which core
// kind an instruction can belong to. The instruction's operands must be in range.
func ReferenceRoute(p *Program, in Instr) Pipe {
	loc := func(i int) Location { return p.Tiles[in.Args[i].Tile].Loc }
	switch in.Op {
	case TSTORE:
		if loc(1) == Acc {
			return PipeFIX
		}
		return PipeMTE3
	case TMOV:
		switch src, dst := loc(1), loc(0); {
		case src == Mat:
			return PipeMTE1
		case src == Acc:
			return PipeFIX
		case dst == Vec:
			return PipeV
		}
	case TINSERT:
		switch loc(1) {
		case Acc:
			return PipeFIX
		case Vec:
			return PipeV
		}
	case TPUSH:
		switch loc(1) {
		case Acc:
			return PipeFIX
		case Vec:
			return PipeMTE3
		}
	}
	return PipeInvalid
}
