package device

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"pypto/isa"
)

// A run's trace: the tasks of a program on one timeline, in the same Trace Event Format
// as WriteChromeTrace. Each core of the chip is a process and each of its pipes a
// thread, holding the instructions of every task that ran on it, shifted by the task's
// start: a task's own cores 0, 1, ... are put on the chip's cores the dispatcher
// placed it on (TraceTask.Cores), so tasks running at the same time sit on tracks of
// their own. A "tasks" process holds one slice per task (its launch, kernel and end,
// with the cores it ran on); flow events ("s" to "f") join each task to the tasks it
// waited for, and each SET_FLAG to the WAIT_FLAG that consumed it (trace_flags.go).

// TraceTask is one task of a run: its stats (run with RunOptions.Trace), when it
// started in the run's cycles, and the indices of the tasks it depends on.
type TraceTask struct {
	Name  string
	Stats *TaskStats
	Start int64
	Deps  []int
	Args  map[string]any // shown with the task's slice
	// Cores are the chip's units the task's cores 0, 1, ... ran on (TaskSlot.Cores:
	// AI cores for a mixed task); nil keeps the task's own numbering.
	Cores []int
}

// ChipCore is the chip's core that core local of the given kind ran on in a task
// placed on units (TaskSlot.Cores). A mixed task's units are AI cores: its cube core j
// is cube core units[j], its vector core j*perAI+v vector core units[j]*perAI+v. With
// no placement (or a core past it) the task's own number is kept.
func ChipCore(units []int, mixed bool, kind isa.CoreKind, local, perAI int) int {
	if mixed && kind == isa.Vector && perAI > 0 {
		if j := local / perAI; j < len(units) {
			return units[j]*perAI + local%perAI
		}
		return local
	}
	if local < len(units) {
		return units[local]
	}
	return local
}

// tasksPid is the process of the task track, after every core's.
const tasksPid = 200000

// flowEvent is a flow start or end: it binds to the enclosing slice of its track.
type flowEvent struct {
	Name string  `json:"name"`
	Cat  string  `json:"cat"`
	Ph   string  `json:"ph"`
	Ts   float64 `json:"ts"`
	Pid  int     `json:"pid"`
	Tid  int     `json:"tid"`
	ID   int     `json:"id"`
	Bp   string  `json:"bp,omitempty"`
}

// WriteRunTrace writes the tasks' traces as one Chrome trace JSON document.
// perAI is the number of vector cores of an AI core (for a mixed task's placement).
func WriteRunTrace(w io.Writer, chip string, clockHz float64, perAI int, tasks []TraceTask) error {
	if clockHz <= 0 {
		return fmt.Errorf("device: trace has no clock rate")
	}
	us := func(cycles int64) float64 { return float64(cycles) / clockHz * 1e6 }
	cores := map[int]string{}
	tracks := map[traceTrack]bool{}
	var events []any
	var end int64
	flow, flags, unbound := 0, 0, 0
	for i, t := range tasks {
		if t.Stats == nil {
			return fmt.Errorf("device: trace task %d (%s) has no stats", i, t.Name)
		}
		dur := us(t.Start+t.Stats.Cycles) - us(t.Start)
		args := map[string]any{"task": i, "cycles": t.Stats.Cycles, "kernel_cycles": t.Stats.KernelCycles, "blocks": t.Stats.Blocks}
		for k, v := range t.Args {
			args[k] = v
		}
		if t.Cores != nil {
			args["cores"] = t.Cores
		}
		events = append(events, chromeEvent{Name: t.Name, Cat: "task", Ph: "X", Ts: us(t.Start), Dur: &dur, Pid: tasksPid, Tid: 0, Args: args})
		end = max(end, t.Start+t.Stats.Cycles)
		chipCore := func(e TraceEvent) int { return ChipCore(t.Cores, t.Stats.Mixed, e.Kind, e.Core, perAI) }
		pidOf := func(e TraceEvent) int { return tracePid(e.Kind, chipCore(e)) }
		for _, e := range t.Stats.Trace {
			if e.End <= e.Start {
				continue
			}
			pid := pidOf(e)
			cores[pid] = fmt.Sprintf("%s core %d", e.Kind, chipCore(e))
			tracks[traceTrack{pid, e.Pipe}] = true
			d := us(t.Start+e.End) - us(t.Start+e.Start)
			events = append(events, chromeEvent{Name: e.Op.String(), Cat: e.Pipe.String(), Ph: "X", Ts: us(t.Start + e.Start), Dur: &d,
				Pid: pid, Tid: int(e.Pipe), Args: map[string]any{"task": t.Name, "task_core": e.Core, "block": e.Block, "pc": e.PC, "cycles": e.End - e.Start}})
		}
		ff, nb := flagFlows(t.Stats.Trace)
		unbound += nb
		for _, f := range ff {
			flow++
			flags++
			// Each end sits in the middle of its slice, so it binds to that slice alone.
			mid := func(e TraceEvent) float64 { return (us(t.Start+e.Start) + us(t.Start+e.End)) / 2 }
			name := fmt.Sprintf("flag %s->%s #%d", f.set.Flag.Src, f.set.Flag.Dst, f.set.Flag.ID)
			events = append(events,
				flowEvent{Name: name, Cat: "flag", Ph: "s", Ts: mid(f.from), Pid: pidOf(f.from), Tid: int(f.from.Pipe), ID: flow},
				flowEvent{Name: name, Cat: "flag", Ph: "f", Bp: "e", Ts: mid(f.to), Pid: pidOf(f.to), Tid: int(f.to.Pipe), ID: flow})
		}
	}
	for i, t := range tasks {
		for _, d := range t.Deps {
			if d < 0 || d >= len(tasks) {
				return fmt.Errorf("device: trace task %d (%s) depends on task %d of %d", i, t.Name, d, len(tasks))
			}
			flow++
			from := tasks[d]
			// From the producer's last instruction to the consumer's first, each inside
			// its task's slice: a consumer launched while its producer runs (the
			// runtime's overlapped launch and early start) still starts its kernel
			// after the producer's has ended.
			kernelEnd := from.Start + from.Stats.StartCycles + from.Stats.KernelCycles
			events = append(events,
				flowEvent{Name: "dependency", Cat: "task", Ph: "s", Ts: us(max(from.Start, kernelEnd-1)), Pid: tasksPid, Tid: 0, ID: flow},
				flowEvent{Name: "dependency", Cat: "task", Ph: "f", Bp: "e", Ts: us(t.Start + t.Stats.StartCycles), Pid: tasksPid, Tid: 0, ID: flow})
		}
	}
	meta := []any{
		chromeEvent{Name: "process_name", Ph: "M", Pid: tasksPid, Args: map[string]any{"name": "tasks"}},
		chromeEvent{Name: "process_sort_index", Ph: "M", Pid: tasksPid, Args: map[string]any{"sort_index": -1}},
		chromeEvent{Name: "thread_name", Ph: "M", Pid: tasksPid, Tid: 0, Args: map[string]any{"name": "tasks"}},
	}
	for _, m := range coreTrackMeta(cores, tracks) {
		meta = append(meta, m)
	}
	bw := bufio.NewWriter(w)
	doc := struct {
		TraceEvents     []any          `json:"traceEvents"`
		DisplayTimeUnit string         `json:"displayTimeUnit"`
		OtherData       map[string]any `json:"otherData"`
	}{append(meta, events...), "ns", map[string]any{"chip": chip, "cycles": end, "clock_hz": clockHz, "tasks": len(tasks),
		"flag_flows": flags, "flag_pairs_unbound": unbound}}
	if err := json.NewEncoder(bw).Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}
