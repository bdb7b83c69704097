package lower

import (
	"pypto/core"
	"pypto/device"
	"pypto/internal/interrupt"
	"pypto/internal/progress"
	"pypto/isa"
)

// Runtime chooses the runtime's scheduling features for the runs of a program. The
// zero value is the default: every feature on. Each field switches one off;
// PlainRuntime switches all of them off, which is the plain runtime: tasks one after
// another in graph order, each dispatched when the one before it has completed, its
// blocks dealt to the cores in turn, no prefetch.
type Runtime struct {
	// NoConcurrentTasks makes each task wait for the one before it. On, independent
	// tasks run at the same time on disjoint cores (device.DispatchOptions.Concurrent):
	// a task waits only for its hazards (ExecGraph.Hazards).
	NoConcurrentTasks bool
	// NoOverlapLaunch dispatches a task only once the one before it has completed. On,
	// the next task is dispatched while the current one runs and drains
	// (device.DispatchOptions.OverlapLaunch).
	NoOverlapLaunch bool
	// NoPrefetchL2 leaves a task's first loads cold. On, each core's first loads are
	// put into L2 while the task launches, once its inputs are complete
	// (device.RunOptions.PrefetchBytes), for every task the AI CPU queues behind
	// another (device.TaskSlot.Prefetch).
	NoPrefetchL2 bool
	// NoBalanceBlocks deals block i to core i mod cores. On, each block goes to the
	// core that is free first (device.RunOptions.BalanceBlocks).
	NoBalanceBlocks bool
	// NoEarlyStart starts a task's cores once its inputs are complete. On, they start,
	// and run the kernels' prologue, while the tasks it waits for signal their
	// completion (device.DispatchOptions.EarlyStart).
	NoEarlyStart bool
}

// PlainRuntime is every feature off.
func PlainRuntime() Runtime { return Runtime{true, true, true, true, true} }

// ConcurrentTasks, OverlapLaunch, PrefetchL2, BalanceBlocks and EarlyStart report
// whether each feature is on.
func (r Runtime) ConcurrentTasks() bool { return !r.NoConcurrentTasks }
func (r Runtime) OverlapLaunch() bool   { return !r.NoOverlapLaunch }
func (r Runtime) PrefetchL2() bool      { return !r.NoPrefetchL2 }
func (r Runtime) BalanceBlocks() bool   { return !r.NoBalanceBlocks }
func (r Runtime) EarlyStart() bool      { return !r.NoEarlyStart }

// runTasks runs the program's tasks through the dispatcher with the runtime's
// features, in the dispatcher's order (which respects every hazard, so the values
// are those of graph order), and sums them into stats. Tasks marked in skip (weight
// preparation an earlier run did) are left out of the schedule.
func (e *Executable) runTasks(gm []byte, opts device.RunOptions, rt Runtime, skip []bool) (*RunStats, error) {
	addrs := func(task *Task) []int {
		out := make([]int, len(task.Args))
		for j, a := range task.Args {
			out[j] = e.exec.Buffers[a].Offset
		}
		return out
	}
	explain := func(task *Task, err error) error { return e.explainTaskFailure(task, gm, err) }
	ws := [2]int{e.exec.GMBytes - e.exec.WorkspaceBytes, e.exec.GMBytes}
	return dispatchTasks(e.chip, e.exec.Tasks, e.exec.Hazards(), addrs, gm, ws, opts, rt, skip, explain, e.stopAfter)
}

// dispatchTasks runs tasks (hz: the earlier tasks each must wait for; addrs: the GM
// addresses of a task's params) through the dispatcher with the runtime's features,
// in its order (which respects every hazard, so the values are those of graph
// order). workspace is the GM byte range of the intermediates, whose stores the L2
// the tasks share writes back rather than through. explain turns a task's failure
// into the error the caller sees.
func dispatchTasks(chip *device.Chip, tasks []*Task, hz [][]int, addrs func(*Task) []int, gm []byte, workspace [2]int, opts device.RunOptions, rt Runtime,
	skip []bool, explain func(*Task, error) error, stopAfter string) (stats *RunStats, err error) {
	stats = &RunStats{Tasks: make([]TaskRun, len(tasks))}
	var ran []int // exec task of each scheduled task
	at := make([]int, len(tasks))
	for k, task := range tasks {
		if skip != nil && skip[k] {
			at[k] = -1
			stats.Tasks[k] = TaskRun{Name: task.Name, Core: task.Core, Stats: &device.TaskStats{}, Prepared: true}
			stats.Skipped++
			continue
		}
		at[k] = len(ran)
		ran = append(ran, k)
	}
	dts := dispatchView(chip, tasks, hz, ran, at)
	prog := progress.Start("run", len(ran))
	defer prog.End()
	// The run's tasks share the L2: each finds what the ones before it left. The
	// workspace of intermediates, which only this run's tasks read, is written back.
	var l2 *device.SharedL2
	if chip.L2Bytes > 0 && !opts.Functional {
		l2 = device.NewSharedL2([][2]int{workspace})
		defer func() {
			if dirty := l2.Close(); stats != nil {
				stats.HBMBytesWritten += dirty
			}
		}()
	}
	started := 0
	run := func(j int, slot device.TaskSlot) (*device.TaskStats, error) {
		k := ran[j]
		task := tasks[k]
		prog.Step(started, task.Name)
		started++
		if interrupt.Requested(opts.Interrupt) {
			return nil, core.Errorf(core.Interrupted, "interrupted before task %s", task.Name)
		}
		if len(task.Machine) != len(task.Programs) {
			return nil, core.Errorf(core.ValueError, "task %s has no machine programs: the program was compiled with StopAfter=%q", task.Name, stopAfter)
		}
		o := opts
		o.L2 = l2
		o.BalanceBlocks = rt.BalanceBlocks()
		if rt.PrefetchL2() && chip.L2Bytes > 0 {
			o.PrefetchBytes = min(int64(chip.L2Bytes), slot.Prefetch*int64(chip.HBMBytesPerCycle))
		}
		ts, err := runTask(chip, gm, task, addrs(task), o)
		if err != nil && interrupt.Requested(opts.Interrupt) {
			return nil, core.Errorf(core.Interrupted, "task %s: %v", task.Name, err)
		}
		if err != nil {
			return nil, explain(task, err)
		}
		stats.SequentialCycles += ts.Cycles
		stats.KernelCycles += ts.KernelCycles
		if chip.L2Bytes > 0 {
			stats.HBMBytesRead += ts.L2Misses*int64(chip.L2LineBytes) + ts.PrefetchedBytes
			stats.HBMBytesWritten += ts.HBMBytesWritten
		} else {
			stats.HBMBytesRead += ts.GMBytesRead
			stats.HBMBytesWritten += ts.GMBytesWritten
		}
		stats.Tasks[k] = TaskRun{Name: task.Name, Core: task.Core, Stats: ts}
		return ts, nil
	}
	sched, err := device.ScheduleTasks(chip, dts, device.DispatchOptions{Concurrent: rt.ConcurrentTasks(), OverlapLaunch: rt.OverlapLaunch(), EarlyStart: rt.EarlyStart()}, run)
	if err != nil {
		if _, ok := err.(*core.Error); ok {
			return nil, err
		}
		return nil, core.Errorf(core.InternalError, "%v", err)
	}
	for j, k := range ran {
		stats.Tasks[k].Slot = sched.Tasks[j]
	}
	stats.Cycles = sched.Cycles
	stats.Seconds = float64(stats.Cycles) / chip.ClockHz
	stats.KernelSeconds = float64(stats.KernelCycles) / chip.ClockHz
	return stats, nil
}

// dispatchView is the dispatcher's view of the tasks ran (the index in tasks of each
// scheduled task; at: the scheduled index of each of tasks, -1 for one left out): the
// hazards among them (hz: the earlier tasks each must wait for) and the cores each
// takes.
func dispatchView(chip *device.Chip, tasks []*Task, hz [][]int, ran, at []int) []device.DispatchTask {
	dts := make([]device.DispatchTask, len(ran))
	for j, k := range ran {
		task := tasks[k]
		dt := device.DispatchTask{}
		for _, d := range hz[k] {
			if at[d] >= 0 { // a skipped task's results are in GM before the run
				dt.Deps = append(dt.Deps, at[d])
			}
		}
		switch {
		case task.Vectors > 0:
			dt.Kind, dt.Cores = device.OnAICore, min(chip.CubeCores, len(task.Programs)/task.GroupSize())
		case task.Core == isa.Vector:
			dt.Kind, dt.Cores = device.OnVector, min(chip.VectorCores, len(task.Programs))
		default: // a kind without cores takes one in the schedule; RunTask reports it
			dt.Kind, dt.Cores = device.OnCube, min(chip.CubeCores, len(task.Programs))
		}
		dt.Cores = max(1, dt.Cores)
		dts[j] = dt
	}
	return dts
}
