package device

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"pypto/isa"
)

// Chrome trace / Perfetto export of TaskStats.Trace: one process per core and one
// thread per pipe, so the viewer shows a swimlane per core and pipe. The format is the
// Trace Event Format's JSON object form ({"traceEvents": [...]}) that chrome://tracing
// and ui.perfetto.dev open: complete events ("ph": "X") with times in microseconds,
// and metadata events naming and ordering the tracks.

// chromeEvent is one entry of traceEvents.
type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// tracePid is the process id of a core's track group: cube cores first, then vector
// cores, so that both kinds of a mixed task get distinct ids.
func tracePid(kind isa.CoreKind, core int) int {
	if kind == isa.Vector {
		return 100000 + core
	}
	return core
}

// WriteChromeTrace writes the task's trace (run with RunOptions.Trace) as Chrome trace
// JSON. Instructions that take no pipe time (flags, scalar arithmetic, loop control)
// are left out: they would be invisible slivers. Times are microseconds of task time
// at the chip's clock.
func (s *TaskStats) WriteChromeTrace(w io.Writer) error {
	if s.ClockHz <= 0 {
		return fmt.Errorf("device: trace has no clock rate")
	}
	us := func(cycles int64) float64 { return float64(cycles) / s.ClockHz * 1e6 }
	cores := map[int]string{}
	tracks := map[traceTrack]bool{}
	var events []chromeEvent
	for _, e := range s.Trace {
		if e.End <= e.Start {
			continue
		}
		pid := tracePid(e.Kind, e.Core)
		cores[pid] = fmt.Sprintf("%s core %d", e.Kind, e.Core)
		tracks[traceTrack{pid, e.Pipe}] = true
		dur := us(e.End) - us(e.Start)
		events = append(events, chromeEvent{Name: e.Op.String(), Cat: e.Pipe.String(), Ph: "X", Ts: us(e.Start), Dur: &dur,
			Pid: pid, Tid: int(e.Pipe), Args: map[string]any{"block": e.Block, "pc": e.PC, "cycles": e.Cycles(), "pipe_cycles": e.Occupancy()}})
	}
	meta := coreTrackMeta(cores, tracks)
	bw := bufio.NewWriter(w)
	doc := struct {
		TraceEvents     []chromeEvent  `json:"traceEvents"`
		DisplayTimeUnit string         `json:"displayTimeUnit"`
		OtherData       map[string]any `json:"otherData"`
	}{append(meta, events...), "ns", map[string]any{"chip": s.Chip, "cycles": s.Cycles, "clock_hz": s.ClockHz}}
	if err := json.NewEncoder(bw).Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}

// traceTrack is one pipe of one core: a thread of the core's process.
type traceTrack struct {
	pid  int
	pipe isa.Pipe
}

// coreTrackMeta names and orders the core processes and their pipe threads.
func coreTrackMeta(cores map[int]string, tracks map[traceTrack]bool) []chromeEvent {
	var meta []chromeEvent
	pids := make([]int, 0, len(cores))
	for pid := range cores {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	for i, pid := range pids {
		meta = append(meta,
			chromeEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": cores[pid]}},
			chromeEvent{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": i}})
	}
	ts := make([]traceTrack, 0, len(tracks))
	for t := range tracks {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b traceTrack) int {
		if a.pid != b.pid {
			return a.pid - b.pid
		}
		return int(a.pipe) - int(b.pipe)
	})
	for _, t := range ts {
		meta = append(meta,
			chromeEvent{Name: "thread_name", Ph: "M", Pid: t.pid, Tid: int(t.pipe), Args: map[string]any{"name": t.pipe.String()}},
			chromeEvent{Name: "thread_sort_index", Ph: "M", Pid: t.pid, Tid: int(t.pipe), Args: map[string]any{"sort_index": int(t.pipe)}})
	}
	return meta
}
