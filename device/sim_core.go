package device

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"pypto/isa"
)

// coreSim is one simulated core: its buffers, scratch space for the kernels and the
// counters it reports. A core runs its blocks one after another; cores run in
// parallel goroutines and share only GM (blocks of one task write disjoint GM).
type coreSim struct {
	chip  *Chip
	kind  isa.CoreKind
	index int
	gm    []byte
	bufs  [isa.NumLocations][]byte
	// extent is the bytes of each buffer the core's blocks use: the buffers it is
	// given when it runs (allocBuffers, runParallel).
	extent [isa.NumLocations]int
	opts   RunOptions
	start  int64      // task time at which this core starts (after dispatch and core start)
	mem    *memSystem // the task's shared L2 and HBM, nil without one
	// portSlot is 1 + the index of the core's GM ports in mem (0: none yet).
	portSlot int
	// prefetchLeft is what is left of this core's share of RunOptions.PrefetchBytes
	// for the loads of its first block (sim_prefetch.go).
	prefetchLeft int64

	fa, fb, fc []float32
	ia, ib, id []int64
	ic         []int32
	tmp        []byte
	scratch    [maxOperands][]float64 // decoded inputs of the vector kernels, per operand
	vec        [maxOperands][]float32 // float32 values of the vector kernels, per operand
	operands   [maxOperands]elems     // the views of the instruction being executed

	cycles                    int64
	busy                      [numPipes]int64
	gmRead, gmWritten, instrs int64
	trace                     []TraceEvent
	prints                    []PrintRecord
	dynGM                     []gmInterval // GM windows moved by registers, as they ran
	// dynSeen holds the current block's moved windows; dynLast, per param and kind
	// (2*param, +1 for a write), its latest window whose byte runs a window
	// continuing it to the right extends.
	dynSeen  map[movedWindow]bool
	dynLast  []lastWindow
	endBlock int    // the block dynSeen and dynLast are about
	noMoved  bool   // the run's GM windows are not needed (a timed run's value shadow)
	icache   icache // instruction fetch (sim_icache.go)
	tlb      tlb    // address translation (sim_startup.go)
	// startupStall is the core's start-up beyond the task's launch: its first block's
	// instruction-cache stalls, its page walks, a mixed task's flag set-up;
	// sharedWait the time its transfers and hand-offs waited for what other cores
	// held (sim_startup.go). blocksDone counts the blocks it finished.
	startupStall, sharedWait int64
	blocksDone               int
	progs                    *progInfos // the task's, shared by its cores (nil: each block makes its own)
	lastRun                  *blockRun  // the core's block run, reused by its next block (newBlockRun)
}

// lastWindow is recorded windows joined downwards, one run per row: row r (in
// elements from offset, rowStride apart, of size bytes) is dynGM[first+r], whatever
// windows to its right extended it.
type lastWindow struct {
	offset, rows, rowStride, size, first int
	ok                                   bool
}

// movedWindow is a GM window a register moved, as it ran in one block. A loop meets
// the same window many times (a GEMM re-reads each tile of A and B); its byte runs
// are recorded once, and a window that continues rows of the last one of its param
// to the right (the next stage along K, the next tile of a row) extends their runs,
// which keeps the cross-block check and the footprint (sorts after the run)
// proportional to the distinct runs, not to the instructions executed.
type movedWindow struct {
	block, base, size int
	view              isa.GMView
	write             bool
}

// maxOperands bounds the operands of any instruction (TIMG2COL has ten).
const maxOperands = 10

// semEntry is one pending SET_FLAG: when it becomes visible, where it was set, and
// the knowledge it carries for the race checker.
type semEntry struct {
	at    int64
	pc    int
	known vclock
}

// dynInstr is one issued instruction: an execution of the static instruction at pc.
type dynInstr struct {
	pc    int    // index into the machine program's Instrs
	in    *Instr // the instruction as issued (register operands resolved)
	issue int64  // when the scalar pipe issued it
	seq   int    // its position among its pipe's issued instructions
	sSeen int    // scalar-pipe instructions executed before it was issued
	acc   accessSet
}

// blockRun is the state of one block on one core: the scalar unit issuing
// instructions, the pipes' queues, the flags and the race checker.
//
// It is a discrete-event simulation of the core's pipes. The scalar unit
// (sim_scalar.go) runs the program's control flow and issues the other instructions
// in program order, IssueCycles apart, into per-pipe in-order queues (unbounded:
// issue never stalls on a full queue; the simulator issues lazily, just far enough
// ahead, which gives the same times). Scalar-pipe instructions execute as they are issued; a
// TSYNC all stops issue until everything issued before it has finished, and a
// WAIT_FLAG on the scalar pipe until its event is visible. Each step starts, among the
// instructions at the heads of the queues that can start, the one with the earliest
// start time (ties by issue order): start = max(pipe free, issue time, and for a
// WAIT_FLAG the time its event became visible, for queue instructions the time the
// queue can serve them). Values are computed at that moment, so they follow the
// simulated order, not program order; the race checker (sim_race.go) makes sure that
// is the same thing. When no head can start and work is left, the block is
// deadlocked, which is reported instead of hanging.
type blockRun struct {
	c   *coreSim
	bi  int
	blk *Block
	m   *MachineProgram
	// info is what the task derived from m once (sim_proginfo.go).
	info *progInfo
	x    execCtx
	t0   int64 // task time at which the block starts

	sc      scalarUnit
	dyn     []dynInstr // issued instructions from dynBase on (started ones are dropped)
	dynBase int
	dynHigh int // the most entries dyn has held since the core's runs were released
	issued  int // instructions issued to pipes so far (the next one's index)
	races   raceChecker
	queues  [numPipes][]int // issue indices, per pipe, from its oldest unstarted one
	heads   [numPipes]int
	free    [numPipes]int64
	// lastStart is when each pipe last started an instruction: a full queue's slot
	// frees then.
	lastStart [numPipes]int64
	// drain is when each pipe's started instructions have all completed (a GM
	// transfer completes after the pipe is free again); busyTo is the end of the
	// pipe's busy time counted so far (a pipe is busy while a transfer is in flight);
	// inflight holds the completions of the pipe's transfers still in flight, in start
	// order (at most Chip.MemQueueDepth at once).
	drain, busyTo [numPipes]int64
	inflight      [numPipes][]int64
	// results are the vector instructions whose results are not ready when the pipe
	// is free again (Chip.times): the bytes each writes and when they are ready.
	results    []pendingResult
	sems       *flagQueues // the core's, emptied for the block (sim_flags.go)
	done       int         // issued instructions started (starting fixes their end)
	maxEnd     int64
	pausedStep int64 // 1 + the step RunOptions.Pause was last called for
	nextAt     nextStart
	resolved   Instr // resolve's scratch for the instructions executed at once

	// Memory a core's runs hand on from block to block (and, pooled, from task to
	// task): the flag queues, the access sets of instructions registers moved, and
	// resolved copies of queued instructions that have started (takeInstr).
	flags flagQueues
	spans spanArena
	spare []*Instr
}

// blockRuns keeps the block runs of finished tasks' cores for later tasks' cores
// (releaseRuns), with the memory they grew.
var blockRuns sync.Pool // of *blockRun

// releaseRuns hands the cores' block runs to later tasks; the cores must not run
// again.
func releaseRuns(sims []*coreSim) {
	for _, c := range sims {
		if r := c.lastRun; r != nil {
			clear(r.dyn[:r.dynHigh]) // what they point to is the task's
			for p := range r.races.hist {
				clear(r.races.hist[p][:cap(r.races.hist[p])])
			}
			*r = blockRun{dyn: r.dyn[:0], queues: r.queues, inflight: r.inflight, sc: scalarUnit{regs: r.sc.regs, loops: r.sc.loops},
				races: raceChecker{hist: r.races.hist}, resolved: r.resolved, flags: r.flags, spans: r.spans, spare: r.spare, results: r.results[:0]}
			blockRuns.Put(r)
			c.lastRun = nil
		}
	}
}

// d is the issued instruction with index i.
func (r *blockRun) d(i int) *dynInstr { return &r.dyn[i-r.dynBase] }

// takeInstr returns an instruction for resolve to fill, reusing one that has started.
func (r *blockRun) takeInstr() *Instr {
	if n := len(r.spare); n > 0 {
		in := r.spare[n-1]
		r.spare = r.spare[:n-1]
		return in
	}
	return &Instr{}
}

// compactEvery is how many starts apart a block compacts its queues: often enough
// that they hold little more than what is in flight, seldom enough to cost nothing.
const compactEvery = 64

// compact drops the started instructions at the front of the issued list and of the
// pipe queues, so a long loop keeps only what is in flight.
func (r *blockRun) compact() {
	const slack = 1024
	for p := range r.queues {
		if r.heads[p] > slack {
			r.queues[p] = append(r.queues[p][:0], r.queues[p][r.heads[p]:]...)
			r.heads[p] = 0
		}
	}
	if len(r.dyn) < 2*slack {
		return
	}
	oldest := r.issued
	for p := range r.queues {
		if r.heads[p] < len(r.queues[p]) {
			oldest = min(oldest, r.queues[p][r.heads[p]])
		}
	}
	if drop := oldest - r.dynBase; drop > len(r.dyn)/2 {
		r.dyn = append(r.dyn[:0], r.dyn[drop:]...)
		r.dynBase = oldest
	}
}

// newBlockRun starts block bi on core c. A core runs one block at a time, and a
// block's run is over once its finish has been called, so the core's previous run
// is reset for the new block and keeps the memory of its queues and histories.
func newBlockRun(c *coreSim, bi int, blk *Block, q *queueSet) *blockRun {
	m := blk.Prog
	info := c.progs.of(m)
	r := c.lastRun
	if r == nil {
		r, _ = blockRuns.Get().(*blockRun)
		if r == nil {
			r = &blockRun{}
		}
		c.lastRun = r
	}
	old := *r
	*r = blockRun{c: c, bi: bi, blk: blk, m: m, info: info, t0: c.start + c.cycles + int64(c.chip.PrologueCycles),
		flags: old.flags, spans: old.spans, spare: old.spare, results: old.results[:0]}
	r.sems = &r.flags
	r.races.off = info.raceFree.Load()
	r.flags.reset(info)
	r.x = execCtx{m: m, blk: blk, queues: q, run: r}
	r.sc = scalarUnit{regs: grow(old.sc.regs, len(m.Regs)), loops: old.sc.loops[:0]}
	clear(r.sc.regs)
	r.dyn, r.dynHigh = old.dyn[:0], old.dynHigh
	for p := range numPipes {
		r.queues[p], r.inflight[p], r.races.hist[p] = old.queues[p][:0], old.inflight[p][:0], old.races.hist[p][:0]
	}
	r.resolved.Args = old.resolved.Args[:0]
	return r
}

func (r *blockRun) fail(pc int, format string, args ...any) error {
	e := &SimError{Core: r.c.index, Block: r.bi, PC: pc, Msg: fmt.Sprintf(format, args...)}
	if pc >= 0 {
		e.Instr = r.m.InstrString(pc)
	}
	return e
}

// failSync is fail for a synchronisation failure (ErrSync).
func (r *blockRun) failSync(pc int, format string, args ...any) error {
	e := r.fail(pc, format, args...)
	e.(*SimError).Err = ErrSync
	return e
}

func (r *blockRun) record(pc int, p isa.Pipe, start, free, end, latency int64) {
	r.c.instrs++
	if r.c.opts.Trace {
		in := &r.m.Instrs[pc]
		e := TraceEvent{Kind: r.c.kind, Core: r.c.index, Block: r.bi, PC: pc, Pipe: p, Op: in.Op, Start: r.t0 + start, Free: r.t0 + free, End: r.t0 + end, Latency: latency}
		if in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG {
			k := flagKeyOf(in)
			e.Flag = FlagEvent{Src: k.pair.src, Dst: k.pair.dst, ID: k.id}
		}
		r.c.trace = append(r.c.trace, e)
	}
}

// finished reports whether the program has been issued to its end and every issued
// instruction has started.
func (r *blockRun) finished() bool { return r.sc.pc >= len(r.m.Instrs) && r.done == r.issued }

// enqueue issues a pipe instruction at the scalar unit's current time.
func (r *blockRun) enqueue(pc int, in *Instr) {
	var acc accessSet
	switch {
	case r.races.off:
	case r.info.static[pc]:
		acc = r.info.access(pc)
	default:
		acc = r.spans.accesses(in)
	}
	d := dynInstr{pc: pc, in: in, issue: r.sc.t, acc: acc, sSeen: r.races.issued[isa.PipeS]}
	d.seq = r.races.issue(in.Pipe, r.issued, pc, d.acc)
	if r.heads[in.Pipe] == len(r.queues[in.Pipe]) {
		r.nextAt.valid = false // a new head
	}
	r.queues[in.Pipe] = append(r.queues[in.Pipe], r.issued)
	r.dyn = append(r.dyn, d)
	r.dynHigh = max(r.dynHigh, len(r.dyn))
	r.issued++
}

// pendingResult is a vector instruction's destination bytes and when they are ready.
type pendingResult struct {
	sp    span
	ready int64
}

// noteResult records the result of vector instruction in, which left the pipe at
// free and is ready at ready, and forgets those ready by free (no later vector
// instruction starts before it).
func (r *blockRun) noteResult(in *Instr, free, ready int64) {
	kept := r.results[:0]
	for _, p := range r.results {
		if p.ready > free {
			kept = append(kept, p)
		}
	}
	r.results = kept
	if ready > free && in.Args[0].Kind == isa.KindTile {
		r.results = append(r.results, pendingResult{tileSpan(in.Args[0]), ready})
	}
}

// resultReady is when every pending vector result that in reads or overwrites is
// ready (at least from): a dependent vector instruction waits for it, as the
// hardware's barrier between them does.
func (r *blockRun) resultReady(in *Instr, from int64) int64 {
	at := from
	for _, p := range r.results {
		if p.ready <= at {
			continue
		}
		for _, a := range in.Args {
			if a.Kind == isa.KindTile && tileSpan(a).overlaps(p.sp) {
				at = max(at, p.ready)
				break
			}
		}
	}
	return at
}

// nextStart is next's answer, kept until something it depends on changes.
type nextStart struct {
	di        int
	st        int64
	ok, valid bool
}

// next finds the queued instruction that starts first, if any can start. The answer
// depends on the pipes' heads, their times and the flag queues, which change when an
// instruction starts, one is queued on an empty pipe, or the scalar unit sets or
// waits for a flag (each forgets it: r.nextAt.valid = false), and, for a queue
// instruction at a head, on other cores (such an answer is not kept). The scalar
// unit asks before each instruction it issues, so the answer is kept.
func (r *blockRun) next() (di int, start int64, ok bool) {
	if r.nextAt.valid {
		return r.nextAt.di, r.nextAt.st, r.nextAt.ok
	}
	di, start, ok, keep := r.findNext()
	r.nextAt = nextStart{di, start, ok, keep}
	return di, start, ok
}

// findNext is next without the kept answer; keep says whether the answer may be kept.
func (r *blockRun) findNext() (di int, start int64, ok, keep bool) {
	keep = true
	best, bestStart := -1, int64(0)
	for p := range r.queues {
		if r.heads[p] >= len(r.queues[p]) {
			continue
		}
		i := r.queues[p][r.heads[p]]
		d := r.d(i)
		st := max(r.free[p], d.issue)
		if q := r.inflight[p]; len(q) >= r.c.chip.MemQueueDepth {
			st = max(st, q[len(q)-r.c.chip.MemQueueDepth]) // a request slot frees
		}
		if len(r.results) > 0 && isa.Pipe(p) == isa.PipeV {
			st = max(st, r.resultReady(d.in, st))
		}
		switch d.in.Op {
		case isa.SET_FLAG, isa.TSYNC, isa.TFREE:
			st = max(st, r.drain[p]) // after what the pipe started has completed
		case isa.WAIT_FLAG:
			q := r.sems.pending(d.pc)
			if len(q) == 0 {
				continue
			}
			st = max(st, q[0].at)
		case isa.TPUSH, isa.TPOP:
			keep = false
			at, ready := r.x.queues.ready(d.in)
			if !ready {
				continue
			}
			st = max(st, at-r.t0) // queue times are task times
		}
		if best < 0 || st < bestStart || (st == bestStart && i < best) {
			best, bestStart = i, st
		}
	}
	return best, bestStart, best >= 0, keep
}

// start runs queued instruction di at time st: the race check, its values, its pipe
// time, and what it does to flags.
func (r *blockRun) start(di int, st int64) error {
	r.nextAt.valid = false
	d := r.d(di)
	in := d.in
	if other, q, raced := r.races.start(in.Pipe, d.seq, d.sSeen, di, d.acc); raced {
		return r.failSync(d.pc, "%s", raceMessage(r.m, other, q, in.Pipe))
	}
	var tt transferTimes
	if r.c.mem != nil {
		tt = r.c.mem.duration(r, in, r.t0+st)
	} else {
		tt = r.c.chip.times(in)
	}
	end := st + tt.done
	r.x.now, r.x.end = st, end
	if !r.c.opts.NoValues || computesControl(in) {
		if err := r.c.execRecovering(&r.x, in); err != nil {
			return r.fail(d.pc, "%v", err)
		}
	} else {
		r.c.countGM(in)
	}
	switch in.Op {
	case isa.SET_FLAG:
		r.sems.push(d.pc, semEntry{at: st + int64(r.c.chip.FlagLatencyCycles), pc: d.pc, known: r.races.snapshot(in.Pipe, d.seq)})
	case isa.WAIT_FLAG:
		r.races.join(in.Pipe, r.sems.pop(d.pc).known)
	}
	p := in.Pipe
	r.free[p] = st + tt.occupy
	r.drain[p] = max(r.drain[p], end)
	r.lastStart[p] = max(r.lastStart[p], st)
	r.c.busy[p] += max(0, end-max(st, r.busyTo[p]))
	r.busyTo[p] = max(r.busyTo[p], end)
	if q := r.inflight[p]; tt.done > tt.occupy || len(q) > 0 {
		for len(q) > 0 && q[0] <= st {
			q = q[1:]
		}
		if tt.done > tt.occupy {
			q = append(q, end)
		}
		r.inflight[p] = q
	}
	r.maxEnd = max(r.maxEnd, end)
	if p == isa.PipeV {
		r.noteResult(in, st+tt.occupy, end)
	}
	if in != &r.m.Instrs[d.pc] { // a resolved copy: nothing reads it once started
		r.spare = append(r.spare, in)
	}
	r.heads[p]++
	r.done++
	r.record(d.pc, p, st, st+tt.occupy, end, tt.latency)
	if r.done%compactEvery == 0 {
		r.compact()
	}
	return nil
}

// computesControl reports whether an instruction's execution matters to control or
// timing, so that it runs even with RunOptions.NoValues: the queue instructions (their
// slots and entries) and everything on the scalar pipe.
func computesControl(in *Instr) bool {
	switch in.Op {
	case isa.TPUSH, isa.TPOP, isa.TFREE:
		return true
	}
	return in.Pipe == isa.PipeS
}

// countGM adds the GM traffic of a load, store, gather or scatter whose execution
// NoValues skipped, as its exec would have counted it.
func (c *coreSim) countGM(in *Instr) {
	switch in.Op {
	case isa.TLOAD:
		c.gmRead += viewBytes(in.Args[1])
	case isa.TSTORE, isa.TSTORE_FP:
		n := viewBytes(in.Args[0])
		c.gmWritten += n
		if in.Mode == isa.AtomicAdd {
			c.gmRead += n
		}
	case isa.MGATHER:
		c.gmRead += int64(in.Args[0].ValidRows * in.Args[0].ValidCols * in.Args[1].DType.Size())
	case isa.MSCATTER:
		n := int64(in.Args[1].ValidRows * in.Args[1].ValidCols * in.Args[0].DType.Size())
		c.gmWritten += n
		if in.Mode == isa.AtomicAdd {
			c.gmRead += n
		}
	}
}

// finish checks the block's end state.
func (r *blockRun) finish() error {
	// A set nobody waited for would leak into the next block on real hardware.
	var leaked []int
	r.sems.each(func(_ flagKey, q []semEntry) {
		for _, e := range q {
			leaked = append(leaked, e.pc)
		}
	})
	if len(leaked) > 0 {
		sort.Ints(leaked)
		return r.failSync(leaked[0], "set_flag is never consumed by a wait_flag (%d unconsumed set(s) at block end)", len(leaked))
	}
	if !r.races.off && !r.c.opts.Functional && r.info.replayable {
		r.info.raceFree.Store(true) // the checker saw every instruction start
	}
	return nil
}

// addBlock adds a block that took length (first to last instruction) to the core's
// time, with the kernel's prologue before it and its epilogue after.
func (c *coreSim) addBlock(length int64) {
	c.cycles += int64(c.chip.PrologueCycles+c.chip.EpilogueCycles) + length
	c.blocksDone++
}

// length is the block's time: when its last pipe or its scalar unit finished.
func (r *blockRun) length() int64 { return max(r.maxEnd, r.sc.t) }

// runBlock simulates one block alone on the core from the core's current time.
func (c *coreSim) runBlock(bi int, blk *Block) error {
	r := newBlockRun(c, bi, blk, newQueueSet())
	for {
		if err := r.issueAhead(); err != nil {
			return err
		}
		if r.finished() {
			c.addBlock(r.length())
			return r.finish()
		}
		di, st, ok := r.next()
		if !ok {
			return r.deadlock()
		}
		if err := r.start(di, st); err != nil {
			return err
		}
	}
}

// execRecovering runs the functional part of an instruction, turning a panic from a
// malformed machine program into an error located at the instruction.
func (c *coreSim) execRecovering(x *execCtx, in *Instr) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return c.exec(x, in)
}

// deadlock reports every pipe stuck on a wait whose event cannot come any more (a
// flag, a queue entry or a queue slot), and the scalar unit if it is stuck too.
func (r *blockRun) deadlock() error {
	var stuck []int
	for p := range r.queues {
		if r.heads[p] < len(r.queues[p]) {
			stuck = append(stuck, r.d(r.queues[p][r.heads[p]]).pc)
		}
	}
	if r.sc.pc < len(r.m.Instrs) && r.m.Instrs[r.sc.pc].Op == isa.WAIT_FLAG {
		stuck = append(stuck, r.sc.pc)
	}
	if len(stuck) == 0 {
		return r.failSync(-1, "deadlock: nothing can run but the block is not finished")
	}
	sort.Ints(stuck)
	others := make([]string, 0, len(stuck))
	for _, pc := range stuck[1:] {
		others = append(others, fmt.Sprintf("pc %d (%s)", pc, r.m.InstrString(pc)))
	}
	msg := "deadlock: wait_flag can never be satisfied (no set_flag for its event is left to run)"
	if op := r.m.Instrs[stuck[0]].Op; op == isa.TPUSH || op == isa.TPOP {
		msg = fmt.Sprintf("deadlock: %s waits on a queue no core will serve", op)
	}
	if len(others) > 0 {
		msg += "; also blocked: " + strings.Join(others, ", ")
	}
	return r.failSync(stuck[0], "%s", msg)
}

func flagKeyOf(in *Instr) flagKey {
	return flagKey{pipePair{in.Args[0].Pipe, in.Args[1].Pipe}, int(in.Args[2].Imm)}
}
