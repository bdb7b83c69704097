package device

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// A multi-core GEMM's trace is valid Chrome trace JSON with a named track per core
// and pipe, and its complete events cover the task.
func TestChromeTraceOfMultiCoreGEMM(t *testing.T) {
	s := gemmSpec{M: 256, N: 256, K: 256, TM: 128, TN: 128, TK: 64, In: dtype.Float16, Out: dtype.Float16, PingPong: true}
	rng := rand.New(rand.NewPCG(1, 2))
	_, st := s.run(t, preset(t, "a2"), randValues(rng, s.In, s.M*s.K, 1), randValues(rng, s.In, s.K*s.N, 1), RunOptions{Trace: true})
	require.Equal(t, 4, st.ActiveCores)
	var buf bytes.Buffer
	require.NoError(t, st.WriteChromeTrace(&buf))

	var doc struct {
		TraceEvents []struct {
			Name string          `json:"name"`
			Cat  string          `json:"cat"`
			Ph   string          `json:"ph"`
			Ts   *float64        `json:"ts"`
			Dur  *float64        `json:"dur"`
			Pid  *int            `json:"pid"`
			Tid  *int            `json:"tid"`
			Args json.RawMessage `json:"args"`
		} `json:"traceEvents"`
		DisplayTimeUnit string `json:"displayTimeUnit"`
		OtherData       struct {
			Chip   string  `json:"chip"`
			Cycles int64   `json:"cycles"`
			Clock  float64 `json:"clock_hz"`
		} `json:"otherData"`
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc))

	processes := map[int]string{}
	threads := map[string]bool{}
	busy := map[string]float64{}
	var last float64
	for _, e := range doc.TraceEvents {
		require.NotNil(t, e.Pid)
		switch e.Ph {
		case "M":
			var a struct {
				Name string `json:"name"`
			}
			require.NoError(t, json.Unmarshal(e.Args, &a))
			if e.Name == "process_name" {
				processes[*e.Pid] = a.Name
			}
			if e.Name == "thread_name" {
				threads[fmt.Sprintf("%s/%s", processes[*e.Pid], a.Name)] = true
			}
		case "X":
			require.NotNil(t, e.Ts)
			require.NotNil(t, e.Dur)
			require.NotNil(t, e.Tid)
			require.Positive(t, *e.Dur, "%s", e.Name)
			require.GreaterOrEqual(t, *e.Ts, 0.0)
			if e.Name == "tmatmul" || e.Name == "tmatmul.acc" {
				busy[processes[*e.Pid]] += *e.Dur
			}
			last = max(last, *e.Ts+*e.Dur)
		default:
			t.Fatalf("unexpected phase %q", e.Ph)
		}
	}
	want := map[string]bool{}
	for c := range 4 {
		for _, p := range []isa.Pipe{isa.PipeMTE2, isa.PipeMTE1, isa.PipeM, isa.PipeFIX} {
			want[fmt.Sprintf("cube core %d/%s", c, p)] = true
		}
	}
	assert.Equal(t, want, threads, "one track per core and pipe")
	assert.Len(t, processes, 4)
	assert.Equal(t, "ns", doc.DisplayTimeUnit)
	assert.Equal(t, st.Cycles, doc.OtherData.Cycles)
	assert.InDelta(t, float64(st.Cycles-st.EndCycles)/st.ClockHz*1e6, last, 1e-6, "the last event ends where the task's end (epilogue, final sync) begins")
	var cube float64
	for _, b := range busy {
		cube += b
	}
	assert.InDelta(t, float64(st.PipeBusy[isa.PipeM])/st.ClockHz*1e6, cube, 1e-6, "cube events add up to the cube's busy time")
}

func TestChromeTraceNeedsAClock(t *testing.T) {
	require.Error(t, (&TaskStats{}).WriteChromeTrace(&bytes.Buffer{}))
}
