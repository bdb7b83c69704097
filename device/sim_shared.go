package device

import (
	"runtime"
	"sync"

	"pypto/isa"
)

// runShared simulates the cores of a task that share a memory system in one
// discrete-event loop: each step starts, over all cores, the GM transfer that can
// start first in task time (ties by core order; a core's other instructions start
// as they come, see eager below). The L2 and the HBM share then see the accesses in
// the order they happen, whatever GOMAXPROCS is. Cores do not wait
// on each other in a RunTask (their queues are per block), so a core whose next
// instruction cannot start is deadlocked on its own.
//
// With balance, a core whose block ends takes the next block not yet started, the
// cores in order of the time they became free (ties by core index), instead of its
// static deal; coreOf, when not nil, receives the core of each block.
func runShared(sims []*coreSim, blocks []Block, cores int, balance bool, coreOf []int) error {
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
		if coreOf != nil {
			coreOf[ci] = ci
		}
	}
	nextBlock := len(sims) // the next block a balanced core takes
	// Only GM transfers reach what cores share (the L2, the bandwidth calendar), so
	// only they need task time order across cores: a core starts its other
	// instructions as soon as they are its next, in its own time order, and waits in
	// the loop below at its next transfer. The memory system sees the same transfers
	// in the same order, so times are the same, and a step switches cores once per
	// transfer, not once per instruction. Balancing compares blocks' ends with every
	// core's next start, so it keeps every instruction in task time order.
	eager := !balance
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
				c.addBlock(s.r.length())
				if err := s.r.finish(); err != nil {
					return false, err
				}
				s.r = nil
				if balance {
					break // idle until the main loop hands it a block
				}
				if s.bi += cores; s.bi < len(blocks) {
					s.r = newBlockRun(c, s.bi, &blocks[s.bi], newQueueSet())
					if coreOf != nil {
						coreOf[s.bi] = ci
					}
				}
				continue
			}
			di, st, ok := s.r.next()
			if !ok {
				return false, s.r.deadlock()
			}
			if eager && !sharesMemory(s.r.d(di).in) {
				if err := s.r.start(di, st); err != nil {
					return false, err
				}
				continue
			}
			s.di, s.st, s.cached = di, st, true
		}
		return s.r != nil, nil
	}
	// The live cores by their next start (ties by core index): only the core that
	// started an instruction (or took a block) has a new one, so a step costs a heap
	// update, not a pass over every core.
	ready := startHeap{e: make([]heapEntry, 0, len(states))}
	schedule := func(ci int) error {
		live, err := advance(ci)
		if err == nil && live {
			ready.push(ci, states[ci].r.t0+states[ci].st)
		}
		return err
	}
	for ci := range states {
		if err := schedule(ci); err != nil {
			return err
		}
	}
	for {
		best, bestAt := ready.min()
		if balance && nextBlock < len(blocks) {
			// The idle core free first takes the next block, unless a running core
			// starts an instruction before then (its block may still end earlier).
			idle := -1
			for ci := range states {
				if states[ci].r == nil && (idle < 0 || sims[ci].cycles < sims[idle].cycles) {
					idle = ci
				}
			}
			if idle >= 0 && (best < 0 || sims[idle].start+sims[idle].cycles <= bestAt) {
				states[idle].r = newBlockRun(sims[idle], nextBlock, &blocks[nextBlock], newQueueSet())
				states[idle].bi = nextBlock
				if coreOf != nil {
					coreOf[nextBlock] = idle
				}
				nextBlock++
				if err := schedule(idle); err != nil {
					return err
				}
				continue
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
		live, err := advance(best)
		if err != nil {
			return err
		}
		if live {
			ready.retime(s.r.t0 + s.st) // the core stays at the top or sinks
		} else {
			ready.pop()
		}
	}
}

// sharesMemory reports whether starting in touches state other cores share: a GM
// transfer, which the memory system times (memSystem.duration).
func sharesMemory(in *Instr) bool {
	switch in.Op {
	case isa.TLOAD, isa.TSTORE, isa.TSTORE_FP, isa.TPUSH, isa.TPOP:
		return true
	}
	return false
}

// startHeap is a binary min-heap of cores by their next start time, ties by core
// index. An entry holds its time, so a comparison reads one slice.
type startHeap struct{ e []heapEntry }

type heapEntry struct {
	at   int64
	core int
}

func (a heapEntry) before(b heapEntry) bool {
	return a.at < b.at || (a.at == b.at && a.core < b.core)
}

func (h *startHeap) push(core int, at int64) {
	h.e = append(h.e, heapEntry{at, core})
	for i := len(h.e) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.e[i].before(h.e[p]) {
			break
		}
		h.e[i], h.e[p] = h.e[p], h.e[i]
		i = p
	}
}

// min is the core that starts first and when, or -1 when the heap is empty.
func (h *startHeap) min() (int, int64) {
	if len(h.e) == 0 {
		return -1, 0
	}
	return h.e[0].core, h.e[0].at
}

// pop removes the core that starts first.
func (h *startHeap) pop() {
	n := len(h.e) - 1
	h.e[0] = h.e[n]
	h.e = h.e[:n]
	h.down()
}

// retime gives the core that starts first a new start time: one sift instead of a
// pop and a push, for the core whose instruction just started.
func (h *startHeap) retime(at int64) {
	h.e[0].at = at
	h.down()
}

// down sifts the first entry down to its place.
func (h *startHeap) down() {
	n := len(h.e)
	for i := 0; ; {
		l, s := 2*i+1, i
		if l < n && h.e[l].before(h.e[s]) {
			s = l
		}
		if l+1 < n && h.e[l+1].before(h.e[s]) {
			s = l + 1
		}
		if s == i {
			return
		}
		h.e[i], h.e[s] = h.e[s], h.e[i]
		i = s
	}
}

// runSharedTask runs a task whose cores share a memory system. The timing loop is
// serial (runShared), so when the programs allow it the values are computed apart,
// by a functional run of the same blocks in parallel goroutines, while the timing
// loop runs without values (RunOptions.NoValues) beside it. Both give the same GM
// bytes for a program without races, and the timing loop's race checker still
// rejects a program with one. The functional run takes the cores' buffers (the
// timing loop computes no tile) and records the GM windows registers moved (the
// same in any order of the blocks), which keeps both off the serial loop. Programs
// whose control or output depends on values computed by the task (SLD, TPRINT) or
// that exchange tiles through queues run in the timing loop with values, as before,
// and so do small tasks (smallTask). A task whose timing inputs ran before (key,
// when keyed: timingKey) takes its times from the timing cache (sim_timing_cache.go)
// and computes only its values; cached says so.
func runSharedTask(chip *Chip, kind isa.CoreKind, gm []byte, blocks []Block, cores int, sims []*coreSim, opts RunOptions, coreOf []int, key string, keyed bool) (cached bool, err error) {
	if opts.NoValues || smallTask(blocks) || !valuesApart(blocks) {
		if !opts.NoValues || !valuesApart(blocks) { // without values only queues touch the buffers
			allocBuffers(sims)
		}
		return false, runShared(sims, blocks, cores, opts.BalanceBlocks, coreOf)
	}
	var kept *timingRecord
	if !opts.NoTimingCache && keyed {
		kept = timingCache.lookup(key)
	}
	fun := opts
	fun.Functional, fun.Trace = true, false
	shadows := make([]*coreSim, len(sims))
	for ci, t := range sims {
		c := newCoreSim(chip, kind, ci, gm, fun)
		shadows[ci] = c
		c.progs, c.extent = t.progs, t.extent
		t.noMoved = true
		t.opts.NoValues = true
	}
	if kept != nil && !checkTimingCache {
		kept.apply(sims, coreOf)
		return true, valuesOf(sims, shadows, runParallel(shadows, blocks, cores))
	}
	// The functional run takes every host thread but this one, which runs the timing
	// loop and then joins it: one goroutine a thread, none waiting for one.
	cr := &coreRunner{sims: shadows, blocks: blocks, cores: cores, errs: make([]error, len(shadows))}
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0)-1, len(shadows))) {
		wg.Go(cr.work)
	}
	err = runShared(sims, blocks, cores, opts.BalanceBlocks, coreOf)
	cr.work()
	wg.Wait()
	if err == nil && kept != nil { // checkTimingCache
		if diff := kept.same(recordTiming(sims, coreOf)); diff != "" {
			err = &SimError{Core: -1, Block: -1, PC: -1, Msg: "internal error: the timing cache's key misses an input of the timing: " + diff}
		}
	}
	if err == nil && keyed && kept == nil {
		timingCache.keep(key, sims, coreOf)
	}
	if err != nil {
		valuesOf(sims, shadows, nil)
		return false, err // a race or a timing-side error comes first
	}
	return false, valuesOf(sims, shadows, cr.errs)
}

// valuesOf hands the functional run's moved GM windows to the task's cores (which
// checkMovedWindows reads), releases its buffers and returns its first error.
func valuesOf(sims, shadows []*coreSim, errs []error) error {
	for ci, c := range shadows {
		sims[ci].dynGM = c.dynGM
	}
	releaseBuffers(shadows)
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// smallTaskInstrs bounds the instructions (over all blocks, each program's listing
// once) of a task that computes its values in the timing loop rather than in a
// functional run beside it: starting and joining goroutines for the functional run
// costs more than such a task's whole run, most of all under a cgo call (Python's
// eager ops), whose goroutine is locked to its thread and hands its P over to wait.
// Host scheduling only: the values and times are the same either way. Measured: a
// 4x8 add (8 instructions) from Python, 0.11 -> 0.064 ms per op.
var smallTaskInstrs = 64 // a variable for the tests, which run both ways

func smallTask(blocks []Block) bool {
	n := 0
	for _, b := range blocks {
		if n += len(b.Prog.Instrs); n > smallTaskInstrs {
			return false
		}
	}
	return true
}

// valuesApart reports whether the blocks' values can be computed apart from their
// timing: no instruction reads values into control or output (SLD, TPRINT) and no
// queue couples the pipes.
func valuesApart(blocks []Block) bool {
	seen := map[*MachineProgram]bool{}
	for _, b := range blocks {
		if seen[b.Prog] {
			continue
		}
		seen[b.Prog] = true
		for _, in := range b.Prog.Instrs {
			switch in.Op {
			case isa.SLD, isa.TPRINT, isa.TPUSH, isa.TPOP, isa.TFREE:
				return false
			}
		}
	}
	return true
}
