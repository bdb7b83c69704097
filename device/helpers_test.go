package device

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// progBuilder assembles PTO programs in tests.
type progBuilder struct{ p *isa.Program }

func newProg(name string, core isa.CoreKind) *progBuilder {
	return &progBuilder{p: &isa.Program{Name: name, Core: core}}
}

func (b *progBuilder) param(name string, dt dtype.DType, elems int) int {
	b.p.Params = append(b.p.Params, isa.Param{Name: name, DType: dt, Elems: elems})
	return len(b.p.Params) - 1
}

// tile declares a tile; a name a param already has gets the suffix "_t" (params and
// tiles share one namespace).
func (b *progBuilder) tile(name string, loc isa.Location, dt dtype.DType, rows, cols int) int {
	for b.nameTaken(name) {
		name += "_t"
	}
	b.p.Tiles = append(b.p.Tiles, isa.TileDecl{Name: name, Loc: loc, DType: dt, Rows: rows, Cols: cols})
	return len(b.p.Tiles) - 1
}

func (b *progBuilder) nameTaken(name string) bool {
	for _, p := range b.p.Params {
		if p.Name == name {
			return true
		}
	}
	for _, t := range b.p.Tiles {
		if t.Name == name {
			return true
		}
	}
	return false
}

func (b *progBuilder) op(op isa.Opcode, args ...isa.Operand) *progBuilder {
	b.p.Body = append(b.p.Body, isa.Instr{Op: op, Args: args})
	return b
}

func tl(i int) isa.Operand { return isa.TileOp(i) }

// view is a row-major window of a param with the given row stride.
func view(param, off, rows, cols, rowStride int) isa.Operand {
	return isa.GMOp(isa.GMView{Param: param, Offset: off, Rows: rows, Cols: cols, RowStride: rowStride, ColStride: 1})
}

// flag appends a manual SET_FLAG or WAIT_FLAG.
func (b *progBuilder) flag(op isa.Opcode, src, dst isa.Pipe, id int) *progBuilder {
	return b.op(op, isa.PipeOp(src), isa.PipeOp(dst), isa.ImmOp(float64(id)))
}

func preset(t testing.TB, name string) *Chip {
	t.Helper()
	c, err := Preset(name)
	require.NoError(t, err)
	return c
}

func compile(t testing.TB, chip *Chip, p *isa.Program) *MachineProgram {
	t.Helper()
	m, err := Compile(chip, p)
	require.NoError(t, err)
	return m
}

// gmLayout places buffers one after another in a fresh GM, 32-byte aligned.
type gmLayout struct {
	gm    []byte
	addrs []int
}

func layout(bufs ...[]byte) *gmLayout {
	l := &gmLayout{}
	off := 0
	for _, b := range bufs {
		l.addrs = append(l.addrs, off)
		off += (len(b) + 31) / 32 * 32
	}
	l.gm = make([]byte, off)
	for i, b := range bufs {
		copy(l.gm[l.addrs[i]:], b)
	}
	return l
}

func (l *gmLayout) bytes(i, n int) []byte { return l.gm[l.addrs[i] : l.addrs[i]+n] }

// randValues draws n values in [-r, r] already representable in dt.
func randValues(rng *rand.Rand, dt dtype.DType, n int, r float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		x := (rng.Float64()*2 - 1) * r
		if dt.IsInt() {
			x = math.Round(x)
		}
		v[i] = dtype.Round(dt, x)
	}
	return v
}

// countFlags counts the SET_FLAG instructions of a machine program per "src->dst".
func countFlags(m *MachineProgram) map[string]int {
	n := map[string]int{}
	for _, in := range m.Instrs {
		if in.Op == isa.SET_FLAG {
			n[in.Args[0].Pipe.String()+"->"+in.Args[1].Pipe.String()]++
		}
	}
	return n
}

// requireFlagsPaired checks that every (pair, id) alternates set, wait, set, wait in
// program order: each wait has its set before it and ids of overlapping syncs differ.
func requireFlagsPaired(t *testing.T, m *MachineProgram) {
	t.Helper()
	open := map[flagKey]int{}
	for pc := range m.Instrs {
		in := &m.Instrs[pc]
		switch in.Op {
		case isa.SET_FLAG:
			k := flagKeyOf(in)
			require.Zero(t, open[k], "pc %d sets %v while a set is pending:\n%s", pc, k, m)
			open[k]++
		case isa.WAIT_FLAG:
			k := flagKeyOf(in)
			require.Equal(t, 1, open[k], "pc %d waits for %v without a pending set:\n%s", pc, k, m)
			open[k]--
		}
	}
	for k, n := range open {
		require.Zero(t, n, "unconsumed set %v", k)
	}
}

// listingLines returns the instruction lines of a listing without pc numbers or
// addresses, e.g. "mte2 set_flag mte2, mte1, 0".
func listingOps(m *MachineProgram) []string {
	out := make([]string, len(m.Instrs))
	for pc := range m.Instrs {
		f := strings.Fields(m.InstrString(pc))
		out[pc] = f[0] + " " + f[1]
	}
	return out
}

// eventsOf is the trace records of st's instructions of opcode op, in trace order.
func eventsOf(st *TaskStats, op isa.Opcode) []TraceEvent {
	var out []TraceEvent
	for _, e := range st.Trace {
		if e.Op == op {
			out = append(out, e)
		}
	}
	return out
}
