package device

// runShared simulates the cores of a task that share a memory system in one
// discrete-event loop: each step starts, over all cores, the instruction that can
// start first in task time (ties by core order). The L2 and the HBM share then see
// the accesses in the order they happen, whatever GOMAXPROCS is. Cores do not wait
// on each other in a RunTask (their queues are per block), so a core whose next
// instruction cannot start is deadlocked on its own.
func runShared(sims []*coreSim, blocks []Block, cores int) error {
	type coreState struct {
		r      *blockRun
		bi     int // the block r runs
		di     int
		st     int64 // r's next start, in block time
		cached bool
	}
	states := make([]coreState, len(sims))
	for ci, c := range sims {
		states[ci] = coreState{r: newBlockRun(c, ci, &blocks[ci], newQueueSet()), bi: ci}
	}
	// advance issues on core ci until it has a startable instruction, moving on to
	// the core's next block when one finishes; it reports false when the core is done.
	advance := func(ci int) (bool, error) {
		s := &states[ci]
		for s.r != nil && !s.cached {
			if err := s.r.issueAhead(); err != nil {
				return false, err
			}
			if s.r.finished() {
				c := sims[ci]
				c.cycles += s.r.length()
				if err := s.r.finish(); err != nil {
					return false, err
				}
				s.r = nil
				if s.bi += cores; s.bi < len(blocks) {
					s.r = newBlockRun(c, s.bi, &blocks[s.bi], newQueueSet())
				}
				continue
			}
			di, st, ok := s.r.next()
			if !ok {
				return false, s.r.deadlock()
			}
			s.di, s.st, s.cached = di, st, true
		}
		return s.r != nil, nil
	}
	for {
		best := -1
		var bestAt int64
		for ci := range states {
			live, err := advance(ci)
			if err != nil {
				return err
			}
			if !live {
				continue
			}
			s := &states[ci]
			if at := s.r.t0 + s.st; best < 0 || at < bestAt {
				best, bestAt = ci, at
			}
		}
		if best < 0 {
			return nil
		}
		s := &states[best]
		s.cached = false
		if err := s.r.start(s.di, s.st); err != nil {
			return err
		}
	}
}
