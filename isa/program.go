// Package isa is the PTO virtual instruction set: tile-level programs that one core
// runs, independent of any chip. A Program is written in "auto" mode by the compiler
// (tiles are named, not placed; no flags), and the device backend turns it into a
// machine program for a chip (addresses, pipes, flags). Manual-mode programs may also
// carry SET_FLAG / WAIT_FLAG / TSYNC themselves.
package isa

import "pypto/dtype"

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
)

var locationNames = [...]string{LocInvalid: "invalid", Mat: "mat", Left: "left", Right: "right", Acc: "acc", Vec: "vec", Bias: "bias"}

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

// TileDecl declares a tile: a typed rows x cols block in one on-chip buffer. Tiles are
// stored row-major (ND) in this version of the ISA.
type TileDecl struct {
	Name       string
	Loc        Location
	DType      dtype.DType
	Rows, Cols int
}

// Bytes is the tile's storage size.
func (t TileDecl) Bytes() int { return t.Rows * t.Cols * t.DType.Size() }

// GMView is a 2-D strided window into a param: element (r, c) of the view is element
// Offset + r*RowStride + c*ColStride of the param. Strides may be 0 (broadcast) and the
// window may be smaller than the tile it is loaded into (edge tiles).
type GMView struct {
	Param                int
	Offset               int
	Rows, Cols           int
	RowStride, ColStride int
}

// OperandKind tells which field of an Operand is meaningful.
type OperandKind uint8

const (
	KindInvalid OperandKind = iota
	KindTile                // Tile
	KindGM                  // GM
	KindImm                 // Imm (a number: scalar operand, sub-tile offset, event id)
	KindPipe                // Pipe
)

func (k OperandKind) String() string {
	switch k {
	case KindTile:
		return "tile"
	case KindGM:
		return "gm"
	case KindImm:
		return "imm"
	case KindPipe:
		return "pipe"
	}
	return "kind?"
}

// Operand is one argument of an instruction.
type Operand struct {
	Kind OperandKind
	Tile int // index into Program.Tiles
	GM   GMView
	Imm  float64
	Pipe Pipe
}

// TileOp, GMOp, ImmOp and PipeOp build operands.
func TileOp(i int) Operand    { return Operand{Kind: KindTile, Tile: i} }
func GMOp(v GMView) Operand   { return Operand{Kind: KindGM, GM: v} }
func ImmOp(v float64) Operand { return Operand{Kind: KindImm, Imm: v} }
func PipeOp(p Pipe) Operand   { return Operand{Kind: KindPipe, Pipe: p} }

// Instr is one instruction. By convention the destination comes first in Args.
type Instr struct {
	Op   Opcode
	Args []Operand
}

// Program is the code one core runs for one block of a task.
type Program struct {
	Name   string
	Core   CoreKind
	Params []Param
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
