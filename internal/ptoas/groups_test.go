package ptoas

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/internal/npzvals"
	"pypto/isa"
)

// An instruction the dialect has no op for is written as a group of the dialect's ops
// (the first carries pypto.instr, the others pypto.part): the reader rebuilds the
// instruction, but ptoas, and the hardware after it, run the group's ops. These tests
// read the groups literally (the markers stripped, scratch tiles made real tiles) and
// check that the ops compute the instruction's bytes, on the golden cases' inputs
// (isa/testdata/golden) and on inputs full of edge values.

var (
	groupMarks = regexp.MustCompile(` \{pypto\.instr = "(?:[^"\\]|\\.)*"\}| \{pypto\.part\}`)
	tempMark   = regexp.MustCompile(` \{pypto\.temp\}`)
)

// literal is PTO-AS text with its op groups' markers removed: read, it is the program
// of the dialect's ops the group stands for.
func literal(text string) string {
	return tempMark.ReplaceAllString(groupMarks.ReplaceAllString(text, ""), "")
}

// groupCase is a golden program with inputs for its params.
type groupCase struct {
	name   string
	prog   *isa.Program
	params [][]byte
}

// runBytes interprets p on a copy of params and returns every param's bytes after.
func runBytes(p *isa.Program, params [][]byte) ([][]byte, error) {
	out := make([][]byte, len(params))
	for i, b := range params {
		out[i] = append([]byte(nil), b...)
	}
	return out, isa.Interpret(p, out)
}

// checkGroups writes c's program (auto form), reads its groups literally and compares
// the bytes both compute. It reports whether the program has a group.
func checkGroups(t *testing.T, c groupCase) bool {
	t.Helper()
	m, err := WriteTask(Task{Name: c.prog.Name, Programs: []*isa.Program{c.prog}})
	if err != nil {
		return false // refused: TestAutoFormReadsBackToTheProgram checks the reason
	}
	if !strings.Contains(m.Text, "pypto.instr") {
		return false
	}
	fns, err := Read(c.name, literal(m.Text), 0)
	require.NoError(t, err, "%s, read literally:\n%s", c.name, literal(m.Text))
	want, err := runBytes(c.prog, c.params)
	require.NoError(t, err, c.name)
	got, err := runBytes(fns[0].Programs[0], c.params)
	require.NoError(t, err, "%s, read literally:\n%s", c.name, literal(m.Text))
	for i, prm := range c.prog.Params {
		if !bytes.Equal(want[i], got[i]) {
			w := dtype.Decode(prm.DType, want[i], prm.Elems)
			g := dtype.Decode(prm.DType, got[i], prm.Elems)
			for k := range w {
				if math.Float64bits(w[k]) != math.Float64bits(g[k]) && !(math.IsNaN(w[k]) && math.IsNaN(g[k])) {
					t.Errorf("%s: param %s element %d: the instruction gives %v, its group of ops %v\n%s", c.name, prm.Name, k, w[k], g[k], literal(m.Text))
					break
				}
			}
			if !t.Failed() {
				t.Errorf("%s: param %s: the group's bytes differ from the instruction's (NaN payloads)", c.name, prm.Name)
			}
		}
	}
	return true
}

// goldenCase reads golden case name with its .npz inputs (nil inputs when it has none).
func goldenCase(t *testing.T, name string) groupCase {
	p, err := isa.ParseFile(filepath.Join("../../isa/testdata/golden", name+".pto"))
	require.NoError(t, err)
	c := groupCase{name: name, prog: p, params: make([][]byte, len(p.Params))}
	arrays, err := npzvals.ReadFile(filepath.Join("../../isa/testdata/golden", name+".npz"))
	require.NoError(t, err)
	for i, prm := range p.Params {
		c.params[i] = make([]byte, prm.Elems*prm.DType.Size())
		if vals, ok := arrays[prm.Name]; ok {
			require.Len(t, vals, prm.Elems, "%s: input %s", name, prm.Name)
			c.params[i] = dtype.Encode(prm.DType, vals)
		}
	}
	return c
}

// edgeValues are values a sequence of ops gets wrong first: signed zeros, infinities,
// NaN, the extremes of each dtype and their neighbours, subnormals.
func edgeValues(d dtype.DType) []float64 {
	switch {
	case d == dtype.Bool:
		return []float64{0, 1}
	case d.IsFloat():
		lim := map[dtype.DType][2]float64{
			dtype.Float32:  {math.MaxFloat32, math.SmallestNonzeroFloat32},
			dtype.Float16:  {65504, math.Ldexp(1, -24)},
			dtype.BFloat16: {math.Ldexp(255, 120), math.Ldexp(1, -133)},
		}[d]
		maxf, tiny := lim[0], lim[1]
		return []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, 3, -3, math.Inf(1), math.Inf(-1), math.NaN(), maxf, -maxf, tiny, -tiny, 1e-3, -1e-3, 1.5, -2.5}
	default:
		bits := 8 * d.Size()
		lo, hi := -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1)-1
		return []float64{0, 1, -1, 2, -2, 3, 7, -7, lo, lo + 1, hi, hi - 1, 100, -100}
	}
}

// indexParams are the params loaded into tiles that index (the gathers' and
// scatters' idx).
func indexParams(p *isa.Program) map[int]bool {
	tiles := map[int]bool{}
	for _, in := range p.Body {
		switch in.Op {
		case isa.TGATHER, isa.TGATHERB, isa.TSCATTER, isa.MGATHER, isa.MSCATTER:
			tiles[in.Args[2].Tile] = true
		}
	}
	params := map[int]bool{}
	for _, in := range p.Body {
		if in.Op == isa.TLOAD && tiles[in.Args[0].Tile] {
			params[in.Args[1].GM.Param] = true
		}
	}
	return params
}

// edgeInputs fills every param with edge values of its dtype (pairing each value with
// each other across params of equal size), keeping the params that index (the
// gathers' idx) from the golden inputs.
func edgeInputs(c groupCase) groupCase {
	e := groupCase{name: c.name + " (edge values)", prog: c.prog, params: make([][]byte, len(c.params))}
	index := indexParams(c.prog)
	divisors := divisorParams(c.prog)
	for i, prm := range c.prog.Params {
		if index[i] || prm.DType == dtype.Int32 && strings.Contains(strings.ToLower(prm.Name), "idx") {
			e.params[i] = c.params[i]
			continue
		}
		vals := edgeValues(prm.DType)
		if divisors[i] { // an integer division by zero is an error in our ISA: it never runs
			vals = slices.DeleteFunc(slices.Clone(vals), func(v float64) bool { return v == 0 })
		}
		out := make([]float64, prm.Elems)
		stride := 1
		for k := 0; k < i; k++ {
			stride *= len(vals)
		}
		for k := range out {
			out[k] = vals[(k/stride+k)%len(vals)]
		}
		e.params[i] = dtype.Encode(prm.DType, out)
	}
	return e
}

// divisorParams are the params loaded into the divisor of an integer division.
func divisorParams(p *isa.Program) map[int]bool {
	loadedFrom := map[int]int{}
	for _, in := range p.Body {
		if in.Op == isa.TLOAD {
			loadedFrom[in.Args[0].Tile] = in.Args[1].GM.Param
		}
	}
	out := map[int]bool{}
	for _, in := range p.Body {
		if (in.Op == isa.TDIV || in.Op == isa.TREM) && p.Tiles[in.Args[0].Tile].DType.IsInt() {
			if prm, ok := loadedFrom[in.Args[2].Tile]; ok {
				out[prm] = true
			}
		}
	}
	return out
}

func TestOpGroupsComputeTheirInstruction(t *testing.T) {
	data, err := os.ReadFile("../../isa/testdata/golden/CASES")
	require.NoError(t, err)
	checked := 0
	for _, name := range strings.Fields(string(data)) {
		c := goldenCase(t, name)
		if !checkGroups(t, c) {
			continue
		}
		checkGroups(t, edgeInputs(c))
		checked++
	}
	t.Logf("%d golden programs with op groups computed by their groups", checked)
	assert.Greater(t, checked, 5, fmt.Sprint("too few programs with groups"))
}
