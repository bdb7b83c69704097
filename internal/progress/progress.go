// Package progress counts the steps of long calls (compiles: passes; runs: tasks) so
// that the Python side can show a progress bar for a call that takes a while. Counters
// are process-wide: a Snapshot lists every call in progress, from any goroutine.
package progress

import (
	"sync"
	"sync/atomic"
	"time"
)

// Counter is one call's progress.
type Counter struct {
	kind        string
	what        atomic.Value // string: the step in progress
	done, total atomic.Int64
	start       time.Time
}

var (
	mu     sync.Mutex
	active = map[*Counter]bool{}
)

// Start registers a call of kind ("compile", "run") with total steps.
func Start(kind string, total int) *Counter {
	c := &Counter{kind: kind, start: time.Now()}
	c.total.Store(int64(total))
	c.what.Store("")
	mu.Lock()
	active[c] = true
	mu.Unlock()
	return c
}

// Step records that a step named what begins, after the ones before it finished.
func (c *Counter) Step(done int, what string) {
	c.done.Store(int64(done))
	c.what.Store(what)
}

// End removes the counter: its call has returned.
func (c *Counter) End() {
	mu.Lock()
	delete(active, c)
	mu.Unlock()
}

// State is a snapshot of one call in progress.
type State struct {
	Kind    string  `json:"kind"`
	Step    string  `json:"step"`
	Done    int64   `json:"done"`
	Total   int64   `json:"total"`
	Seconds float64 `json:"seconds"`
}

// Snapshot lists the calls in progress, oldest first.
func Snapshot() []State {
	mu.Lock()
	cs := make([]*Counter, 0, len(active))
	for c := range active {
		cs = append(cs, c)
	}
	mu.Unlock()
	out := make([]State, 0, len(cs))
	for _, c := range cs {
		out = append(out, State{Kind: c.kind, Step: c.what.Load().(string), Done: c.done.Load(), Total: c.total.Load(), Seconds: time.Since(c.start).Seconds()})
	}
	for i := 1; i < len(out); i++ { // insertion sort by age: a handful of entries
		for j := i; j > 0 && out[j].Seconds > out[j-1].Seconds; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
