package device

// runGroupsShared simulates the AI cores of a mixed task that share a memory system
// in one discrete-event loop, as runShared does for a task of one core kind: each
// step starts, over every core of every AI core, the instruction that can start
// first in task time (ties by AI core, then cube before vector cores), so the L2 and
// the HBM share see the accesses in the order they happen. The cores of one AI core
// run each group together and start the next group together, as runGroup does.
func runGroupsShared(ais []*aiCore) error {
	type aiState struct {
		job  int // index into the AI core's jobs of the running group
		runs []*blockRun
		// the cached next start: which run, which issued instruction, when (block
		// time), valid until this AI core starts an instruction
		best   *blockRun
		di     int
		st     int64
		cached bool
	}
	states := make([]aiState, len(ais))
	begin := func(ai int) {
		s, a := &states[ai], ais[ai]
		s.runs = s.runs[:0]
		if s.job >= len(a.jobs) {
			return
		}
		j := a.jobs[s.job]
		q := newQueueSet()
		bi := j.first
		if j.g.Cube != nil {
			s.runs = append(s.runs, newBlockRun(a.cube, bi, j.g.Cube, q))
			bi++
		}
		for v := range j.g.Vector {
			s.runs = append(s.runs, newBlockRun(a.vector[v], bi, &j.g.Vector[v], q))
			bi++
		}
		setUpCrossCore(s.runs)
	}
	// advance finds AI core ai's next startable instruction, finishing groups and
	// beginning the next as they end; it reports false when the AI core is done.
	advance := func(ai int) (bool, error) {
		s, a := &states[ai], ais[ai]
		for len(s.runs) > 0 && !s.cached {
			done := true
			for _, r := range s.runs {
				if err := r.issueAhead(); err != nil {
					return false, err
				}
				done = done && r.finished()
			}
			if done {
				var length int64
				for _, r := range s.runs {
					if err := r.finish(); err != nil {
						return false, err
					}
					length = max(length, r.length())
				}
				a.addGroup(length)
				s.job++
				begin(ai)
				continue
			}
			s.best = nil
			for _, r := range s.runs {
				if di, st, ok := r.next(); ok && (s.best == nil || r.t0+st < s.best.t0+s.st) {
					s.best, s.di, s.st = r, di, st
				}
			}
			if s.best == nil {
				for _, r := range s.runs {
					if !r.finished() {
						return false, r.deadlock()
					}
				}
			}
			s.cached = true
		}
		return len(s.runs) > 0, nil
	}
	for ai := range ais {
		begin(ai)
	}
	for {
		best := -1
		var bestAt int64
		for ai := range states {
			live, err := advance(ai)
			if err != nil {
				return err
			}
			if !live {
				continue
			}
			s := &states[ai]
			if at := s.best.t0 + s.st; best < 0 || at < bestAt {
				best, bestAt = ai, at
			}
		}
		if best < 0 {
			return nil
		}
		s := &states[best]
		s.cached = false
		if err := s.best.start(s.di, s.st); err != nil {
			return err
		}
	}
}
