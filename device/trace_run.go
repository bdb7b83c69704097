package device

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// A run's trace: the tasks of a program on one timeline, in the same Trace Event Format
// as WriteChromeTrace. Each core is a process and each of its pipes a thread, holding
// the instructions of every task that ran on it, shifted by the task's start; a "tasks"
// process holds one slice per task (its launch, kernel and end), and flow events ("s"
// to "f") join each task to the tasks it waited for.

// TraceTask is one task of a run: its stats (run with RunOptions.Trace), when it
// started in the run's cycles, and the indices of the tasks it depends on.
type TraceTask struct {
	Name  string
	Stats *TaskStats
	Start int64
	Deps  []int
	Args  map[string]any // shown with the task's slice
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
func WriteRunTrace(w io.Writer, chip string, clockHz float64, tasks []TraceTask) error {
	if clockHz <= 0 {
		return fmt.Errorf("device: trace has no clock rate")
	}
	us := func(cycles int64) float64 { return float64(cycles) / clockHz * 1e6 }
	cores := map[int]string{}
	tracks := map[traceTrack]bool{}
	var events []any
	var end int64
	for i, t := range tasks {
		if t.Stats == nil {
			return fmt.Errorf("device: trace task %d (%s) has no stats", i, t.Name)
		}
		dur := us(t.Start+t.Stats.Cycles) - us(t.Start)
		args := map[string]any{"task": i, "cycles": t.Stats.Cycles, "kernel_cycles": t.Stats.KernelCycles, "blocks": t.Stats.Blocks}
		for k, v := range t.Args {
			args[k] = v
		}
		events = append(events, chromeEvent{Name: t.Name, Cat: "task", Ph: "X", Ts: us(t.Start), Dur: &dur, Pid: tasksPid, Tid: 0, Args: args})
		end = max(end, t.Start+t.Stats.Cycles)
		for _, e := range t.Stats.Trace {
			if e.End <= e.Start {
				continue
			}
			pid := tracePid(e.Kind, e.Core)
			cores[pid] = fmt.Sprintf("%s core %d", e.Kind, e.Core)
			tracks[traceTrack{pid, e.Pipe}] = true
			d := us(t.Start+e.End) - us(t.Start+e.Start)
			events = append(events, chromeEvent{Name: e.Op.String(), Cat: e.Pipe.String(), Ph: "X", Ts: us(t.Start + e.Start), Dur: &d,
				Pid: pid, Tid: int(e.Pipe), Args: map[string]any{"task": t.Name, "block": e.Block, "pc": e.PC, "cycles": e.End - e.Start}})
		}
	}
	flow := 0
	for i, t := range tasks {
		for _, d := range t.Deps {
			if d < 0 || d >= len(tasks) {
				return fmt.Errorf("device: trace task %d (%s) depends on task %d of %d", i, t.Name, d, len(tasks))
			}
			flow++
			from := tasks[d]
			// The start sits inside the producer's slice and the end inside the consumer's.
			events = append(events,
				flowEvent{Name: "dependency", Cat: "task", Ph: "s", Ts: us(from.Start + from.Stats.Cycles - 1), Pid: tasksPid, Tid: 0, ID: flow},
				flowEvent{Name: "dependency", Cat: "task", Ph: "f", Bp: "e", Ts: us(t.Start), Pid: tasksPid, Tid: 0, ID: flow})
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
	}{append(meta, events...), "ns", map[string]any{"chip": chip, "cycles": end, "clock_hz": clockHz, "tasks": len(tasks)}}
	if err := json.NewEncoder(bw).Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}
