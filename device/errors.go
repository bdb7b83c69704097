package device

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"pypto/isa"
)

// CompileError is a backend failure. PC is the index of the offending instruction in
// the source program's Body, or -1 when the error is about the program as a whole
// (a tile that does not fit, say).
type CompileError struct {
	Program string
	PC      int
	Instr   string // the instruction's text when PC >= 0
	Msg     string
}

func (e *CompileError) Error() string {
	if e.PC < 0 {
		return fmt.Sprintf("device: compile %q: %s", e.Program, e.Msg)
	}
	return fmt.Sprintf("device: compile %q: pc %d (%s): %s", e.Program, e.PC, e.Instr, e.Msg)
}

// SimError is a failure while running a task, located as precisely as known: Core and
// Block are -1 when the error concerns the whole task, PC is -1 when it concerns a
// block but no single instruction (a param outside GM, say).
type SimError struct {
	Core, Block, PC int
	Instr           string // the instruction's listing text when PC >= 0
	Msg             string
	Err             error // what kind of failure, when it is one callers tell apart (ErrBudget)
}

// ErrBudget is the failure of a block that exceeds RunOptions.MaxInstructions.
var ErrBudget = errors.New("instruction budget exceeded")

// ErrSync is a failure of the synchronisation between pipes or cores: a race (a
// missing flag), a deadlock, a flag set that no wait consumes. Such a failure comes
// from how the pipes of the machine program are ordered, which the ISA's reference
// semantics (program order, no pipes) do not have, so running the reference cannot
// explain it.
var ErrSync = errors.New("synchronisation failure")

func (e *SimError) Unwrap() error { return e.Err }

func (e *SimError) Error() string {
	var b strings.Builder
	b.WriteString("device:")
	if e.Core >= 0 {
		fmt.Fprintf(&b, " core %d", e.Core)
	}
	if e.Block >= 0 {
		fmt.Fprintf(&b, " block %d", e.Block)
	}
	if e.PC >= 0 {
		fmt.Fprintf(&b, " pc %d (%s)", e.PC, e.Instr)
	}
	if e.Core >= 0 || e.Block >= 0 || e.PC >= 0 {
		b.WriteString(":")
	}
	b.WriteString(" ")
	b.WriteString(e.Msg)
	return b.String()
}

// sourceInstrString prints a source (auto-mode) instruction for compile errors. It is a
// self-contained rendering so that the backend does not depend on the assembler.
func sourceInstrString(p *isa.Program, pc int) string {
	if pc < 0 || pc >= len(p.Body) {
		return ""
	}
	in := p.Body[pc]
	parts := make([]string, 0, len(in.Args))
	for _, a := range in.Args {
		switch a.Kind {
		case isa.KindTile:
			if a.Tile >= 0 && a.Tile < len(p.Tiles) {
				parts = append(parts, p.Tiles[a.Tile].Name)
			} else {
				parts = append(parts, fmt.Sprintf("tile#%d", a.Tile))
			}
		case isa.KindGM:
			v := a.GM
			name := fmt.Sprintf("param#%d", v.Param)
			if v.Param >= 0 && v.Param < len(p.Params) {
				name = p.Params[v.Param].Name
			}
			parts = append(parts, fmt.Sprintf("%s[+%d %dx%d s%d,%d]", name, v.Offset, v.Rows, v.Cols, v.RowStride, v.ColStride))
		case isa.KindImm:
			parts = append(parts, strconv.FormatFloat(a.Imm, 'g', -1, 64))
		case isa.KindPipe:
			parts = append(parts, a.Pipe.String())
		default:
			parts = append(parts, "?")
		}
	}
	return strings.TrimSpace(in.Op.String() + " " + strings.Join(parts, ", "))
}
