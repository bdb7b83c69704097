package isa

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the generated opcode table in docs/isa.md")

const (
	docsPath    = "../docs/isa.md"
	tableBegin  = "<!-- BEGIN OPCODE TABLE: generated from isa.Opcodes by `go test ./isa -run TestDocs -update` -->"
	tableEnd    = "<!-- END OPCODE TABLE -->"
	staleAdvice = "docs/isa.md is stale: run go test ./isa -run TestDocs -update"
)

// TestDocs keeps the opcode table of docs/isa.md equal to isa.Opcodes, the single source
// of truth; with -update it rewrites the table in place.
func TestDocs(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	require.NoError(t, err)
	doc := string(data)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	require.True(t, i >= 0 && j > i, "docs/isa.md must contain the markers %q and %q", tableBegin, tableEnd)
	want := doc[:i+len(tableBegin)] + "\n" + opcodeTable() + doc[j:]
	if *update {
		require.NoError(t, os.WriteFile(filepath.Clean(docsPath), []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, doc, staleAdvice)
}

// opcodeTable renders isa.Opcodes as one Markdown table per instruction class.
func opcodeTable() string {
	var b strings.Builder
	for class := OpClass(1); class < NumOpClasses; class++ {
		fmt.Fprintf(&b, "\n#### %s\n\n", class)
		b.WriteString("| opcode | operands | pipe | type rule | meaning |\n|---|---|---|---|---|\n")
		for op := Opcode(1); int(op) < NumOpcodes(); op++ {
			if info := op.Info(); info.Class == class {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", opcodeColumn(info), kindList(info.Operands), pipeColumn(info), cell(info.Rule), cell(info.Doc))
			}
		}
	}
	return b.String()
}

// opcodeColumn is the name with the modes it takes: `tcmp.{eq,ne}` when a mode is
// required, `tcvt[.{rint,floor}]` when it is optional.
func opcodeColumn(info *OpInfo) string {
	if len(info.Modes) == 0 {
		return "`" + info.Name + "`"
	}
	names := make([]string, len(info.Modes))
	for i, m := range info.Modes {
		names[i] = m.String()
	}
	modes := "." + strings.Join(names, ", .")
	if len(names) > 1 {
		modes = ".{" + strings.Join(names, ",") + "}"
	}
	if info.ModeRequired {
		return "`" + info.Name + modes + "`"
	}
	return "`" + info.Name + "[" + modes + "]`"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func pipeColumn(info *OpInfo) string {
	switch info.PipeClass {
	case PipeClassFixed:
		return info.Pipe.String()
	case PipeClassByLocation:
		return "by operand locations"
	case PipeClassFlagSource:
		return "the source pipe (operand 1)"
	case PipeClassFlagDest:
		return "the waiting pipe (operand 2)"
	case PipeClassBarrier:
		return "the pipe operand"
	}
	return "?"
}
