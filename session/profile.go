package session

import (
	"io"
	"slices"
	"strings"

	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
	"pypto/lower"
)

// Profile is what a profiled run recorded beyond Stats: every task with what it
// computes, when it started and its statistics (with the instruction trace), the GM
// buffers of the memory plan with the tasks they live for, and the chip's peaks.
type Profile struct {
	Chip    ChipPeaks          `json:"chip"`
	Tasks   []ProfiledTask     `json:"tasks"`
	Buffers []lower.BufferInfo `json:"buffers"`
	Cycles  int64              `json:"cycles"`
}

// ProfiledTask is one task of a profiled run; Stats.Trace is left out of its JSON.
type ProfiledTask struct {
	lower.TaskInfo
	Start int64             `json:"start_cycles"` // in the run's cycles
	Stats *device.TaskStats `json:"-"`
	Info  taskFigures       `json:"stats"`
	// ChipCores are the chip's units the dispatcher placed the task's cores on
	// (device.TaskSlot.Cores: AI cores for a mixed task).
	ChipCores []int `json:"chip_cores"`
	// Cores is each core's busy time per pipe in this task, from the trace.
	Cores []CoreBusy `json:"cores"`
}

// CoreBusy is one core's time in a task: its span (first instruction start to last
// end) and the cycles each pipe executed. Core is the chip's core (where the
// dispatcher placed the task), TaskCore the task's own number for it.
type CoreBusy struct {
	Kind     string           `json:"kind"`
	Core     int              `json:"core"`
	TaskCore int              `json:"task_core"`
	Span     int64            `json:"span_cycles"`
	Pipes    map[string]int64 `json:"pipes"`
	// Startup and SharedWait are the core's start-up beyond the task's launch and the
	// time its transfers waited for what other cores held
	// (device.TaskStats.CoreStartupCycles, CoreSharedWaitCycles; in a mixed task its
	// AI core's, on the cube core's entry).
	Startup    int64 `json:"startup_cycles"`
	SharedWait int64 `json:"shared_wait_cycles"`
}

// coreBusy sums a task's trace per core and pipe, cores in (kind, index) order;
// chipCore maps a task's core to the chip's.
func coreBusy(trace []device.TraceEvent, chipCore func(kind isa.CoreKind, local int) int) []CoreBusy {
	type key struct {
		kind isa.CoreKind
		core int
	}
	at := map[key]int{}
	var out []CoreBusy
	first := map[key]int64{}
	for _, e := range trace {
		k := key{e.Kind, e.Core}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, CoreBusy{Kind: e.Kind.String(), Core: chipCore(e.Kind, e.Core), TaskCore: e.Core, Pipes: map[string]int64{}})
			first[k] = e.Start
		}
		first[k] = min(first[k], e.Start)
		out[i].Span = max(out[i].Span, e.End-first[k])
		if e.End > e.Start {
			out[i].Pipes[e.Pipe.String()] += e.End - e.Start
		}
	}
	slices.SortFunc(out, func(a, b CoreBusy) int {
		if a.Kind != b.Kind {
			return strings.Compare(a.Kind, b.Kind)
		}
		return a.Core - b.Core
	})
	return out
}

// withStartup adds each core's start-up and shared waits from the task's stats.
func withStartup(cores []CoreBusy, ts *device.TaskStats) []CoreBusy {
	for i := range cores {
		c := &cores[i]
		if ts.Mixed && c.Kind != isa.Cube.String() {
			continue
		}
		if c.TaskCore < len(ts.CoreStartupCycles) {
			c.Startup, c.SharedWait = ts.CoreStartupCycles[c.TaskCore], ts.CoreSharedWaitCycles[c.TaskCore]
		}
	}
	return cores
}

// taskFigures are the figures of a task's statistics a profile reports.
type taskFigures struct {
	Cycles, KernelCycles, StartCycles, EndCycles int64
	CoreCycles                                   []int64
	ActiveCores, Blocks                          int
	PipeBusy                                     map[isa.Pipe]int64
	GMBytesRead, GMBytesWritten                  int64
	FootprintRead, FootprintWritten              int64
	Instructions, L2Hits, L2Misses               int64
	ICacheMisses, FetchStallCycles               int64
	HighWater                                    map[isa.Location]int
	HBMBytesRead, HBMBytesWritten                int64
	StartupCycles, SharedWaitCycles              int64
}

// ChipPeaks are the chip's rates a profile compares a run with (all from the preset).
type ChipPeaks struct {
	Name        string  `json:"name"`
	ClockHz     float64 `json:"clock_hz"`
	CubeCores   int     `json:"cube_cores"`
	VectorCores int     `json:"vector_cores"`
	// CubeFLOPs is the cube cores' fp16 peak: 2 flops per multiply-accumulate.
	CubeFLOPs float64 `json:"cube_flops_per_s"`
	// VectorFLOPs is the vector cores' fp16 peak: one operation per fp16 lane of
	// VectorBytesPerCycle per cycle.
	VectorFLOPs float64 `json:"vector_flops_per_s"`
	// GMBytesPerSecond is the HBM's total rate, or with no L2 model every core's GM
	// read rate together.
	GMBytesPerSecond float64 `json:"gm_bytes_per_s"`
	// L2BytesPerSecond is the L2's total rate (0 with no L2 model): what the pipes'
	// GM traffic, hits included, shares.
	L2BytesPerSecond float64 `json:"l2_bytes_per_s"`
	HBMBytes         int     `json:"hbm_bytes"`
}

func chipPeaks(c *device.Chip) ChipPeaks {
	p := ChipPeaks{Name: c.Name, ClockHz: c.ClockHz, CubeCores: c.CubeCores, VectorCores: c.VectorCores, HBMBytes: c.HBMBytes,
		CubeFLOPs:   2 * float64(c.CubeMACsPerCycle(dtype.Float16)) * float64(c.CubeCores) * c.ClockHz,
		VectorFLOPs: float64(c.VectorBytesPerCycle/dtype.Float16.Size()) * float64(c.VectorCores) * c.ClockHz}
	if c.L2Bytes > 0 {
		p.GMBytesPerSecond = float64(c.HBMBytesPerCycle) * c.ClockHz
		p.L2BytesPerSecond = float64(c.L2TotalBytesPerCycle) * c.ClockHz
	} else {
		p.GMBytesPerSecond = float64(c.GMReadBytesPerCycle) * float64(c.CubeCores+c.VectorCores) * c.ClockHz
	}
	return p
}

// profiler is a Program that can run with its instructions traced, in device memory a
// pool lends (nil: its own), as its unprofiled runs do.
type profiler interface {
	RunProfiled(pool *MemoryPool, inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, *Profile, error)
}

// runProfiled is runProgram (its errors and interruption) for a profiled run of p,
// whose base program (baseProgram) is a profiler, in memory the pool lends (nil: its own).
func runProfiled(p Program, pool *MemoryPool, inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, *Profile, error) {
	r := &profiledRun{p: baseProgram(p).(profiler), pool: pool}
	if n, ok := p.(narrowedProgram); ok {
		outs, st, err := runProgram(narrowedProgram{r, n.plan}, inputs, stop)
		return outs, st, r.prof, err
	}
	outs, st, err := runProgram(r, inputs, stop)
	return outs, st, r.prof, err
}

// profiledRun is a Program whose Run is a profiler's RunProfiled, keeping the profile.
type profiledRun struct {
	p    profiler
	pool *MemoryPool
	prof *Profile
}

func (r *profiledRun) Run(inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, error) {
	outs, st, prof, err := r.p.RunProfiled(r.pool, inputs, stop)
	r.prof = prof
	return outs, st, err
}

func (r *profiledRun) Dump() string { return "" }

// RunProfiled is Program.Run with every instruction traced (tasks one after another).
func (p loweredProgram) RunProfiled(pool *MemoryPool, inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, *Profile, error) {
	var gm lower.GMAllocator
	if pool != nil {
		gm = pool
	}
	outs, st, err := p.exe.RunIn(gm, inputs, device.RunOptions{MaxInstructions: p.maxSteps, Interrupt: stop, Trace: true})
	if err != nil {
		return nil, Stats{}, nil, err
	}
	infos := p.exe.TaskInfos()
	prof := &Profile{Chip: chipPeaks(p.exe.Chip()), Buffers: p.exe.BufferInfos(), Cycles: st.Cycles}
	plain := *st // the run's statistics without the traces, for Stats.Detail
	plain.Tasks = make([]lower.TaskRun, len(st.Tasks))
	chip := p.exe.Chip()
	at := make([]int, len(st.Tasks)) // each task's place in the profile, -1 if skipped
	for i, t := range st.Tasks {
		if t.Prepared { // skipped: an earlier run prepared its weights
			plain.Tasks[i], at[i] = t, -1
			continue
		}
		at[i] = len(prof.Tasks)
		info := infos[i]
		info.Deps = []int{}
		for _, d := range infos[i].Deps {
			if at[d] >= 0 {
				info.Deps = append(info.Deps, at[d])
			}
		}
		ts := t.Stats
		// A task's own times count from its dispatch, its cores starting
		// DispatchCycles later: on the run's timeline that is the dispatcher's
		// CoreStart less DispatchCycles (the sum of the tasks before it, unless the
		// runtime's features overlap them).
		start := t.Slot.CoreStart - int64(chip.DispatchCycles)
		units := t.Slot.Cores
		chipCore := func(kind isa.CoreKind, local int) int {
			return device.ChipCore(units, ts.Mixed, kind, local, prof.Chip.perAI())
		}
		prof.Tasks = append(prof.Tasks, ProfiledTask{TaskInfo: info, Start: start, Stats: ts, ChipCores: units, Info: taskFigures{
			ts.Cycles, ts.KernelCycles, ts.StartCycles, ts.EndCycles, ts.CoreCycles, ts.ActiveCores, ts.Blocks, ts.PipeBusy,
			ts.GMBytesRead, ts.GMBytesWritten, ts.FootprintRead, ts.FootprintWritten, ts.Instructions, ts.L2Hits, ts.L2Misses,
			ts.ICacheMisses, ts.FetchStallCycles, ts.HighWater, ts.HBMBytesRead, ts.HBMBytesWritten, ts.StartupCycles, ts.SharedWaitCycles},
			Cores: withStartup(coreBusy(ts.Trace, chipCore), ts)})
		c := *ts
		c.Trace = nil
		plain.Tasks[i] = lower.TaskRun{Name: t.Name, Core: t.Core, Stats: &c, Slot: t.Slot}
	}
	m := p.exe.MemoryPlan()
	return outs, Stats{Cycles: st.Cycles, Seconds: st.Seconds, KernelCycles: st.KernelCycles, HBMBytes: st.HBMBytesRead + st.HBMBytesWritten,
		KernelSeconds: st.KernelSeconds, Tasks: st.Ran(), PreparedTasks: st.Skipped, Memory: &m, Detail: &plain}, prof, nil
}

// WriteTrace writes the profiled run as Chrome trace JSON (device.WriteRunTrace).
func (p *Profile) WriteTrace(w io.Writer) error {
	tasks := make([]device.TraceTask, len(p.Tasks))
	for i, t := range p.Tasks {
		args := map[string]any{"op": t.Op, "ops": t.Ops, "type": t.Type}
		if !t.Loc.IsZero() {
			args["location"] = t.Loc.String()
		}
		tasks[i] = device.TraceTask{Name: t.Name, Stats: t.Stats, Start: t.Start, Deps: t.Deps, Args: args, Cores: t.ChipCores}
	}
	return device.WriteRunTrace(w, p.Chip.Name, p.Chip.ClockHz, p.Chip.perAI(), tasks)
}

// perAI is the number of vector cores of one AI core (as the dispatcher groups them).
func (c ChipPeaks) perAI() int { return max(1, c.VectorCores/max(1, c.CubeCores)) }

// RunProfiled is Run with every instruction traced; the profile is nil when nothing
// ran on a chip (every output an input or a constant, or the reference device).
func (e *Executor) RunProfiled(inputs []*Tensor) ([]*Tensor, *Profile, error) {
	out, _, prof, err := e.run(inputs, true)
	return out, prof, err
}

// LastProfile is the profile of the executor's most recent profiled run (nil before).
func (e *Executor) LastProfile() *Profile {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastProfile
}
