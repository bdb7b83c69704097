// Package interrupt is the process-wide request to stop the runs in progress: Ctrl-C
// in Python arrives here (capi watches the signal), and the simulator's and the ISA
// interpreter's run loops poll it, so a long run ends promptly with an error instead
// of holding the Python call until it finishes.
package interrupt

import "sync"

var (
	mu      sync.Mutex
	current = make(chan struct{})
)

// Current is the channel the next Raise closes. A run takes it once, when it starts,
// and polls it (Requested); a Raise stops the runs that started before it.
func Current() <-chan struct{} {
	mu.Lock()
	defer mu.Unlock()
	return current
}

// Raise stops every run in progress.
func Raise() {
	mu.Lock()
	defer mu.Unlock()
	close(current)
	current = make(chan struct{})
}

// Requested reports whether the run that took c has been asked to stop (never for a
// nil c).
func Requested(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// PollEvery is how many instructions a run loop executes between polls: a poll costs
// a few nanoseconds, an instruction of the simulator hundreds.
const PollEvery = 1 << 10
