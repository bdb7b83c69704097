package isa

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"pypto/dtype"
	"pypto/internal/checked"
	"pypto/internal/interrupt"
)

// The reference semantics: a hardware-neutral interpreter of PTO programs that
// computes values only (no addresses, pipes or time). It is the definition the device
// simulator is tested against: every opcode's Doc in the table says what it computes
// and the functions of interp_*.go compute exactly that.
//
// Values are kept per tile as float64s already rounded to the tile's dtype (integers
// are exact in float64), so each instruction computes in float64 (integers in int64)
// and rounds once when it writes. GM is the params' little-endian bytes, read and
// written in place. Synchronisation has no effect on values: the reference runs the
// instructions of a program in order, which is what a correctly synchronised program
// computes on any machine.

// Core is one program with its params: the GM bytes of each of p.Params, at least
// Elems*size long. Cores of one InterpretCores call share the queues of TPUSH / TPOP,
// and may share GM by passing the same slices.
type Core struct {
	Prog   *Program
	Params [][]byte
}

// InterpOptions tunes a run of the reference interpreter.
type InterpOptions struct {
	// Print receives TPRINT output; nil discards it.
	Print io.Writer
	// MaxSteps bounds the instructions executed over all cores (0: DefaultMaxSteps),
	// so that a program with a huge trip count fails instead of running for ever.
	MaxSteps int64
	// Interrupt, when closed, stops the run with an error at the next poll; nil takes
	// interrupt.Current() when the run starts, so that Ctrl-C in Python stops it.
	Interrupt <-chan struct{}
}

// DefaultMaxSteps is the instruction budget of a run that sets none: generous (a
// program of 16M instructions takes tens of seconds here, as each computes whole tiles
// in float64), so that only a loop that would not end in useful time reaches it.
const DefaultMaxSteps = 1 << 24

// InterpError is a run-time failure of the reference interpreter: a value-dependent
// rule broken (an index out of range, a division by zero, a window moved outside its
// param, a queue that can never be served).
type InterpError struct {
	Kernel string
	Index  int    // the instruction's index in Body, or -1 for the program as a whole
	Where  string // the instruction's text
	Msg    string
}

func (e *InterpError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("kernel %s: instr %d `%s`: %s", quoteName(e.Kernel), e.Index, e.Where, e.Msg)
	}
	return fmt.Sprintf("kernel %s: %s", quoteName(e.Kernel), e.Msg)
}

// Interpret runs p on its params (params[i] holds the bytes of p.Params[i]) with the
// reference semantics, writing GM in place. p is verified first (without capacity);
// the error is a *VerifyError or an *InterpError.
func Interpret(p *Program, params [][]byte) error {
	return InterpretCores([]Core{{Prog: p, Params: params}}, InterpOptions{})
}

// InterpretCores runs several programs as the cores of one block: a cube program and
// the vector programs it exchanges tiles with through TPUSH / TPOP queues. The cores
// run one at a time, each until it finishes or waits on a queue, in order of the
// slice, so the result does not depend on scheduling; a state in which every
// unfinished core waits is reported as a deadlock.
func InterpretCores(cores []Core, opts InterpOptions) error {
	if len(cores) == 0 {
		return errors.New("isa: no program to interpret")
	}
	print := opts.Print
	if print == nil {
		print = io.Discard
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.Interrupt == nil {
		opts.Interrupt = interrupt.Current()
	}
	sh := &shared{print: print, maxSteps: opts.MaxSteps, interrupt: opts.Interrupt}
	ms := make([]*machine, len(cores))
	for i, c := range cores {
		if err := Verify(c.Prog, nil); err != nil {
			return err
		}
		m, err := newMachine(c, sh)
		if err != nil {
			return err
		}
		ms[i] = m
	}
	for {
		progress, running := false, false
		for _, m := range ms {
			if m.done() {
				continue
			}
			ran, err := m.run()
			if err != nil {
				return err
			}
			progress = progress || ran
			running = running || !m.done()
		}
		if !running {
			return nil
		}
		if !progress {
			return deadlock(ms)
		}
	}
}

func deadlock(ms []*machine) error {
	for _, m := range ms {
		if !m.done() {
			in := m.p.Body[m.pc]
			return m.errorf(m.pc, "deadlock: waits on queue %v, which no core will serve", in.Args[queueArg(in.Op)].Imm)
		}
	}
	return errors.New("isa: deadlock")
}

func queueArg(op Opcode) int {
	if op == TPOP {
		return 1
	}
	return 0
}

// shared is the state the cores of one run share.
type shared struct {
	queues    [NumQueues]queue
	print     io.Writer
	steps     int64
	maxSteps  int64
	interrupt <-chan struct{}
}

// queue is one inter-core FIFO: entries[:popped] are popped and not yet freed, the
// rest wait to be popped; len(entries) slots are taken.
type queue struct {
	entries []tileValue
	popped  int
}

// tileValue is a copy of a tile's values in flight through a queue.
type tileValue struct {
	rows, cols int
	vals       []float64
}

// machine is one core's state.
type machine struct {
	p      *Program
	sh     *shared
	params [][]byte
	tiles  [][]float64 // values, row-major over rows x cols, rounded to the tile's dtype
	regs   []int64
	pc     int
	loops  []loopFrame
	ends   []int // ends[i] is the matching ENDLOOP of a LOOP at i
}

type loopFrame struct {
	start       int // the LOOP's index
	counter     int
	count, iter int64
}

// maxInterpElems bounds the tile elements of one program (8 bytes each in the
// interpreter): far above any buffer of a real core, low enough that a corrupt
// declaration fails instead of exhausting memory.
const maxInterpElems = 1 << 26

// errBlocked is what a queue instruction returns when it must wait for another core.
var errBlocked = errors.New("blocked on a queue")

func newMachine(c Core, sh *shared) (*machine, error) {
	p := c.Prog
	m := &machine{p: p, sh: sh, params: c.Params, regs: make([]int64, len(p.Regs)), ends: make([]int, len(p.Body))}
	if len(c.Params) != len(p.Params) {
		return nil, m.errorf(-1, "%d param buffers for %d params", len(c.Params), len(p.Params))
	}
	for i, prm := range p.Params {
		if need, ok := prm.Bytes(); !ok || len(c.Params[i]) < need {
			return nil, m.errorf(-1, "param %%%s needs %d bytes (%d x %s), its buffer has %d", quoteName(prm.Name), need, prm.Elems, prm.DType, len(c.Params[i]))
		}
	}
	m.tiles = make([][]float64, len(p.Tiles))
	total := 0
	for i, t := range p.Tiles {
		n, ok := checked.Mul(t.Rows, t.Cols)
		if total, ok = checked.Add(total, n); !ok || total > maxInterpElems {
			return nil, m.errorf(-1, "the tiles hold more than the %d elements the reference interpreter keeps (tile %s is %dx%d)", maxInterpElems, tileRef(t), t.Rows, t.Cols)
		}
		m.tiles[i] = make([]float64, n)
	}
	var open []int
	for i, in := range p.Body {
		switch in.Op {
		case LOOP:
			open = append(open, i)
		case ENDLOOP:
			m.ends[open[len(open)-1]] = i
			open = open[:len(open)-1]
		}
	}
	return m, nil
}

func (m *machine) done() bool { return m.pc >= len(m.p.Body) }

func (m *machine) errorf(i int, format string, args ...any) *InterpError {
	e := &InterpError{Kernel: m.p.Name, Index: i, Msg: fmt.Sprintf(format, args...)}
	if i >= 0 && i < len(m.p.Body) {
		e.Where = FormatInstr(m.p, m.p.Body[i])
	}
	return e
}

// openLoops names the loops the core is in, innermost first, with the iteration each
// has reached.
func (m *machine) openLoops() string {
	var b strings.Builder
	for i := len(m.loops) - 1; i >= 0; i-- {
		l := m.loops[i]
		if i == len(m.loops)-1 {
			b.WriteString(" in ")
		} else {
			b.WriteString(", inside ")
		}
		fmt.Fprintf(&b, "the loop at instr %d `%s`, at iteration %d of %d", l.start, FormatInstr(m.p, m.p.Body[l.start]), l.iter+1, l.count)
	}
	return b.String()
}

// run executes instructions until the program ends or waits on a queue, and reports
// whether it executed any.
func (m *machine) run() (bool, error) {
	ran := false
	for !m.done() {
		in := m.p.Body[m.pc]
		if m.sh.steps >= m.sh.maxSteps {
			return ran, m.errorf(m.pc, "exceeds the budget of %d executed instructions%s (InterpOptions.MaxSteps)", m.sh.maxSteps, m.openLoops())
		}
		if m.sh.steps%interrupt.PollEvery == interrupt.PollEvery-1 && interrupt.Requested(m.sh.interrupt) {
			return ran, m.errorf(m.pc, "interrupted after %d executed instructions%s", m.sh.steps, m.openLoops())
		}
		next, err := m.step(in)
		if err == errBlocked {
			return ran, nil
		}
		if err != nil {
			return ran, m.errorf(m.pc, "%v", err)
		}
		m.sh.steps++
		ran = true
		m.pc = next
	}
	return ran, nil
}

// step executes one instruction and returns the index of the next.
func (m *machine) step(in Instr) (int, error) {
	switch in.Op {
	case LOOP:
		return m.loop(in)
	case ENDLOOP:
		return m.endloop()
	}
	exec := execRules[in.Op]
	if exec == nil {
		return 0, fmt.Errorf("the reference has no semantics for %s", in.Op)
	}
	return m.pc + 1, exec(m, in)
}

// The accessors below read operands; the verifier has checked kinds and indices.

func (m *machine) decl(a Operand) TileDecl  { return m.p.Tiles[a.Tile] }
func (m *machine) vals(a Operand) []float64 { return m.tiles[a.Tile] }

// scalar is the value of a register or integer-immediate operand.
func (m *machine) scalar(a Operand) int64 {
	if a.Kind == KindReg {
		return m.regs[a.Reg]
	}
	return int64(a.Imm)
}

func (m *machine) reg(r RegRef) int64 {
	i, _ := r.Index()
	return m.regs[i]
}

// valid is the valid region of a tile operand now.
func (m *machine) valid(a Operand) (rows, cols int, err error) {
	t := m.decl(a)
	rows, err = m.validDim(t, "rows", t.ValidRows, t.ValidRowsReg, t.Rows)
	if err == nil {
		cols, err = m.validDim(t, "cols", t.ValidCols, t.ValidColsReg, t.Cols)
	}
	return rows, cols, err
}

func (m *machine) validDim(t TileDecl, what string, n int, r RegRef, full int) (int, error) {
	if r != 0 {
		v := m.reg(r)
		if v < 0 || v > int64(full) {
			return 0, fmt.Errorf("valid %s of %s = %s = %d, outside [0, %d]", what, tileRef(t), formatRegRef(m.p, r), v, full)
		}
		return int(v), nil
	}
	if n == 0 {
		return full, nil
	}
	return n, nil
}

// window is a GM view resolved with the registers: its element offset and size,
// checked against the param.
type window struct {
	param            int
	dt               dtype.DType
	buf              []byte
	off, rows, cols  int
	rowStride, colSt int
}

func (w window) index(r, c int) int { return w.off + r*w.rowStride + c*w.colSt }
func (w window) load(r, c int) float64 {
	return dtype.Load(w.dt, w.buf, w.index(r, c))
}

func (m *machine) window(v GMView) (window, error) {
	prm := m.p.Params[v.Param]
	w := window{param: v.Param, dt: prm.DType, buf: m.params[v.Param], off: v.Offset, rows: v.Rows, cols: v.Cols, rowStride: v.RowStride, colSt: v.ColStride}
	if v.OffsetReg != 0 {
		w.off += int(m.reg(v.OffsetReg))
	}
	for _, d := range []struct {
		name  string
		r     RegRef
		bound int
		dst   *int
	}{{"rows", v.RowsReg, v.Rows, &w.rows}, {"cols", v.ColsReg, v.Cols, &w.cols}} {
		if d.r == 0 {
			continue
		}
		x := m.reg(d.r)
		if x < 0 || x > int64(d.bound) {
			return w, fmt.Errorf("view %s %s = %d, outside [0, %d]", d.name, formatRegRef(m.p, d.r), x, d.bound)
		}
		*d.dst = int(x)
	}
	if w.rows == 0 || w.cols == 0 {
		return w, nil
	}
	last := w.index(w.rows-1, w.cols-1)
	if w.off < 0 || last >= prm.Elems {
		return w, fmt.Errorf("view of %%%s at offset %d (%dx%d, strides %d,%d) reaches elements %d..%d, outside its %d", quoteName(prm.Name), w.off, w.rows, w.cols, w.rowStride, w.colSt, w.off, last, prm.Elems)
	}
	return w, nil
}
