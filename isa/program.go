// Package isa is the PTO virtual instruction set: tile-level programs that one core
// runs, independent of any chip. A Program is written in "auto" mode by the compiler
// (tiles are named, not placed; no flags), and the device backend turns it into a
// machine program for a chip (addresses, pipes, flags). Manual-mode programs may also
// carry SET_FLAG / WAIT_FLAG / TSYNC and TASSIGN themselves.
//
// The package holds the opcode table (opcodes.go, data), the types of programs, their
// text form (text.go, parse.go), their binary form (binary.go), the verifier
// (verify*.go) and the reference semantics (interp*.go): a hardware-neutral
// interpreter that defines what every instruction computes.
package isa

import (
	"pypto/dtype"
	"pypto/internal/checked"
)

// Location is the on-chip buffer a tile lives in.
type Location uint8

const (
	LocInvalid Location = iota
	Mat                 // L1
	Left                // L0A, left cube operand
	Right               // L0B, right cube operand
	Acc                 // L0C, cube accumulator (fp32 / int32)
	Vec                 // UB, the vector core's unified buffer
	Bias                // BT, bias table
	Scaling             // fixpipe / MX scaling parameters (per-channel quantisation scales)
)

// NumLocations bounds Location values: valid locations are 1 .. NumLocations-1.
const NumLocations = int(Scaling) + 1

var locationNames = [...]string{LocInvalid: "invalid", Mat: "mat", Left: "left", Right: "right", Acc: "acc", Vec: "vec", Bias: "bias", Scaling: "scaling"}

func (l Location) String() string {
	if int(l) < len(locationNames) {
		return locationNames[l]
	}
	return "loc?"
}

// ParseLocation is the inverse of Location.String.
func ParseLocation(s string) (Location, bool) {
	for i, n := range locationNames {
		if n == s && i != 0 {
			return Location(i), true
		}
	}
	return LocInvalid, false
}

// CoreKind says which kind of core a program is written for.
type CoreKind uint8

const (
	CoreInvalid CoreKind = iota
	Cube                 // AIC: MTE2, MTE1, M, FIX, S
	Vector               // AIV: MTE2, V, MTE3, S
)

func (k CoreKind) String() string {
	switch k {
	case Cube:
		return "cube"
	case Vector:
		return "vector"
	}
	return "core?"
}

// Pipe is an execution queue inside a core. Instructions of one pipe run in order;
// different pipes run in parallel and are ordered only by flags.
type Pipe uint8

const (
	PipeInvalid Pipe = iota
	PipeS            // scalar: issue, address arithmetic, loop control
	PipeMTE1         // L1 -> L0A/L0B
	PipeMTE2         // GM -> L1 / UB
	PipeMTE3         // UB -> GM
	PipeM            // cube
	PipeV            // vector
	PipeFIX          // L0C -> GM / UB (fixpipe)
	PipeAll          // only as the operand of TSYNC: a barrier over every pipe
)

var pipeNames = [...]string{PipeInvalid: "invalid", PipeS: "s", PipeMTE1: "mte1", PipeMTE2: "mte2", PipeMTE3: "mte3", PipeM: "m", PipeV: "v", PipeFIX: "fix", PipeAll: "all"}

func (p Pipe) String() string {
	if int(p) < len(pipeNames) {
		return pipeNames[p]
	}
	return "pipe?"
}

// ParsePipe is the inverse of Pipe.String.
func ParsePipe(s string) (Pipe, bool) {
	for i, n := range pipeNames {
		if n == s && i != 0 {
			return Pipe(i), true
		}
	}
	return PipeInvalid, false
}

// Param is a global-memory tensor argument of a kernel. Elems bounds every view of it.
type Param struct {
	Name  string
	DType dtype.DType
	Elems int
}

// Bytes is the param's size in GM and whether it is exact: false when the count is
// negative or its bytes overflow an int (Verify rejects such a param).
func (p Param) Bytes() (int, bool) { return checked.Mul(p.Elems, p.DType.Size()) }

// TileDecl declares a tile: a typed rows x cols block in one on-chip buffer.
//
// The valid region is the top-left part of the tile that holds data (edge tiles of a
// tensor whose size is not a multiple of the tile's, and dynamic sizes). Its rows are
// ValidRows, or the current value of register ValidRowsReg when that is set; 0 means
// all Rows (so a zero TileDecl field keeps the whole tile valid). Likewise for cols.
// Instructions say in their table row which region they read and write.
//
// Layout is how the elements are stored in the buffer. Instructions see logical
// elements (r, c) whatever the layout, so it matters for values only where bytes are
// reinterpreted (TRESHAPE needs ND); it matters to backends and to alignment.
type TileDecl struct {
	Name       string
	Loc        Location
	DType      dtype.DType
	Rows, Cols int

	ValidRows, ValidCols       int    // 0: all rows / cols
	ValidRowsReg, ValidColsReg RegRef // set: the valid size is this register's value
	Layout                     Layout // zero: ND, row-major
}

// Bytes is the tile's storage size.
func (t TileDecl) Bytes() int { return t.Rows * t.Cols * t.DType.Size() }

// Layout is the storage order of a tile or a GM tensor.
type Layout uint8

const (
	// LayoutND is plain row-major storage.
	LayoutND Layout = iota
	// LayoutDN is column-major storage (a column of a DN tile is contiguous; a rows x 1
	// DN tile is a compact column vector, the shape row reductions produce).
	LayoutDN
	// LayoutNZ cuts the tile into fractals (FractalShape) stored column of fractals by
	// column of fractals, each fractal row-major: the cube's Left and Acc order.
	LayoutNZ
	// LayoutZN stores fractals row of fractals by row of fractals, each fractal
	// column-major: the cube's Right order.
	LayoutZN
	numLayouts
)

var layoutNames = [...]string{LayoutND: "nd", LayoutDN: "dn", LayoutNZ: "nz", LayoutZN: "zn"}

func (l Layout) String() string {
	if l < numLayouts {
		return layoutNames[l]
	}
	return "layout?"
}

// ParseLayout is the inverse of Layout.String.
func ParseLayout(s string) (Layout, bool) {
	for i, n := range layoutNames {
		if n == s {
			return Layout(i), true
		}
	}
	return LayoutND, false
}

// FractalBytes is the size of one fractal of a tile at loc: 1024 bytes in Acc (16x16
// fp32), 512 bytes elsewhere (docs/sources.md, "npu-facts").
func FractalBytes(loc Location) int {
	if loc == Acc {
		return 1024
	}
	return 512
}

// FractalShape is the rows x cols of one fractal of an NZ or ZN tile: NZ fractals have
// 16 rows (f16 16x16, f32 16x8, i8 16x32; Acc f32 16x16), ZN fractals 16 cols (the
// transpose). ND and DN tiles have no fractals: (1, 1).
func (t TileDecl) FractalShape() (rows, cols int) {
	size := t.DType.Size()
	if size == 0 {
		return 1, 1
	}
	n := FractalBytes(t.Loc) / 16 / size
	switch t.Layout {
	case LayoutNZ:
		return 16, n
	case LayoutZN:
		return n, 16
	}
	return 1, 1
}

// RegDecl declares a scalar register: a signed 64-bit integer, zero when the program
// starts, used for loop counters, GM offsets and dynamic sizes.
type RegDecl struct {
	Name string
}

// RegRef optionally names a register: 0 is none, n > 0 is Program.Regs[n-1]. The
// offset by one keeps the zero value of every field that may hold one meaning "no
// register", as it did before registers existed.
type RegRef int

// UseReg refers to Program.Regs[i].
func UseReg(i int) RegRef { return RegRef(i + 1) }

// Index is the register's index in Program.Regs, and whether one is named at all.
func (r RegRef) Index() (int, bool) { return int(r) - 1, r > 0 }

// GMView is a 2-D strided window into a param: element (r, c) of the view is element
// Offset + r*RowStride + c*ColStride of the param. Strides may be 0 (broadcast) and the
// window may be smaller than the tile it is loaded into (edge tiles).
//
// With scalar registers the window moves and shrinks at run time: OffsetReg's value is
// added to Offset, and RowsReg / ColsReg, when set, give the number of rows / cols,
// which must then lie in [0, Rows] / [0, Cols]: the static Rows and Cols bound the
// window, so checks against tiles stay static.
type GMView struct {
	Param                int
	Offset               int
	Rows, Cols           int
	RowStride, ColStride int

	OffsetReg, RowsReg, ColsReg RegRef // zero: none
}

// OperandKind tells which field of an Operand is meaningful.
type OperandKind uint8

const (
	KindInvalid OperandKind = iota
	KindTile                // Tile
	KindGM                  // GM
	KindImm                 // Imm (a number: scalar operand, sub-tile offset, event id)
	KindPipe                // Pipe
	KindReg                 // Reg (a scalar register)
	// KindScalar appears only in the opcode table: the operand is a KindReg or a
	// KindImm operand, so the value may be known when the program is written or only
	// when it runs.
	KindScalar
)

var kindNames = [...]string{KindInvalid: "kind?", KindTile: "tile", KindGM: "gm", KindImm: "imm", KindPipe: "pipe", KindReg: "reg", KindScalar: "scalar"}

func (k OperandKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// Accepts reports whether an operand of kind got may stand where the opcode table
// lists kind k.
func (k OperandKind) Accepts(got OperandKind) bool {
	if k == KindScalar {
		return got == KindReg || got == KindImm
	}
	return k == got && k != KindInvalid && k != KindScalar
}

// Operand is one argument of an instruction.
type Operand struct {
	Kind OperandKind
	Tile int // index into Program.Tiles
	GM   GMView
	Imm  float64
	Pipe Pipe
	Reg  int // index into Program.Regs
}

// TileOp, GMOp, ImmOp, PipeOp and RegOp build operands.
func TileOp(i int) Operand    { return Operand{Kind: KindTile, Tile: i} }
func GMOp(v GMView) Operand   { return Operand{Kind: KindGM, GM: v} }
func ImmOp(v float64) Operand { return Operand{Kind: KindImm, Imm: v} }
func PipeOp(p Pipe) Operand   { return Operand{Kind: KindPipe, Pipe: p} }
func RegOp(i int) Operand     { return Operand{Kind: KindReg, Reg: i} }

// Instr is one instruction. By convention the destination comes first in Args. Mode
// is the instruction's modifier (compare predicate, rounding mode, atomic store,
// triangle side): the opcode table lists the modes each opcode takes, and ModeNone
// is the default behaviour.
type Instr struct {
	Op   Opcode
	Mode Mode
	Args []Operand
}

// Program is the code one core runs for one block of a task.
type Program struct {
	Name   string
	Core   CoreKind
	Params []Param
	Regs   []RegDecl
	Tiles  []TileDecl
	Body   []Instr
}

// MarshalText makes locations, core kinds and pipes print by name in JSON statistics
// (also as map keys).
func (l Location) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// MarshalText prints a core kind by name.
func (k CoreKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// MarshalText prints a pipe by name.
func (p Pipe) MarshalText() ([]byte, error) { return []byte(p.String()), nil }
