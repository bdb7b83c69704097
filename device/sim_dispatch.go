package device

import (
	"fmt"
	"slices"
)

// DispatchOptions choose how the AI CPU's dispatcher places the tasks of a graph on
// the chip's timeline (ScheduleTasks). The zero value is the plain runtime: each task
// is dispatched when the one before it has completed, so the graph's time is the sum
// of its tasks' Cycles.
type DispatchOptions struct {
	// Concurrent dispatches a task as soon as the tasks it depends on have completed,
	// on cores that are free, so independent tasks run at the same time on disjoint
	// cores (a cube task beside a vector task, or two tasks that each use part of
	// the cores).
	Concurrent bool
	// OverlapLaunch lets the AI CPU dispatch a task while the cores are still busy:
	// its DispatchCycles overlap the previous task's run and tail, and its cores start
	// as soon as they are free and its inputs are complete.
	OverlapLaunch bool
	// EarlyStart starts a task's cores before its inputs are complete, by the time
	// their start and the kernel's prologue take (CoreStartCycles + PrologueCycles),
	// so that its first instruction comes as its inputs complete: the start and the
	// prologue read no input and overlap the tail (final sync) of the tasks it waits
	// for.
	EarlyStart bool
}

// DispatchTask is one task of a graph for the dispatcher.
type DispatchTask struct {
	// Deps are the earlier tasks (indices) that must complete before this one starts:
	// the producers of its inputs and the tasks whose GM bytes it overwrites.
	Deps []int
	// Kind is the kind of core the task runs on; Mixed says it takes whole AI cores
	// (a RunGroupTask). Cores is how many it takes (its ActiveCores).
	Kind  CorePool
	Cores int
}

// CorePool is a task's placement: on cube cores, on vector cores, or on whole AI
// cores (a cube core with its vector cores, for a mixed task).
type CorePool int

// The placements of a task.
const (
	OnCube CorePool = iota
	OnVector
	OnAICore
)

// TaskSlot is where and when the dispatcher ran a task (cycles from the graph's
// start).
type TaskSlot struct {
	Dispatch  int64 // the AI CPU starts handing the task to its cores
	CoreStart int64 // its cores receive the start signal (CoreStartCycles before the prologue)
	End       int64 // its last core's end (epilogue included)
	Complete  int64 // the AI CPU sees it complete (FinalSyncCycles after End)
	// Prefetch is the time between the task's inputs being complete (and the task
	// dispatched) and its kernels' first instruction: what an L2 prefetch of its first
	// loads can overlap. It is 0 for the first task of a graph: the AI CPU prefetches
	// for the tasks it queues behind a task that runs, while the first one is launched
	// with its loads cold, as the single kernels of the calibration tables are
	// (assumed: their load busy is fitted without a prefetch).
	Prefetch int64
	// Cores are the physical cores (AI cores for a mixed task) the task's cores 0, 1,
	// ... of its own run were placed on.
	Cores []int
}

// Schedule is the timeline of a graph's tasks.
type Schedule struct {
	Cycles int64 // when the last task completes
	Tasks  []TaskSlot
}

// RunScheduled is what the dispatcher calls to run task k once it has placed it:
// the task runs (its values land in GM, in the dispatcher's order) and returns its
// stats, given the time a prefetch of its first loads may overlap.
type RunScheduled func(k int, slot TaskSlot) (*TaskStats, error)

// ScheduleTasks runs the tasks of a graph through the dispatcher: a ready queue of
// the tasks whose dependencies allow them to start, taken in order of the time each
// can be dispatched (ties by graph order). The AI CPU dispatches one task at a time,
// DispatchCycles each; a task's cores then take CoreStartCycles and each core its own
// time of the task's run (TaskStats.CoreCycles, blocks with prologues and epilogues);
// the task completes FinalSyncCycles after its last core. Each task is run (by run)
// when it is dispatched, so the tasks' values are computed in the dispatcher's order,
// which respects every dependency. With both options off the schedule is the plain
// runtime's: Cycles is the sum of the tasks' Cycles.
//
// The tasks' own runs are simulated apart (each sees the memory system as if alone);
// tasks that overlap in time then share the chip's L2 and HBM bandwidth on the
// timeline (sim_dispatch_share.go): a task that the tasks placed before it leave too
// little bandwidth runs slower than alone.
func ScheduleTasks(chip *Chip, tasks []DispatchTask, opts DispatchOptions, run RunScheduled) (*Schedule, error) {
	if err := chip.Validate(); err != nil {
		return nil, err
	}
	perAI := max(1, chip.VectorCores/max(1, chip.CubeCores))
	d := &dispatcher{chip: chip, opts: opts, tasks: tasks, perAI: perAI,
		cubeFree: make([]int64, chip.CubeCores), vecFree: make([]int64, chip.VectorCores),
		slots: make([]TaskSlot, len(tasks)), done: make([]bool, len(tasks)), mem: newMemTimeline(chip)}
	for k, t := range tasks {
		for _, p := range d.deps(k) {
			if p < 0 || p >= k {
				return nil, fmt.Errorf("dispatch: task %d depends on task %d, which is not earlier", k, p)
			}
		}
		if n := d.poolSize(t.Kind); t.Cores <= 0 || t.Cores > n {
			return nil, fmt.Errorf("dispatch: task %d takes %d cores of a pool of %d", k, t.Cores, n)
		}
	}
	sched := &Schedule{Tasks: d.slots}
	for range tasks {
		k, at := d.next()
		slot := d.place(k, at)
		st, err := run(k, slot)
		if err != nil {
			return nil, err
		}
		d.occupy(k, st)
		sched.Cycles = max(sched.Cycles, d.slots[k].Complete)
	}
	return sched, nil
}

type dispatcher struct {
	chip  *Chip
	opts  DispatchOptions
	tasks []DispatchTask
	perAI int
	// when each core is free again (task time)
	cubeFree, vecFree []int64
	aicpu             int64 // when the AI CPU can dispatch the next task
	lastStart         int64 // the last dispatched task's CoreStart
	slots             []TaskSlot
	done              []bool // dispatched
	placed            int    // tasks dispatched so far
	mem               *memTimeline
}

// deps are the tasks k waits for: its own dependencies when tasks run concurrently,
// else the task before it (which itself waited for all before it).
func (d *dispatcher) deps(k int) []int {
	if d.opts.Concurrent {
		return d.tasks[k].Deps
	}
	if k == 0 {
		return nil
	}
	return []int{k - 1}
}

func (d *dispatcher) poolSize(kind CorePool) int {
	if kind == OnVector {
		return len(d.vecFree)
	}
	return len(d.cubeFree)
}

// free is when unit i of kind's pool is free (an AI core when all its cores are).
func (d *dispatcher) free(kind CorePool, i int) int64 {
	switch kind {
	case OnCube:
		return d.cubeFree[i]
	case OnVector:
		return d.vecFree[i]
	}
	t := d.cubeFree[i]
	for v := range d.perAI {
		t = max(t, d.vecFree[i*d.perAI+v])
	}
	return t
}

// pick returns the n units of kind's pool free first (ties by index) and when the
// last of them is free.
func (d *dispatcher) pick(kind CorePool, n int) ([]int, int64) {
	units := make([]int, d.poolSize(kind))
	for i := range units {
		units[i] = i
	}
	slices.SortStableFunc(units, func(a, b int) int {
		fa, fb := d.free(kind, a), d.free(kind, b)
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	})
	units = units[:n]
	var at int64
	for _, u := range units {
		at = max(at, d.free(kind, u))
	}
	return units, at
}

// inputsAt is when every task k waits for has completed.
func (d *dispatcher) inputsAt(k int) int64 {
	var t int64
	for _, p := range d.deps(k) {
		t = max(t, d.slots[p].Complete)
	}
	return t
}

// next is the ready queue: of the tasks not yet dispatched whose dependencies are
// dispatched, the one that can be dispatched first (ties by graph order), and when.
// Without launch overlap a task is dispatched once its inputs are complete and its
// cores free; with it, as soon as the AI CPU is free and the task dispatched before
// it has started its cores (one task waits in the launch queue).
func (d *dispatcher) next() (int, int64) {
	best, bestAt := -1, int64(0)
	for k := range d.tasks {
		if d.done[k] {
			continue
		}
		ready := true
		for _, p := range d.deps(k) {
			ready = ready && d.done[p]
		}
		if !ready {
			continue
		}
		at := d.aicpu
		if d.opts.OverlapLaunch {
			at = max(at, d.lastStart)
		} else {
			_, coresAt := d.pick(d.tasks[k].Kind, d.tasks[k].Cores)
			at = max(at, d.inputsAt(k), coresAt)
		}
		if best < 0 || at < bestAt {
			best, bestAt = k, at
		}
		if !d.opts.Concurrent {
			break // in graph order: only the next task is ready
		}
	}
	return best, bestAt
}

// place dispatches task k at time at onto the cores free first.
func (d *dispatcher) place(k int, at int64) TaskSlot {
	chip := d.chip
	t := d.tasks[k]
	d.done[k] = true
	units, coresAt := d.pick(t.Kind, t.Cores)
	dispatched := at + int64(chip.DispatchCycles)
	d.aicpu = dispatched
	inputs := d.inputsAt(k)
	start := max(dispatched, coresAt, inputs)
	if d.opts.EarlyStart {
		// The cores' start and the kernel's prologue read no input: they run while
		// the producers' completion is being signalled, and the first instruction
		// comes no earlier than the inputs are complete.
		start = max(dispatched, coresAt, inputs-int64(chip.CoreStartCycles+chip.PrologueCycles))
	}
	d.lastStart = start
	first := start + int64(chip.CoreStartCycles+chip.PrologueCycles)
	d.slots[k] = TaskSlot{Dispatch: at, CoreStart: start, Cores: units}
	if d.placed > 0 {
		d.slots[k].Prefetch = first - max(at, inputs)
	}
	d.placed++
	return d.slots[k]
}

// occupy books task k's cores from its stats: core j of its run is busy on its
// physical core until its own time has passed, stretched where the tasks beside it
// leave it less L2 or HBM bandwidth than it uses alone.
func (d *dispatcher) occupy(k int, st *TaskStats) {
	chip := d.chip
	s := &d.slots[k]
	begin := s.CoreStart + int64(chip.CoreStartCycles)
	var span int64
	for j := range s.Cores {
		if j < len(st.CoreCycles) {
			span = max(span, st.CoreCycles[j])
		}
	}
	l2, hbm := taskTraffic(chip, st)
	points := d.mem.place(begin, span, l2, hbm)
	last := begin
	for j, u := range s.Cores {
		var c int64
		if j < len(st.CoreCycles) {
			c = st.CoreCycles[j]
		}
		end := warp(points, c)
		last = max(last, end)
		switch d.tasks[k].Kind {
		case OnCube:
			d.cubeFree[u] = end
		case OnVector:
			d.vecFree[u] = end
		default:
			d.cubeFree[u] = end
			for v := range d.perAI {
				d.vecFree[u*d.perAI+v] = end
			}
		}
	}
	s.End = last
	s.Complete = s.End + int64(chip.FinalSyncCycles)
}
