package isa

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"pypto/dtype"
)

// The verifier's rules. docs/isa.md lists the same rules for readers; keep them in step.
//
// Program
//   - core kind is cube or vector;
//   - params and tiles have non-empty names, unique across both (one %name namespace);
//   - params have a valid dtype and Elems >= 0;
//   - tiles have a valid location and dtype and rows, cols >= 1;
//   - a vector core (AIV) has only the Vec buffer (UB), so it declares only Vec tiles;
//     a cube core (AIC) may declare every location (Vec as the target of Acc->Vec);
//   - Acc tiles hold f32 or i32 (the cube accumulates in fp32 / int32); Left and Right
//     tiles hold f16, bf16, f32 or i8 (what the cube multiplies);
//   - alignment: a Vec, Mat or Bias tile's row is a multiple of 32 bytes
//     (cols*size % 32 == 0), because UB and L1 are addressed in 32-byte blocks and each
//     tile row starts a block; Left, Right and Acc tiles have rows and cols that are
//     multiples of 16, the cube's fractal edge;
//   - with a capacity function, each tile's bytes (rows*cols*size) fit cap(location).
//     Tiles are checked one by one: placing them (and reusing space) is the backend's job.
//
// Every instruction
//   - has a defined opcode and exactly the operands of its row in Opcodes, of the kinds
//     listed there, with tile and param indices in range;
//   - runs on pipes its core has: cube s, mte1, mte2, m, fix; vector s, mte2, mte3, v.
//     Location-routed instructions use the A2/A3 routing of reference/pto-isa.md (tstore
//     from Vec on mte3, from Acc on fix; tmov Mat->Left/Right on mte1, Acc->Vec on fix,
//     Vec->Vec on v).
//
// GM views (tload source, tstore destination)
//   - rows, cols, offset and strides are >= 0, and rows/cols fit the tile's rows/cols (a
//     smaller view is an edge tile: tload zero-fills the rest, tstore writes the window);
//   - a non-empty view stays inside its param: offset + (rows-1)*rowStride +
//     (cols-1)*colStride < Elems. An empty view (rows or cols 0) touches nothing;
//   - a tstore view does not write an element twice through a zero stride.
//
// Per opcode
//   - tload: dst in Mat or Vec. GM feeds L1 and UB on every chip (MTE2); L0A/L0B are
//     filled from L1 by tmov/textract, so there is no direct GM->Left/Right load.
//     dtype of the param == dtype of the tile (the DMA does not convert);
//   - tstore: src in Vec or Acc. From Vec the dtypes are equal (MTE3 copies bytes); from
//     Acc the fixpipe converts f32 to f32, f16 or bf16, and stores i32 as i32;
//   - tmov: Mat->Left, Mat->Right with equal dtypes; Acc->Vec and Vec->Vec may convert;
//     dst and src have equal rows and cols;
//   - textract: Mat -> Left/Right with equal dtypes; the row and col immediates are
//     non-negative integers and the dst-sized window at (row, col) lies inside src;
//   - tmatmul, tmatmul.acc: dst Acc, a Left, b Right; a.dtype == b.dtype; a.cols ==
//     b.rows, dst.rows == a.rows, dst.cols == b.cols; f16/bf16/f32 -> f32 Acc, i8 -> i32;
//   - tadd, tmul, trelu: every operand in Vec with equal rows, cols and dtype;
//   - tcvt: both in Vec with equal rows and cols (the dtypes may differ);
//   - set_flag, wait_flag: two distinct pipes other than all, event id an integer in
//     [0, NumEventIDs);
//   - tsync: a valid pipe, or all.

// NumEventIDs is the number of event ids per pair of pipes (EVENT_ID0..7 on Ascend).
const NumEventIDs = 8

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
	for _, t := range p.Tiles {
		where := "tile " + formatTile(t)
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
	return ""
}

func (v *verifier) tile(t TileDecl) string {
	switch {
	case t.Loc == LocInvalid || t.Loc > Bias:
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
	}
	switch t.Loc {
	case Vec, Mat, Bias:
		if rowBytes, ok := mulInt(t.Cols, t.DType.Size()); !ok || rowBytes%32 != 0 {
			return fmt.Sprintf("row of %d x %s is not a multiple of 32 bytes", t.Cols, t.DType)
		}
	case Left, Right, Acc:
		if t.Rows%16 != 0 || t.Cols%16 != 0 {
			return fmt.Sprintf("%s tile shape %dx%d is not a multiple of 16x16", t.Loc, t.Rows, t.Cols)
		}
	}
	if v.capacity != nil {
		size, ok := mulInt(t.Rows, t.Cols)
		if ok {
			size, ok = mulInt(size, t.DType.Size())
		}
		if c := v.capacity(t.Loc); !ok || size > c {
			return fmt.Sprintf("tile needs %s bytes, the %s buffer holds %d", byteCount(size, ok), t.Loc, c)
		}
	}
	return ""
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

// mulInt multiplies non-negative ints, reporting overflow.
func mulInt(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt {
		return 0, false
	}
	return int(lo), true
}

// instr returns what is wrong with an instruction, or "".
func (v *verifier) instr(in Instr) string {
	if in.Op == OpInvalid || int(in.Op) >= NumOpcodes() {
		return fmt.Sprintf("undefined opcode %d", uint16(in.Op))
	}
	info := in.Op.Info()
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

func (v *verifier) operand(i int, a Operand, want OperandKind) string {
	if a.Kind != want {
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
	case KindPipe:
		if a.Pipe == PipeInvalid || a.Pipe > PipeAll {
			return fmt.Sprintf("operand %d is not a valid pipe", i+1)
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
		used = []Pipe{referenceRoute(v.p, in)}
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

// referenceRoute is the pipe of a location-routed instruction in the A2/A3 routing that
// the opcode docs state. Backends route for their own chip; this only decides which
// core kind an instruction can belong to.
func referenceRoute(p *Program, in Instr) Pipe {
	switch in.Op {
	case TSTORE:
		if p.Tiles[in.Args[1].Tile].Loc == Acc {
			return PipeFIX
		}
		return PipeMTE3
	case TMOV:
		switch src, dst := p.Tiles[in.Args[1].Tile].Loc, p.Tiles[in.Args[0].Tile].Loc; {
		case src == Mat:
			return PipeMTE1
		case src == Acc:
			return PipeFIX
		case dst == Vec:
			return PipeV
		}
	}
	return PipeInvalid
}
