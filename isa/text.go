package isa

import (
	"fmt"
	"strconv"
	"strings"
)

// The assembly text of a Program, one declaration or instruction per line:
//
//	kernel mm_0 cube
//	param %a: f16[15600]                 # GM tensor: dtype[elements]
//	param %c: f16[39000]
//	reg %i                               # scalar register (int64, starts at 0)
//	tile %t0: mat f16[64x64]             # location dtype[rows x cols] [valid R x C] [layout]
//	tile %t1: left f16[64x64] nz
//	  loop %i, 4                         # counted loop: %i = 0..3
//	    tload %t0, %a[%off+0; 64x64; 520,1]  # GM view: offset; rows x cols; row stride, col stride
//	  endloop
//	  tcvt.floor %v, %w                  # a mode is a suffix of the opcode
//	  set_flag mte2, m, 0                # pipes by name, immediates as numbers
//	  tstore %c[0; 64x64; 130,1], %t4
//	end
//
// Params, registers and tiles share one namespace and are referred to as %name; names
// that are not identifiers ([A-Za-z_][A-Za-z0-9_.]*) are quoted (%"a b"). Operands
// follow the opcode table: the kinds in OpInfo.Operands, destination first; a scalar
// operand is a register or a number. Immediates print with strconv 'g' -1, the
// shortest text that parses back to the same float64 (NaN prints as NaN, so a NaN's
// payload bits are not kept). Comments start with '#' or '//'. Loop bodies are
// indented by two more spaces per level; indentation is not significant when parsing.
//
// Sizes that registers give at run time: a tile's valid rows or cols are a number, a
// register or '*' (all: the zero value); a view's offset is a number, a register or
// register+number, and its rows or cols a number or register<=bound.

// Format prints p as assembly text. Parse(Format(p)) equals p for every program whose
// names are unique and non-empty, whose enums are valid and whose valid sizes do not
// name a register and a number at once; anything else still prints, with <...>
// markers where the program is malformed.
func Format(p *Program) string {
	if p == nil {
		return "<nil program>\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s %s\n", quoteName(p.Name), p.Core)
	for _, prm := range p.Params {
		fmt.Fprintf(&b, "param %s\n", formatParam(prm))
	}
	for _, r := range p.Regs {
		fmt.Fprintf(&b, "reg %%%s\n", quoteName(r.Name))
	}
	for _, t := range p.Tiles {
		fmt.Fprintf(&b, "tile %s\n", formatTile(p, t))
	}
	depth := 1
	for _, in := range p.Body {
		if in.Op == ENDLOOP && depth > 1 {
			depth--
		}
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(FormatInstr(p, in))
		b.WriteString("\n")
		if in.Op == LOOP {
			depth++
		}
	}
	b.WriteString("end\n")
	return b.String()
}

func formatParam(prm Param) string {
	return fmt.Sprintf("%%%s: %s[%d]", quoteName(prm.Name), prm.DType, prm.Elems)
}

func formatTile(p *Program, t TileDecl) string {
	s := fmt.Sprintf("%%%s: %s %s[%dx%d]", quoteName(t.Name), t.Loc, t.DType, t.Rows, t.Cols)
	if t.ValidRows != 0 || t.ValidCols != 0 || t.ValidRowsReg != 0 || t.ValidColsReg != 0 {
		rows := formatValid(p, t.ValidRows, t.ValidRowsReg)
		s += " valid " + rows + dimSep(t.ValidRowsReg) + formatValid(p, t.ValidCols, t.ValidColsReg)
	}
	if t.Layout != LayoutND {
		s += " " + t.Layout.String()
	}
	return s
}

// dimSep separates rows from cols: "16x8", but "%n x 8" so that the 'x' cannot be
// read as part of the register's name.
func dimSep(rowsReg RegRef) string {
	if rowsReg != 0 {
		return " x "
	}
	return "x"
}

func formatValid(p *Program, n int, r RegRef) string {
	switch {
	case r != 0:
		return formatRegRef(p, r)
	case n == 0:
		return "*"
	}
	return strconv.Itoa(n)
}

func formatRegRef(p *Program, r RegRef) string {
	i, _ := r.Index()
	return formatReg(p, i)
}

func formatReg(p *Program, i int) string {
	if i < 0 || i >= len(p.Regs) {
		return fmt.Sprintf("%%<reg %d?>", i)
	}
	return "%" + quoteName(p.Regs[i].Name)
}

// FormatInstr prints one instruction of p as it appears in the text (without
// indentation). Operands print by their own Kind, so a malformed instruction shows what
// it really holds; the verifier and the simulator use this to name instructions.
func FormatInstr(p *Program, in Instr) string {
	var b strings.Builder
	b.WriteString(in.Op.String())
	if in.Mode != ModeNone {
		b.WriteString(".")
		b.WriteString(in.Mode.String())
	}
	for i, a := range in.Args {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" ")
		b.WriteString(formatOperand(p, a))
	}
	return b.String()
}

func formatOperand(p *Program, a Operand) string {
	switch a.Kind {
	case KindTile:
		if a.Tile < 0 || a.Tile >= len(p.Tiles) {
			return fmt.Sprintf("%%<tile %d?>", a.Tile)
		}
		return "%" + quoteName(p.Tiles[a.Tile].Name)
	case KindGM:
		return formatView(p, a.GM)
	case KindImm:
		return strconv.FormatFloat(a.Imm, 'g', -1, 64)
	case KindPipe:
		return a.Pipe.String()
	case KindReg:
		return formatReg(p, a.Reg)
	}
	return fmt.Sprintf("<operand kind %d?>", a.Kind)
}

func formatView(p *Program, v GMView) string {
	name := fmt.Sprintf("<param %d?>", v.Param)
	if v.Param >= 0 && v.Param < len(p.Params) {
		name = quoteName(p.Params[v.Param].Name)
	}
	off := strconv.Itoa(v.Offset)
	if v.OffsetReg != 0 {
		off = formatRegRef(p, v.OffsetReg)
		if v.Offset != 0 {
			off += "+" + strconv.Itoa(v.Offset)
		}
	}
	return fmt.Sprintf("%%%s[%s; %s%s%s; %d,%d]", name, off, formatBound(p, v.Rows, v.RowsReg), dimSep(v.RowsReg), formatBound(p, v.Cols, v.ColsReg), v.RowStride, v.ColStride)
}

// formatBound prints a view dimension: n, or reg<=n when a register gives it.
func formatBound(p *Program, n int, r RegRef) string {
	if r != 0 {
		return formatRegRef(p, r) + "<=" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// isIdent reports whether a name prints without quotes.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || i > 0 && (isDigit(c) || c == '.')) {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

func quoteName(s string) string {
	if isIdent(s) {
		return s
	}
	return strconv.Quote(s)
}
