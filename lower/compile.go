package lower

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"pypto/core"
	"pypto/device"
	"pypto/internal/checked"
	"pypto/internal/interrupt"
	"pypto/isa"
)

// Options configure a compilation.
type Options struct {
	Chip   *device.Chip
	Verify bool // verify the IR after every pass (always on in tests)
	Dump   bool // keep the text of every level after every pass
	// OptLevel picks the optional passes that run (the zero value: DefaultOptLevel);
	// Disabled switches optional passes off by name on top of it. Naming a pass that
	// does not exist, or a required one, is an error listing the valid names.
	OptLevel OptLevel
	Disabled map[string]bool
	// MemoryPoolBytes, when not 0, is the device memory the program must run in: a
	// memory plan that needs more is a CompileError saying how much it needs.
	MemoryPoolBytes int
	// StopAfter ends the compilation after the named pass (e.g. "plan-exec" gives the
	// PTO programs without machine programs, which cannot Run).
	StopAfter string
	// FixedTiles keeps the tile pass's fixed rules (matmulTile, attentionTile, rowsTile:
	// K never split) instead of the search-tiles pass's choices from the device's
	// timing model: the same as disabling search-tiles; O0 implies it.
	FixedTiles bool
	// Deterministic gives the same output bits at every OptLevel and on every chip: K
	// is never split (split_k.go adds partial products in another order than one
	// accumulation), the passes marked Reassociates do not run, and float sums and
	// products add in one instruction's order whatever the tiles
	// (deterministicReduceTile).
	Deterministic bool
	// Donate lists the graph params (by position) whose GM bytes the program may
	// overwrite: a slice_update of a donated input writes in place (lowering_update.go)
	// and the result comes back in the input's buffer.
	Donate []int
	// Weights lists the graph params (by position) whose bytes the caller passes
	// unchanged to every run (a model's weights): the ops that compute from them alone
	// run once and their results are kept for the runs with the same weight bytes
	// (prepare_weights.go). Constants the compiler binds are weights too.
	Weights []int
	// Runtime is the runtime's scheduling features the program's runs use.
	Runtime Runtime
	// Visualize keeps what Executable.Visualization shows: the Tensor Graph the tile
	// pass lowered and, for each pass, the difference it made to the level it left.
	Visualize bool
	// Dynamic names the sizes the program reads when it runs (dynamic_sizes.go); nil:
	// every size is the graph's.
	Dynamic *DynamicSizes
	// MaxCores, when not 0, is the most AI cores a kernel uses (the vendor's block
	// dimension): the program is compiled for, and runs on, Chip limited to that many
	// (device.Chip.WithAICores: their cube and vector cores), so tilings, the tile
	// search and the dealing of tiles to blocks see only those. It must be in [1,
	// Chip.CubeCores].
	MaxCores int
}

// Executable is a compiled graph ready to run on the simulated device. It is
// immutable but for its pool of GM images, so Run may be called from several
// goroutines at once.
type Executable struct {
	chip    *device.Chip
	graph   *core.Graph
	exec    *ExecGraph
	times   []PassTiming
	dumps   []string
	layouts []LayoutConversion
	compile time.Duration
	// stopAfter is Options.StopAfter: set when the machine programs were not built.
	stopAfter string
	// constants are the data of the last params, which Run binds itself (see
	// runBindConstants).
	constants [][]byte
	images    gmImages // GM images of finished runs, for the next ones
	weights   weightCache
	runtime   Runtime
	// lowered and passes are kept with Options.Visualize (see visualize.go).
	lowered *core.Graph
	passes  []passRecord
}

var passTableOnce = sync.OnceValue(func() error { return checkPassTable(passTable) })

// Compile lowers g for opts.Chip. Errors are *core.Error.
func Compile(g *core.Graph, opts Options) (exe *Executable, err error) {
	defer func() {
		if r := recover(); r != nil { // a compiler bug must not take the caller down
			exe, err = nil, core.Errorf(core.InternalError, "compiler panic: %v", r)
		}
	}()
	if opts.Chip == nil {
		return nil, core.Errorf(core.ValueError, "lower.Compile: no chip given")
	}
	if err := passTableOnce(); err != nil {
		return nil, core.Errorf(core.InternalError, "%v", err)
	}
	if err := CheckOptions(opts); err != nil {
		return nil, err
	}
	if opts.MaxCores != 0 {
		chip, err := opts.Chip.WithAICores(opts.MaxCores)
		if err != nil {
			return nil, core.Errorf(core.ValueError, "max_cores=%d: %v", opts.MaxCores, err).
				Suggest("give max_cores between 1 and %d for %s, or leave it unset to use every core", opts.Chip.CubeCores, opts.Chip.Name)
		}
		opts.Chip = chip
	}
	if core.HasInt64(g) {
		return nil, core.Errorf(core.CompileError, "graph %q has int64 values, which the chip computes in int32", g.Name).
			Suggest("narrow it first with core.NarrowInt64 (the session does, for every program it compiles)")
	}
	if opts.FixedTiles { // the tile pass's fixed rules, as without the tile search
		opts.Disabled = maps.Clone(opts.Disabled)
		if opts.Disabled == nil {
			opts.Disabled = map[string]bool{}
		}
		opts.Disabled["search-tiles"] = true
	}
	start := time.Now()
	c := &compilation{opts: opts, chip: opts.Chip, graph: g}
	if err := c.run(passTable); err != nil {
		return nil, err
	}
	if c.exec == nil {
		return nil, core.Errorf(core.ValueError, "lower.Compile: StopAfter=%q ends before an execution graph exists", opts.StopAfter)
	}
	return &Executable{chip: opts.Chip, graph: g, exec: c.exec, times: c.times, dumps: c.dumps, layouts: c.layouts, compile: time.Since(start), stopAfter: opts.StopAfter, constants: c.constants, runtime: opts.Runtime,
		lowered: c.lowered, passes: c.records}, nil
}

// TaskRun is what one task did in a run.
type TaskRun struct {
	Name  string
	Core  isa.CoreKind
	Stats *device.TaskStats
	Slot  device.TaskSlot // where and when the dispatcher ran it
	// Prepared marks a weight-prep task the run skipped, its results kept from an
	// earlier run with the same weights (prepare_weights.go); its Stats are zero.
	Prepared bool
}

// RunStats summarises a run on the simulated device.
type RunStats struct {
	// Cycles is the simulated time of the run: when the dispatcher saw the last task
	// complete (with the plain Runtime, the sum of the tasks' Cycles).
	Cycles  int64
	Seconds float64 // Cycles at the chip's clock
	// SequentialCycles sums the tasks' Cycles: the time of the same task runs one
	// after another.
	SequentialCycles int64
	// KernelCycles sums the tasks' kernel times (first to last instruction of the
	// busiest core), without their start and end (dispatch, core start, prologue,
	// epilogue, final sync).
	KernelCycles  int64
	KernelSeconds float64 // KernelCycles at the chip's clock
	Tasks         []TaskRun
	// Skipped counts the tasks the run did not execute: weight preparation whose
	// results an earlier run kept (TaskRun.Prepared).
	Skipped int
	// HBMBytesRead and HBMBytesWritten are the run's traffic with the device memory
	// behind the L2: the lines the tasks' loads missed or had prefetched, and the
	// bytes written through or written back (dirty workspace lines evicted during
	// the run, and those left in L2 when it ends). Without an L2 model every GM byte
	// read or written.
	HBMBytesRead, HBMBytesWritten int64
}

// Ran is the number of tasks the run executed.
func (s *RunStats) Ran() int { return len(s.Tasks) - s.Skipped }

// TimingCached is the number of tasks whose times came from the device's timing
// cache: an earlier run of the same task with the same timing inputs (their values
// were computed again).
func (s *RunStats) TimingCached() int {
	n := 0
	for _, t := range s.Tasks {
		if t.Stats != nil && t.Stats.TimingCached {
			n++
		}
	}
	return n
}

// Run executes the program. inputs holds one contiguous little-endian buffer per graph
// param; the results are one buffer per graph output.
func (e *Executable) Run(inputs [][]byte) (outputs [][]byte, stats *RunStats, err error) {
	return e.RunWith(inputs, device.RunOptions{})
}

// RunWith is Run with the simulator's options (a trace, timing only, values only).
func (e *Executable) RunWith(inputs [][]byte, opts device.RunOptions) (outputs [][]byte, stats *RunStats, err error) {
	return e.run(nil, inputs, opts, e.runtime)
}

// RunRuntime is RunWith with the runtime's features rt instead of those the program
// was compiled with (Options.Runtime).
func (e *Executable) RunRuntime(inputs [][]byte, opts device.RunOptions, rt Runtime) (outputs [][]byte, stats *RunStats, err error) {
	return e.run(nil, inputs, opts, rt)
}

// RunIn is RunWith in device memory that pool lends (nil: the executable's own
// recycled GM images); the memory goes back to the pool when the run is over.
func (e *Executable) RunIn(pool GMAllocator, inputs [][]byte, opts device.RunOptions) (outputs [][]byte, stats *RunStats, err error) {
	return e.run(pool, inputs, opts, e.runtime)
}

func (e *Executable) run(pool GMAllocator, inputs [][]byte, opts device.RunOptions, rt Runtime) (outputs [][]byte, stats *RunStats, err error) {
	defer func() {
		if r := recover(); r != nil {
			outputs, stats, err = nil, nil, core.Errorf(core.InternalError, "run panic: %v", r)
		}
	}()
	tg := e.exec.Blocks.Tiles
	if n := len(tg.Params) - len(e.constants); len(inputs) != n {
		return nil, nil, core.Errorf(core.ValueError, "program takes %d inputs, got %d", n, len(inputs))
	}
	inputs = append(inputs[:len(inputs):len(inputs)], e.constants...)
	if err := e.chip.CheckGM(e.exec.GMBytes, gmWhat); err != nil {
		return nil, nil, core.MemoryErrorOf(err)
	}
	if err := checked.Host(e.exec.GMBytes, gmWhat); err != nil {
		return nil, nil, core.MemoryErrorOf(err)
	}
	if opts.Interrupt == nil { // one for the whole run, so Ctrl-C between tasks stops it too
		opts.Interrupt = interrupt.Current()
	}
	gm, release, err := e.image(pool, opts.Interrupt)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	for i, t := range tg.Params {
		want := tg.Tensors[t].Type
		if len(inputs[i]) != want.Bytes() {
			return nil, nil, core.Errorf(core.ValueError, "input %d has %d bytes, its type %s needs %d", i, len(inputs[i]), want, want.Bytes())
		}
		copy(gm[e.exec.Buffers[t].Offset:], inputs[i])
	}
	skip, keep := e.prepare(gm, inputs, opts.NoValues)
	stats, err = e.runTasks(gm, opts, rt, skip)
	if err != nil {
		return nil, nil, err
	}
	keep()
	for _, t := range tg.Outputs {
		n := tg.Tensors[t].Type.Bytes()
		off := e.exec.Buffers[t].Offset
		outputs = append(outputs, append([]byte(nil), gm[off:off+n]...))
	}
	if pool == nil {
		e.images.put(gm) // only on success: a failed run's image is left to the collector
	}
	return outputs, stats, nil
}

func gmWhat() string { return "the program's global memory" }

// runTask runs one task's machine programs, its params bound to addrs: blocks of one
// core kind, or a mixed task's groups of a cube and its vector programs.
func runTask(chip *device.Chip, gm []byte, task *Task, addrs []int, opts device.RunOptions) (*device.TaskStats, error) {
	if task.Vectors == 0 {
		blocks := make([]device.Block, len(task.Machine))
		for i, m := range task.Machine {
			blocks[i] = device.Block{Prog: m, ParamAddrs: addrs}
		}
		return device.RunTask(chip, gm, task.Core, blocks, opts)
	}
	n := task.GroupSize()
	groups := make([]device.Group, len(task.Machine)/n)
	for i := range groups {
		ms := task.Machine[i*n : (i+1)*n]
		groups[i].Cube = &device.Block{Prog: ms[0], ParamAddrs: addrs}
		for _, m := range ms[1:] {
			groups[i].Vector = append(groups[i].Vector, device.Block{Prog: m, ParamAddrs: addrs})
		}
	}
	return device.RunGroupTask(chip, gm, groups, opts)
}

// Chip is the chip the program was compiled for.
func (e *Executable) Chip() *device.Chip { return e.chip }

// Exec is the execution graph (read-only).
func (e *Executable) Exec() *ExecGraph { return e.exec }

// PassTimes reports how long each pass took.
func (e *Executable) PassTimes() []PassTiming { return e.times }

// CompileTime is the wall time Compile took.
func (e *Executable) CompileTime() time.Duration { return e.compile }

// Dump prints all four graph levels and the machine programs.
func (e *Executable) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "== tensor graph ==\n%s\n", core.Format(e.graph))
	// The execution graph's text nests the tile and block graphs it was built from.
	fmt.Fprintf(&b, "== execution graph (with its tile and block graphs) ==\n%s\n", e.exec.Format(true))
	fmt.Fprintf(&b, "== memory plan ==\n%s\n", e.MemoryPlan())
	fmt.Fprintf(&b, "== layout conversions kept: %d ==\n", len(e.layouts))
	for _, l := range e.layouts {
		fmt.Fprintf(&b, "%s\n", l)
	}
	b.WriteString("== machine programs ==\n")
	for _, t := range e.exec.Tasks {
		for _, m := range t.Machine {
			b.WriteString(m.String())
		}
	}
	return b.String()
}

// PassDumps returns the text of each level after each pass (Options.Dump).
func (e *Executable) PassDumps() []string { return e.dumps }
