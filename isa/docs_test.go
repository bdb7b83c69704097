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

// opcodeTable renders isa.Opcodes as a Markdown table.
func opcodeTable() string {
	var b strings.Builder
	b.WriteString("| opcode | operands | pipe | meaning |\n|---|---|---|---|\n")
	for op := Opcode(1); int(op) < NumOpcodes(); op++ {
		info := op.Info()
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", info.Name, kindList(info.Operands), pipeColumn(info), strings.ReplaceAll(info.Doc, "|", `\|`))
	}
	return b.String()
}

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
