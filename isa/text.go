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
//	tile %t0: mat f16[64x64]             # location dtype[rows x cols]
//	tile %t1: left f16[64x64]
//	  tload %t0, %a[0; 64x64; 520,1]     # GM view: offset; rows x cols; row stride, col stride
//	  tmov %t1, %t0
//	  set_flag mte2, m, 0                # pipes by name, immediates as numbers
//	  tstore %c[0; 64x64; 130,1], %t4
//	end
//
// Params and tiles share one namespace and are referred to as %name; names that are not
// identifiers ([A-Za-z_][A-Za-z0-9_.]*) are quoted (%"a b"). Operands follow the opcode
// table: the kinds in OpInfo.Operands, destination first. Immediates print with
// strconv 'g' -1, the shortest text that parses back to the same float64 (NaN prints
// as NaN, so a NaN's payload bits are not kept). Comments start with '#' or '//'.

// Format prints p as assembly text. Parse(Format(p)) equals p for every program whose
// names are unique and non-empty and whose enums are valid; anything else still prints,
// with <...> markers where the program is malformed.
func Format(p *Program) string {
	if p == nil {
		return "<nil program>\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s %s\n", quoteName(p.Name), p.Core)
	for _, prm := range p.Params {
		fmt.Fprintf(&b, "param %s\n", formatParam(prm))
	}
	for _, t := range p.Tiles {
		fmt.Fprintf(&b, "tile %s\n", formatTile(t))
	}
	for _, in := range p.Body {
		b.WriteString("  ")
		b.WriteString(FormatInstr(p, in))
		b.WriteString("\n")
	}
	b.WriteString("end\n")
	return b.String()
}

func formatParam(prm Param) string {
	return fmt.Sprintf("%%%s: %s[%d]", quoteName(prm.Name), prm.DType, prm.Elems)
}

func formatTile(t TileDecl) string {
	return fmt.Sprintf("%%%s: %s %s[%dx%d]", quoteName(t.Name), t.Loc, t.DType, t.Rows, t.Cols)
}

// FormatInstr prints one instruction of p as it appears in the text (without
// indentation). Operands print by their own Kind, so a malformed instruction shows what
// it really holds; the verifier and the simulator use this to name instructions.
func FormatInstr(p *Program, in Instr) string {
	var b strings.Builder
	b.WriteString(in.Op.String())
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
		v := a.GM
		name := fmt.Sprintf("<param %d?>", v.Param)
		if v.Param >= 0 && v.Param < len(p.Params) {
			name = quoteName(p.Params[v.Param].Name)
		}
		return fmt.Sprintf("%%%s[%d; %dx%d; %d,%d]", name, v.Offset, v.Rows, v.Cols, v.RowStride, v.ColStride)
	case KindImm:
		return strconv.FormatFloat(a.Imm, 'g', -1, 64)
	case KindPipe:
		return a.Pipe.String()
	}
	return fmt.Sprintf("<operand kind %d?>", a.Kind)
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
