package ptoas

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/isa"
)

var update = flag.Bool("update", false, "rewrite docs/pto-as.md's generated tables")

const docsPath = "../../docs/pto-as.md"

var opName = regexp.MustCompile(`"((?:pto|emitc)\.[a-z0-9_.]+)"|pto\.(set_flag|wait_flag)\[|scf\.(for)`)

// instructionTable is docs/pto-as.md's table of how every instruction is written: the
// ops the writer emits for it (seen writing the ISA's reference programs and a mixed
// task), or why the 0.1.1 dialect cannot say it.
func instructionTable(t *testing.T) string {
	seen := map[isa.Opcode]map[string]bool{}
	traceInstr = func(in isa.Instr, text string) {
		var ops []string
		for _, m := range opName.FindAllStringSubmatch(text, -1) {
			switch {
			case m[1] != "" && m[1] != "emitc.cast" && m[1] != "emitc.constant" && !strings.HasPrefix(m[1], "emitc.add") && m[1] != "pto.alloc_tile":
				ops = append(ops, m[1])
			case m[2] != "":
				ops = append(ops, "pto."+m[2])
			case m[3] != "":
				ops = append(ops, "scf.for")
			}
		}
		if in.Op == isa.SADD {
			ops = []string{"emitc.add"}
		}
		if seen[in.Op] == nil {
			seen[in.Op] = map[string]bool{}
		}
		seen[in.Op][strings.Join(dedupe(ops), ", ")] = true
	}
	defer func() { traceInstr = nil }()
	for _, p := range goldenPrograms(t) {
		_, _ = WriteTask(Task{Name: p.Name, Programs: []*isa.Program{p}})
	}
	mixed := mixedTask(t)
	_, err := WriteTask(mixed)
	require.NoError(t, err)
	scalars, err := isa.Parse(`kernel s vector
param %x: f32[64]
reg %a
reg %b
tile %t: vec f32[8x8]
  smov %a, 3
  ssub %b, %a, 1
  srem %b, %b, 2
  smax %b, %b, %a
  smin %b, %b, %a
  tload %t, %x[%b+0; 8x8; 8,1]
end
`)
	require.NoError(t, err)
	_, err = WriteTask(Task{Name: "s", Programs: []*isa.Program{scalars}})
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("| instruction | PTO-AS | note |\n|---|---|---|\n")
	for op := isa.Opcode(1); int(op) < isa.NumOpcodes(); op++ {
		var how []string
		long := false
		for k := range seen[op] {
			long = long || strings.Count(k, ", ") >= longGroup
		}
		if long {
			// A long group is listed by the ops it uses: its sequences vary with dtype,
			// predicate and valid region (the writer's comment says how).
			names := map[string]bool{}
			for k := range seen[op] {
				for _, n := range strings.Split(k, ", ") {
					names[n] = true
				}
			}
			for n := range names {
				how = append(how, "`"+n+"`")
			}
			sort.Strings(how)
			how = []string{"ops of " + strings.Join(how, ", ")}
		}
		for k := range seen[op] {
			if long {
				break
			}
			if k == "" {
				k = "(no op: see the note)"
			}
			how = append(how, "`"+strings.ReplaceAll(k, ", ", "`, `")+"`")
		}
		sort.Strings(how)
		note := notes[op]
		if why, ok := missing[op]; ok {
			how, note = []string{"not written"}, why
		}
		if len(how) == 0 {
			how = []string{"(no op)"}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", op, strings.Join(how, "; "), note)
	}
	return b.String()
}

// longGroup is the length from which a group of ops is listed by the ops it uses.
const longGroup = 16

func dedupe(xs []string) []string {
	var out []string
	for i, x := range xs {
		if i == 0 || xs[i-1] != x {
			out = append(out, x)
		}
	}
	if len(out) <= maxListedOps {
		return out
	}
	// A long group repeats ops row after row: its distinct ops, in order, then "...".
	seen := map[string]bool{}
	var distinct []string
	for _, x := range out {
		if !seen[x] {
			seen[x] = true
			distinct = append(distinct, x)
		}
	}
	return append(distinct, "...")
}

// maxListedOps is the longest group of ops the table lists in full.
const maxListedOps = 12

// mixedTask is a block of a cube and a vector program handing a tile over a queue.
func mixedTask(t *testing.T) Task {
	cube, err := isa.Parse(`kernel k_c cube
param %a: f16[1024]
param %y: f16[1024]
tile %l1: mat f16[32x32] nz
tile %l: left f16[32x32] nz
tile %r: right f16[32x32] zn
tile %acc: acc f32[32x32] nz
  tload %l1, %a[0; 32x32; 32,1]
  tmov %l, %l1
  textract %r, %l1, 0, 0
  tmatmul %acc, %l, %r
  tpush 0, %acc
end
`)
	require.NoError(t, err)
	vec, err := isa.Parse(`kernel k_v0 vector
param %a: f16[1024]
param %y: f16[1024]
tile %t: vec f16[32x32]
  tpop %t, 0
  tfree 0
  tstore %y[0; 32x32; 32,1], %t
end
`)
	require.NoError(t, err)
	return Task{Name: "k", Vectors: 1, Programs: []*isa.Program{cube, vec}}
}

// tileTable is how our tile declarations become !pto.tile_buf types.
func tileTable() string {
	var b strings.Builder
	b.WriteString("| ours | tile_buf |\n|---|---|\n")
	for loc := isa.Location(1); int(loc) < isa.NumLocations; loc++ {
		if n, ok := locNames[loc]; ok {
			fmt.Fprintf(&b, "| location `%s` | `loc=%s`, `fractal=%d` |\n", loc, n, isa.FractalBytes(loc))
		} else {
			fmt.Fprintf(&b, "| location `%s` | none: a kernel with such a tile is not written |\n", loc)
		}
	}
	for _, lay := range []isa.Layout{isa.LayoutND, isa.LayoutDN, isa.LayoutNZ, isa.LayoutZN} {
		fmt.Fprintf(&b, "| layout `%s` | `blayout=%s, slayout=%s` |\n", lay, layoutNames[lay][0], layoutNames[lay][1])
	}
	var dts []string
	for d, n := range elemNames {
		dts = append(dts, fmt.Sprintf("| dtype `%s` | `dtype=%s` |", d, n))
	}
	sort.Strings(dts)
	b.WriteString(strings.Join(dts, "\n") + "\n")
	return b.String()
}

// missingTable lists what the export refuses: the instructions of the missing list.
func missingTable() string {
	var b strings.Builder
	b.WriteString("| instruction | why it is not written |\n|---|---|\n")
	for op := isa.Opcode(1); int(op) < isa.NumOpcodes(); op++ {
		if why, ok := missing[op]; ok {
			fmt.Fprintf(&b, "| `%s` | %s |\n", op, why)
		}
	}
	return b.String()
}

// TestDocs: docs/pto-as.md's generated tables are current (go test ./internal/ptoas
// -run TestDocs -update rewrites them).
func TestDocs(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	require.NoError(t, err)
	text := string(data)
	for _, part := range []struct{ name, table string }{
		{"INSTRUCTION TABLE", instructionTable(t)},
		{"MISSING TABLE", missingTable()},
		{"TILE TABLE", tileTable()},
	} {
		begin := fmt.Sprintf("<!-- BEGIN %s: generated by `go test ./internal/ptoas -run TestDocs -update` -->\n", part.name)
		end := fmt.Sprintf("<!-- END %s -->", part.name)
		i, j := strings.Index(text, begin), strings.Index(text, end)
		require.True(t, i >= 0 && j > i, "docs/pto-as.md lacks the markers of %s", part.name)
		want := text[:i+len(begin)] + part.table + text[j:]
		if *update {
			text = want
			continue
		}
		require.Equal(t, want, text, "docs/pto-as.md's %s is stale: run go test ./internal/ptoas -run TestDocs -update", part.name)
	}
	if *update {
		require.NoError(t, os.WriteFile(docsPath, []byte(text), 0o644))
	}
}
