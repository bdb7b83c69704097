package device

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// runTraceEvent is the union of the fields a run trace's events carry.
type runTraceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   *float64        `json:"ts"`
	Dur  *float64        `json:"dur"`
	Pid  *int            `json:"pid"`
	Tid  *int            `json:"tid"`
	ID   *int            `json:"id"`
	Bp   string          `json:"bp"`
	Args json.RawMessage `json:"args"`
}

// Two copies of a multi-core GEMM placed on disjoint cores at the same time: each
// task's instructions are on the chip's cores it was placed on, so no track holds two
// overlapping slices, and every WAIT_FLAG of the trace is a flag flow from the slice
// its SET_FLAG followed to the slice it released, on the same core.
func TestRunTraceChipCoresAndFlagFlows(t *testing.T) {
	s := gemmSpec{M: 256, N: 256, K: 256, TM: 128, TN: 128, TK: 64, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	rng := rand.New(rand.NewPCG(1, 2))
	_, st := s.run(t, preset(t, "a2"), randValues(rng, s.In, s.M*s.K, 1), randValues(rng, s.In, s.K*s.N, 1), RunOptions{Trace: true})
	require.Equal(t, 4, st.ActiveCores)
	waits := 0
	for _, e := range st.Trace {
		if e.Op == isa.WAIT_FLAG {
			waits++
		}
	}
	require.Positive(t, waits)
	tasks := []TraceTask{
		{Name: "gemm_a", Stats: st, Cores: []int{0, 1, 2, 3}},
		{Name: "gemm_b", Stats: st, Cores: []int{7, 6, 5, 4}},
	}
	var buf bytes.Buffer
	require.NoError(t, WriteRunTrace(&buf, "a2", st.ClockHz, 2, tasks))
	var doc struct {
		TraceEvents     []runTraceEvent `json:"traceEvents"`
		DisplayTimeUnit string          `json:"displayTimeUnit"`
		OtherData       map[string]any  `json:"otherData"`
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc))
	assert.EqualValues(t, 2*waits, doc.OtherData["flag_flows"])
	assert.EqualValues(t, 0, doc.OtherData["flag_pairs_unbound"])

	type track struct{ pid, tid int }
	type span struct {
		ts, end float64
		task    string
	}
	slices := map[track][]span{}
	names := map[int]string{}
	type flowEnds struct{ s, f *runTraceEvent }
	flows := map[int]*flowEnds{}
	for i := range doc.TraceEvents {
		e := &doc.TraceEvents[i]
		require.NotNil(t, e.Pid)
		switch e.Ph {
		case "M":
			var a struct{ Name string }
			require.NoError(t, json.Unmarshal(e.Args, &a))
			if e.Name == "process_name" {
				names[*e.Pid] = a.Name
			}
		case "X":
			require.NotNil(t, e.Ts)
			require.NotNil(t, e.Dur)
			if *e.Pid == tasksPid {
				continue
			}
			var a struct{ Task string }
			require.NoError(t, json.Unmarshal(e.Args, &a))
			k := track{*e.Pid, *e.Tid}
			slices[k] = append(slices[k], span{*e.Ts, *e.Ts + *e.Dur, a.Task})
		case "s", "f":
			require.NotNil(t, e.ID)
			require.NotNil(t, e.Ts)
			if flows[*e.ID] == nil {
				flows[*e.ID] = &flowEnds{}
			}
			if e.Ph == "s" {
				require.Nil(t, flows[*e.ID].s, "flow %d starts twice", *e.ID)
				flows[*e.ID].s = e
			} else {
				require.Equal(t, "e", e.Bp)
				require.Nil(t, flows[*e.ID].f, "flow %d ends twice", *e.ID)
				flows[*e.ID].f = e
			}
		default:
			t.Fatalf("unexpected phase %q", e.Ph)
		}
	}
	// Task a on cube cores 0-3, task b on 4-7: eight core processes.
	for c := range 8 {
		assert.Equal(t, "cube core "+string(rune('0'+c)), names[c])
	}
	for k, ss := range slices {
		want := "gemm_a"
		if k.pid >= 4 {
			want = "gemm_b"
		}
		for i, a := range ss {
			require.Equal(t, want, a.task, "core %d runs the task placed there", k.pid)
			for _, b := range ss[i+1:] {
				require.False(t, a.ts < b.end && b.ts < a.end, "overlapping slices on core %d pipe %d", k.pid, k.tid)
			}
		}
	}
	// A flow's ends each lie inside one slice of their track, the producer's before
	// the released instruction's, on the same core.
	inside := func(e *runTraceEvent) span {
		var found []span
		for _, s := range slices[track{*e.Pid, *e.Tid}] {
			if s.ts < *e.Ts && *e.Ts < s.end {
				found = append(found, s)
			}
		}
		require.Len(t, found, 1, "flow %s at %v on %d/%d", e.Name, *e.Ts, *e.Pid, *e.Tid)
		return found[0]
	}
	nflags := 0
	for id, f := range flows {
		require.NotNil(t, f.s, "flow %d has no start", id)
		require.NotNil(t, f.f, "flow %d has no end", id)
		require.Equal(t, f.s.Name, f.f.Name)
		require.Equal(t, f.s.Cat, f.f.Cat)
		if f.s.Cat != "flag" {
			continue
		}
		nflags++
		require.Equal(t, *f.s.Pid, *f.f.Pid, "a flag stays on its core")
		require.NotEqual(t, *f.s.Tid, *f.f.Tid, "a flag joins two pipes")
		from, to := inside(f.s), inside(f.f)
		require.LessOrEqual(t, from.end, to.ts, "%s: the set follows its producer, the wait precedes its consumer", f.s.Name)
	}
	assert.Equal(t, 2*waits, nflags)
}

func TestChipCore(t *testing.T) {
	units := []int{5, 2}
	assert.Equal(t, 5, ChipCore(units, false, isa.Cube, 0, 2))
	assert.Equal(t, 2, ChipCore(units, false, isa.Vector, 1, 2))
	// A mixed task: AI core 2's vector cores are 4 and 5.
	assert.Equal(t, 2, ChipCore(units, true, isa.Cube, 1, 2))
	assert.Equal(t, 11, ChipCore(units, true, isa.Vector, 1, 2))
	assert.Equal(t, 5, ChipCore(units, true, isa.Vector, 3, 2))
	assert.Equal(t, 9, ChipCore(nil, false, isa.Cube, 9, 2), "no placement: the task's own number")
}
