package session

import (
	"strings"

	"pypto/core"
	"pypto/device"
	"pypto/internal/interrupt"
)

// Block-level breakpoints of a Debugger: a node's program runs in the simulator's
// functional mode (values in program order, as a flag-respecting timed run computes
// them) in a goroutine, and a block that reaches a matching instruction waits there
// (device.RunOptions.Pause) while the client looks at its tiles and flags; the next
// Step resumes it. Other blocks run on meanwhile; one block is shown at a time.

// InstrBreak matches instructions of a node's kernels: each set field must match.
type InstrBreak struct {
	// Kernel is the machine program's name or a prefix of it up to an underscore
	// ("matmul_0" matches matmul_0_b3, "matmul_0_b1" not matmul_0_b11); "" any.
	Kernel string `json:"kernel"`
	Index  int    `json:"index"` // the instruction's index in its PTO program (-1 any)
	Line   int    `json:"line"`  // the block kernel's source line (0 any)
	Block  int    `json:"block"` // a block kernel's block (p.block_idx()), else the task's (-1 any)
}

// PausedAt describes a block stopped at an instruction.
type PausedAt struct {
	Node       int           `json:"node"`
	Program    string        `json:"program"`
	Kind       string        `json:"kind"`
	CoreIndex  int           `json:"core"`
	BlockIndex int           `json:"block"`
	PC         int           `json:"pc"`
	Index      int           `json:"index"` // in the PTO program (-1: an instruction the backend inserted)
	Instr      string        `json:"instr"`
	Pipe       string        `json:"pipe"`
	Loc        core.Location `json:"loc"`
	Tiles      []string      `json:"tiles"`
	Flags      []FlagJSON    `json:"flags"`
}

// FlagJSON is a pending flag event count.
type FlagJSON struct {
	Src     string `json:"src"`
	Dst     string `json:"dst"`
	ID      int    `json:"id"`
	Pending int    `json:"pending"`
}

// pausedRun is a node's program running in a goroutine, stopped or finished.
type pausedRun struct {
	node    int
	stops   chan *device.Paused
	resume  chan struct{}
	quit    chan struct{} // closed by Close: blocks stop pausing
	done    chan runResult
	current *device.Paused
	at      PausedAt
	// kernel places a call_kernel node's instructions in the user's kernel (nil for
	// other nodes): lower.Executable.KernelSource.
	kernel func(m *device.MachineProgram, src int) (*core.Kernel, int, int, int, bool)
}

type runResult struct {
	outs [][]byte
	st   Stats
	err  error
}

// pausable is a Program that can run functionally with a pause hook.
type pausable interface {
	RunPaused(inputs [][]byte, stop <-chan struct{}, pause func(*device.Paused)) ([][]byte, Stats, error)
	KernelSource(m *device.MachineProgram, src int) (*core.Kernel, int, int, int, bool)
}

// KernelSource places an instruction in the user's block kernel (lower.Executable's).
func (p loweredProgram) KernelSource(m *device.MachineProgram, src int) (*core.Kernel, int, int, int, bool) {
	return p.exe.KernelSource(m, src)
}

// RunPaused runs the program in the functional mode with pause called before each
// instruction of every block.
func (p loweredProgram) RunPaused(inputs [][]byte, stop <-chan struct{}, pause func(*device.Paused)) ([][]byte, Stats, error) {
	outs, st, err := p.exe.RunWith(inputs, device.RunOptions{MaxInstructions: p.maxSteps, Interrupt: stop, Functional: true, Pause: pause})
	if err != nil {
		return nil, Stats{}, AsError(core.DeviceError, err)
	}
	return outs, Stats{Cycles: st.Cycles, Seconds: st.Seconds, Tasks: len(st.Tasks)}, nil
}

// SetInstrBreaks replaces the block-level breakpoints.
// A running node sees the change at its blocks' next instructions.
func (d *Debugger) SetInstrBreaks(bs []InstrBreak) {
	bs = append([]InstrBreak(nil), bs...)
	d.instrBreaks.Store(&bs)
}

// breaks are the block-level breakpoints now set.
func (d *Debugger) breaks() []InstrBreak {
	if p := d.instrBreaks.Load(); p != nil {
		return *p
	}
	return nil
}

// Paused is where a block of the running node waits, or nil.
func (d *Debugger) Paused() *PausedAt {
	if d.run == nil {
		return nil
	}
	at := d.run.at
	return &at
}

// TileValues are a tile of the paused block, by name: its values (Rows x Cols,
// row-major), shape and valid region.
func (d *Debugger) TileValues(name string) (vals []float64, shape [2]int, valid [2]int, dt string, err error) {
	if d.run == nil {
		return nil, shape, valid, "", core.Errorf(core.ValueError, "no block is paused at an instruction").
			Suggest("set an instruction breakpoint (break_at_instruction) and continue_() to it")
	}
	p := d.run.current
	name = strings.TrimPrefix(name, "%")
	for i, t := range p.Program.Tiles {
		if t.Decl.Name == name {
			v, vr, vc, err := p.TileValues(i)
			if err != nil {
				return nil, shape, valid, "", core.Errorf(core.ValueError, "%v", err)
			}
			return v, [2]int{t.Decl.Rows, t.Decl.Cols}, [2]int{vr, vc}, t.Decl.DType.String(), nil
		}
	}
	return nil, shape, valid, "", core.Errorf(core.ValueError, "program %s has no tile %%%s", p.Program.Name, name).
		Suggest("its tiles: %s", strings.Join(d.run.at.Tiles, ", "))
}

func (b InstrBreak) matches(p *device.Paused, src int, w where) bool {
	name := p.Program.Name
	return (b.Kernel == "" || name == b.Kernel || strings.HasPrefix(name, b.Kernel+"_")) && (b.Index < 0 || b.Index == src) &&
		(b.Line <= 0 || w.loc.Line == b.Line) && (b.Block < 0 || b.Block == w.block)
}

// where is an instruction's place for the breakpoints: the user's line of a block
// kernel's instruction (zero for compiled ops) and the block, which for a block
// kernel is the kernel's (p.block_idx(): a mixed kernel's cube and vector programs of
// one block share it, and a task block running several kernel blocks has each one's
// number) and for other ops the task's.
type where struct {
	loc   core.Location
	block int
}

func (r *pausedRun) where(p *device.Paused, src int) where {
	w := where{block: p.Block}
	if r.kernel == nil {
		return w
	}
	k, prog, instr, block, ok := r.kernel(p.Program, src)
	if !ok {
		return w
	}
	w.block = block
	if ps := k.Sources.Programs; prog < len(ps) && instr < len(ps[prog].Instrs) {
		if i := ps[prog].Instrs[instr]; i >= 0 && i < len(k.Sources.Locs) {
			w.loc = k.Sources.Locs[i]
		}
	}
	return w
}

// startPaused runs node i's program in a goroutine with the breakpoints set.
func (d *Debugger) startPaused(i int, prog pausable, bufs [][]byte) {
	r := &pausedRun{node: i, stops: make(chan *device.Paused), resume: make(chan struct{}), quit: make(chan struct{}), done: make(chan runResult, 1)}
	if d.graph.Nodes[i].Op == "call_kernel" {
		r.kernel = prog.KernelSource
	}
	stop := interrupt.Current()
	pause := func(p *device.Paused) {
		src := p.Instr().Src
		w := r.where(p, src)
		for _, b := range d.breaks() {
			if b.matches(p, src, w) {
				select {
				case r.stops <- p:
					select {
					case <-r.resume:
					case <-r.quit:
					}
				case <-r.quit:
				}
				return
			}
		}
	}
	go func() {
		outs, st, err := prog.RunPaused(bufs, stop, pause)
		r.done <- runResult{outs, st, err}
	}()
	d.run = r
}

// wait resumes nothing: it waits for the running node's next stop or its end. It
// returns true when a block stopped.
func (d *Debugger) wait() (bool, runResult) {
	r := d.run
	select {
	case p := <-r.stops:
		r.current = p
		in := p.Instr()
		src := in.Src
		w := r.where(p, src)
		at := PausedAt{Node: r.node, Program: p.Program.Name, Kind: p.Kind.String(), CoreIndex: p.Core, BlockIndex: w.block,
			PC: p.PC, Index: src, Instr: p.Program.InstrString(p.PC), Pipe: in.Pipe.String(), Loc: w.loc}
		for _, t := range p.Program.Tiles {
			if t.Addr >= 0 {
				at.Tiles = append(at.Tiles, t.Decl.Name)
			}
		}
		for _, f := range p.Flags() {
			at.Flags = append(at.Flags, FlagJSON{Src: f.Src.String(), Dst: f.Dst.String(), ID: f.ID, Pending: f.Pending})
		}
		r.at = at
		return true, runResult{}
	case res := <-r.done:
		d.run = nil
		return false, res
	}
}

// Close lets a node paused at a block run to its end without stopping again, and
// drops it: a debugger given up halfway leaves no goroutine waiting.
func (d *Debugger) Close() {
	if r := d.run; r != nil {
		close(r.quit)
		<-r.done
		d.run = nil
	}
}
