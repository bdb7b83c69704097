package device

import (
	"fmt"
	"strconv"
	"strings"

	"pypto/dtype"
	"pypto/isa"
)

// MachineProgram is a PTO program resolved for one chip: every tile has a buffer
// address, every instruction a pipe, and the flags that order dependent instructions
// of different pipes are explicit. It is what the simulator runs; String prints it.
type MachineProgram struct {
	Name   string
	Chip   string // the preset it was compiled for; RunTask checks it
	Core   isa.CoreKind
	Params []isa.Param
	Regs   []isa.RegDecl // scalar registers, zero when a block starts
	Tiles  []Allocation  // indexed like the source program's Tiles
	Instrs []Instr
	// HighWater is the highest byte used in each location's buffer.
	HighWater map[isa.Location]int
}

// Allocation says where the backend placed one tile and for how long it is live.
type Allocation struct {
	Decl  isa.TileDecl
	Addr  int // byte offset in the buffer of Decl.Loc; -1 for a tile no instruction uses
	Bytes int
	// First and Last are the source instruction indices of the tile's first and last
	// use (its live range); both -1 for an unused tile.
	First, Last int
}

// Instr is one resolved instruction.
type Instr struct {
	Op   isa.Opcode
	Pipe isa.Pipe // the pipe that executes it; PipeS for TSYNC all
	Mode isa.Mode // the ISA's modifier (compare predicate, rounding mode, ...)
	Args []Operand
	// Src is the index of the instruction in the source program's Body, or -1 for an
	// instruction the backend inserted (flags, barriers around loops).
	Src int
	// Match is the pc of the matching ENDLOOP for a LOOP and of the matching LOOP for
	// an ENDLOOP; -1 otherwise.
	Match int
}

// Operand is a resolved instruction argument. Kind says which fields are meaningful:
// tiles carry their placement and shape, GM views their param's dtype.
type Operand struct {
	Kind isa.OperandKind

	Tile       int // index into MachineProgram.Tiles (KindTile)
	Loc        isa.Location
	Addr       int
	DType      dtype.DType // tile dtype, or the param dtype of a GM view
	Rows, Cols int
	Layout     isa.Layout
	// ValidRows x ValidCols is the tile's valid region (the top-left part holding
	// data). A register, when named, gives the size at run time: the simulator fills
	// ValidRows / ValidCols from it when it issues the instruction.
	ValidRows, ValidCols       int
	ValidRowsReg, ValidColsReg isa.RegRef

	GM   isa.GMView // KindGM (register offsets and sizes are applied at issue)
	Imm  float64    // KindImm
	Pipe isa.Pipe   // KindPipe
	Reg  int        // KindReg: index into MachineProgram.Regs
}

// Bytes is the storage size of a tile operand.
func (o Operand) Bytes() int { return o.Rows * o.Cols * o.DType.Size() }

// String prints the program as a listing: params, the allocation table, high-water
// marks and one instruction per line with its pipe. The format is stable for golden
// tests and dumps.
func (m *MachineProgram) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "machine %q core=%s chip=%s\n", m.Name, m.Core, m.Chip)
	for i, p := range m.Params {
		fmt.Fprintf(&b, "  param %d %s %s[%d]\n", i, p.Name, p.DType, p.Elems)
	}
	for i, a := range m.Tiles {
		d := a.Decl
		if a.Addr < 0 {
			fmt.Fprintf(&b, "  tile %d %s %s %s[%dx%d] unused\n", i, d.Name, d.Loc, d.DType, d.Rows, d.Cols)
			continue
		}
		fmt.Fprintf(&b, "  tile %d %s %s %s[%dx%d] @%#x bytes=%d live=%d..%d\n",
			i, d.Name, d.Loc, d.DType, d.Rows, d.Cols, a.Addr, a.Bytes, a.First, a.Last)
	}
	for _, r := range m.Regs {
		fmt.Fprintf(&b, "  reg %s\n", r.Name)
	}
	b.WriteString("  high-water")
	for loc := isa.Location(1); int(loc) < isa.NumLocations; loc++ {
		if hw, ok := m.HighWater[loc]; ok {
			fmt.Fprintf(&b, " %s=%d", loc, hw)
		}
	}
	b.WriteString("\n")
	for pc := range m.Instrs {
		fmt.Fprintf(&b, "  %4d %s\n", pc, m.InstrString(pc))
	}
	return b.String()
}

// InstrString prints instruction pc as "pipe opcode args" (used in listings and in
// every simulator error that names an instruction).
func (m *MachineProgram) InstrString(pc int) string {
	if pc < 0 || pc >= len(m.Instrs) {
		return fmt.Sprintf("pc %d out of range", pc)
	}
	in := m.Instrs[pc]
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s %s", in.Pipe, in.Op)
	if in.Mode != isa.ModeNone {
		b.WriteString("." + in.Mode.String())
	}
	for i, a := range in.Args {
		if i == 0 {
			b.WriteString(" ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(m.operandString(a))
	}
	return b.String()
}

func (m *MachineProgram) operandString(o Operand) string {
	switch o.Kind {
	case isa.KindTile:
		name := "?"
		if o.Tile >= 0 && o.Tile < len(m.Tiles) {
			name = m.Tiles[o.Tile].Decl.Name
		}
		valid := ""
		if o.ValidRowsReg != 0 || o.ValidColsReg != 0 || o.ValidRows != o.Rows || o.ValidCols != o.Cols {
			valid = fmt.Sprintf(" valid %s x %s", m.dimString(o.ValidRows, o.ValidRowsReg, false), m.dimString(o.ValidCols, o.ValidColsReg, false))
		}
		layout := ""
		if o.Layout != isa.LayoutND {
			layout = " " + o.Layout.String()
		}
		return fmt.Sprintf("%s@%s+%#x:%s[%dx%d%s%s]", name, o.Loc, o.Addr, o.DType, o.Rows, o.Cols, valid, layout)
	case isa.KindGM:
		v := o.GM
		name := "?"
		if v.Param >= 0 && v.Param < len(m.Params) {
			name = m.Params[v.Param].Name
		}
		off := strconv.Itoa(v.Offset)
		if v.OffsetReg != 0 {
			off = m.regName(v.OffsetReg) + "+" + off
		}
		return fmt.Sprintf("%s:%s[+%s %s x %s s%d,%d]", name, o.DType, off, m.dimString(v.Rows, v.RowsReg, true), m.dimString(v.Cols, v.ColsReg, true), v.RowStride, v.ColStride)
	case isa.KindReg:
		return m.regName(isa.UseReg(o.Reg))
	case isa.KindImm:
		return strconv.FormatFloat(o.Imm, 'g', -1, 64)
	case isa.KindPipe:
		return o.Pipe.String()
	}
	return "?"
}

func (m *MachineProgram) regName(r isa.RegRef) string {
	if i, ok := r.Index(); ok && i < len(m.Regs) {
		return "%" + m.Regs[i].Name
	}
	return "%?"
}

// dimString prints a size: n, or the register giving it (with n as its bound when
// bounded).
func (m *MachineProgram) dimString(n int, r isa.RegRef, bounded bool) string {
	switch {
	case r == 0:
		return strconv.Itoa(n)
	case bounded:
		return m.regName(r) + "<=" + strconv.Itoa(n)
	}
	return m.regName(r)
}
