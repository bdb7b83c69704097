package device

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"pypto/internal/interrupt"
	"pypto/isa"
)

// Block is one block of a task: the machine program a core runs and the GM byte
// address of each of its params.
type Block struct {
	Prog       *MachineProgram
	ParamAddrs []int
}

// RunOptions tunes a run.
type RunOptions struct {
	// Trace records one TraceEvent per executed instruction in TaskStats.Trace.
	Trace bool
	// MaxInstructions bounds the instructions one block executes (loops included);
	// 0 means 1<<26. A block that exceeds it fails.
	MaxInstructions int64
	// NoValues runs the timing model only: tile instructions take their time but
	// compute nothing (queue and scalar instructions still run, so control flow and
	// TPUSH / TPOP are exact). GM keeps its contents and run-time bounds checks of
	// the skipped instructions do not happen. Times never depend on values, so they
	// are those of a full run.
	NoValues bool
	// Interrupt, when closed, stops the run with an error at the next poll of each
	// block's scalar unit; nil takes interrupt.Current() when the task starts, so
	// that Ctrl-C in Python (interrupt.Raise) stops it.
	Interrupt <-chan struct{}
	// Functional computes values only: each block's instructions execute in program
	// order as the scalar unit issues them, with no pipe timing, race checks or
	// shared memory model (cores run in parallel goroutines). Cycles and busy times
	// are not modelled (Cycles counts the launch and the scalar unit's issue slots).
	// The run-time checks other than races apply.
	Functional bool
	// PrefetchBytes, on a chip with an L2, is how many bytes of the cores' first loads
	// the runtime prefetched into L2 while the task launched (its inputs complete):
	// each core's first block finds the lines of its loads in L2, up to its share of
	// PrefetchBytes, instead of missing (sim_prefetch.go). 0: a cold L2.
	PrefetchBytes int64
	// BalanceBlocks gives each block, in order, to the core that is free first (ties by
	// core index) instead of block i to core i mod cores: cores that finish early take
	// more blocks. The values are the same; times and which core ran a block change.
	BalanceBlocks bool
	// Pause, with Functional, is called before each instruction of every block
	// (sim_pause.go): a debugger stops a block there by not returning.
	Pause func(*Paused)
	// NoTimingCache runs the timing loop even when the task ran before with the same
	// timing inputs (sim_timing_cache.go): the times are the same either way.
	NoTimingCache bool
	// L2, on a chip with an L2, is the run's L2 (sim_l2_shared.go): the task finds the
	// lines the run's earlier tasks left, and leaves its own to the later ones. nil: a
	// cold L2 of the task's own, written through.
	L2 *SharedL2
	// estimate skips the checks of the programs' GM accesses (bounds, overlaps between
	// blocks, moved windows) for the device's estimates (estimate.go), whose programs
	// the compiler just built: it changes no time.
	estimate bool
}

// RunTask runs the blocks of one task on the cores of one kind and returns what it
// measured. gm is the device's global memory; blocks read and write it in place.
//
// Block i runs on core i % chip.Cores(kind); the blocks of one core run one after
// another, and cores run in parallel goroutines, each with its own buffers. Blocks of
// one task must not share GM bytes that one of them writes (RunTask checks this before
// starting, with the params' other checks); given that, the output bytes and the
// statistics are the same whatever GOMAXPROCS is. On an error the GM may have been
// partly written by the blocks that ran.
func RunTask(chip *Chip, gm []byte, kind isa.CoreKind, blocks []Block, opts RunOptions) (st *TaskStats, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, &SimError{Core: -1, Block: -1, PC: -1, Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	taskErr := func(format string, args ...any) error {
		return &SimError{Core: -1, Block: -1, PC: -1, Msg: fmt.Sprintf(format, args...)}
	}
	if err := chip.Validate(); err != nil {
		return nil, err
	}
	if err := chip.CheckGM(len(gm), gmWhat); err != nil {
		return nil, err
	}
	if opts.Interrupt == nil {
		opts.Interrupt = interrupt.Current()
	}
	cores := chip.Cores(kind)
	if cores <= 0 {
		return nil, taskErr("chip %s has no %s cores", chip.Name, kind)
	}
	if len(blocks) == 0 {
		return nil, taskErr("task has no blocks")
	}
	extents := map[*MachineProgram]map[isa.Location]int{}
	per := make([][]gmInterval, len(blocks))
	for i := range blocks {
		m := blocks[i].Prog
		if m == nil {
			return nil, &SimError{Core: i % cores, Block: i, PC: -1, Msg: "block has no program"}
		}
		if _, ok := extents[m]; !ok {
			ext, err := checkMachine(chip, kind, m)
			if err != nil {
				return nil, err
			}
			extents[m] = ext
		}
		if opts.estimate { // an estimate runs programs the compiler just built: no checks
			continue
		}
		if per[i], err = blockGM(gm, i%cores, i, &blocks[i]); err != nil {
			return nil, err
		}
	}
	if len(blocks) > 1 && !opts.estimate {
		if err := checkCrossBlock(func(b int) int { return b % cores }, blocks, per); err != nil {
			return nil, err
		}
	}

	active := min(cores, len(blocks))
	sims := make([]*coreSim, active)
	var mem *memSystem
	if chip.L2Bytes > 0 && !opts.Functional {
		mem = newMemSystem(chip, len(gm), opts.L2)
	}
	step := cores // the blocks a core may run: its static deal, or any when balanced
	if opts.BalanceBlocks {
		step = 1
	}
	infos := &progInfos{noAccesses: opts.Functional}
	for ci := range active {
		c := newCoreSim(chip, kind, ci, gm, opts)
		c.mem, c.progs = mem, infos
		c.prefetchLeft = opts.PrefetchBytes / int64(active)
		for bi := ci % step; bi < len(blocks); bi += step {
			for loc, n := range extents[blocks[bi].Prog] {
				c.extent[loc] = max(c.extent[loc], n)
			}
		}
		sims[ci] = c
	}
	coreOf := func(b int) int { return b % cores }
	var placed []int // each block's core, when balanced
	if opts.BalanceBlocks && !opts.Functional {
		placed = make([]int, len(blocks))
		coreOf = func(b int) int { return placed[b] }
	}
	cached := false
	var key string
	keyed := false
	switch {
	case mem != nil:
		key, keyed = timingKey(chip, kind, len(gm), blocks, cores, sims, opts)
		if cached, err = runSharedTask(chip, kind, gm, blocks, cores, sims, opts, placed, key, keyed); err != nil {
			return nil, err
		}
	case placed != nil: // balancing needs the cores in one loop in task time
		allocBuffers(sims)
		if err := runShared(sims, blocks, cores, true, placed); err != nil {
			return nil, err
		}
	default:
		for _, e := range runParallel(sims, blocks, cores) {
			if e != nil {
				return nil, e // the lowest failing core, so the reported error does not depend on timing
			}
		}
	}
	var windows []gmInterval
	if !opts.estimate {
		if windows, err = checkMovedWindows(coreOf, blocks, per, sims); err != nil {
			return nil, err
		}
	}
	st = collect(chip, kind, blocks, sims, extents)
	st.TimingCached = cached
	releaseBuffers(sims)
	st.FootprintRead, st.FootprintWritten = footprint(windows)
	if mem != nil {
		st.L2Hits, st.L2Misses, st.PrefetchedBytes, st.HBMBytesWritten = mem.hits, mem.misses, mem.prefetched, mem.hbmWritten
		st.HBMBytesRead = mem.hbmRead
		mem.release(key, keyed)
	}
	return st, nil
}

// runParallel runs each core's blocks (coreSim.run) on GOMAXPROCS goroutines (none
// for one core) and returns each core's error (coreRunner).
func runParallel(sims []*coreSim, blocks []Block, cores int) []error {
	cr := &coreRunner{sims: sims, blocks: blocks, cores: cores, errs: make([]error, len(sims))}
	workers := min(runtime.GOMAXPROCS(0), len(sims))
	if workers <= 1 {
		cr.work()
		return cr.errs
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(cr.work)
	}
	wg.Wait()
	return cr.errs
}

// coreRunner runs cores' blocks on the goroutines that call work: each takes the next
// core not yet run and lends it its buffers, cleared to the core's extents (a host
// thread's buffers stay in its cache from core to core, where a set per simulated
// core, 48 of them, would not). A goroutine may join late (work) and take what is
// left.
type coreRunner struct {
	sims   []*coreSim
	blocks []Block
	cores  int
	next   atomic.Int64
	errs   []error // per core
}

func (cr *coreRunner) work() {
	var own [isa.NumLocations][]byte
	for i := int(cr.next.Add(1) - 1); i < len(cr.sims); i = int(cr.next.Add(1) - 1) {
		c := cr.sims[i]
		for loc, n := range c.extent {
			if n > cap(own[loc]) {
				releaseBuffer(loc, own[loc])
				own[loc] = newBuffer(loc, n)
			}
			c.bufs[loc] = own[loc][:n]
			clear(c.bufs[loc])
		}
		cr.errs[i] = c.run(cr.blocks, cr.cores)
		c.bufs = [isa.NumLocations][]byte{}
	}
	for loc, b := range own {
		releaseBuffer(loc, b)
	}
}

// checkMovedWindows repeats the cross-block check with the GM windows registers moved,
// which are known only once the blocks have run. The results of such a task would
// depend on scheduling, so it fails even though every block finished. It returns the
// blocks' windows, static and moved, as sortedIntervals orders them.
func checkMovedWindows(coreOf func(block int) int, blocks []Block, per [][]gmInterval, sims []*coreSim) ([]gmInterval, error) {
	all := make([][]gmInterval, len(per))
	for i, ivs := range per {
		all[i] = slices.Clip(ivs) // appends copy: per stays as it is
	}
	moved := false
	for _, c := range sims {
		for _, iv := range c.dynGM {
			all[iv.block] = append(all[iv.block], iv)
			moved = true
		}
	}
	// Each block's list with moved windows is sorted on its own, the blocks in
	// parallel; without any the lists are sorted already, and one block's list is
	// sorted in place (a goroutine would cost more than a small task's whole run).
	var next atomic.Int64
	merge := func() {
		for i := int(next.Add(1) - 1); i < len(all); i = int(next.Add(1) - 1) {
			if len(all[i]) > len(per[i]) {
				all[i] = mergeIntervals(all[i])
			}
		}
	}
	switch workers := min(runtime.GOMAXPROCS(0), len(all)); {
	case !moved:
	case workers == 1:
		merge()
	default:
		var wg sync.WaitGroup
		for range workers {
			wg.Go(merge)
		}
		wg.Wait()
	}
	sorted := sortedIntervals(all)
	if !moved || len(blocks) < 2 {
		return sorted, nil
	}
	return sorted, checkSortedCrossBlock(coreOf, blocks, sorted)
}

// run simulates the blocks of one core, recovering a panic as this core's error.
func (c *coreSim) run(blocks []Block, cores int) (err error) {
	bi := -1
	defer func() {
		if r := recover(); r != nil {
			err = &SimError{Core: c.index, Block: bi, PC: -1, Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	for bi = c.index; bi < len(blocks); bi += cores {
		if err := c.runBlock(bi, &blocks[bi]); err != nil {
			return err
		}
	}
	return nil
}

// addCounters sums the cores' pipe busy times, traffic, instruction counts, traces
// and prints into st, in core order.
func addCounters(st *TaskStats, sims []*coreSim) {
	for _, c := range sims {
		for p, b := range c.busy {
			if b > 0 {
				st.PipeBusy[isa.Pipe(p)] += b
			}
		}
		st.GMBytesRead += c.gmRead
		st.GMBytesWritten += c.gmWritten
		st.Instructions += c.instrs
		st.ICacheMisses += c.icache.misses
		st.FetchStallCycles += c.icache.stalls
		st.Trace = append(st.Trace, c.trace...)
		st.Prints = append(st.Prints, c.prints...)
	}
}

// collect sums the cores' counters into the task's stats.
func collect(chip *Chip, kind isa.CoreKind, blocks []Block, sims []*coreSim, extents map[*MachineProgram]map[isa.Location]int) *TaskStats {
	st := &TaskStats{
		Chip:        chip.Name,
		Kind:        kind,
		ClockHz:     chip.ClockHz,
		CoreCycles:  make([]int64, chip.Cores(kind)),
		ActiveCores: len(sims),
		Blocks:      len(blocks),
		PipeBusy:    map[isa.Pipe]int64{},
		HighWater:   map[isa.Location]int{},
	}
	var longest int64
	for _, c := range sims {
		st.CoreCycles[c.index] = c.cycles
		longest = max(longest, c.cycles)
	}
	addCounters(st, sims)
	st.setTime(chip, longest)
	st.addStartup(sims, len(st.CoreCycles))
	for _, b := range blocks {
		for loc, n := range extents[b.Prog] {
			st.HighWater[loc] = max(st.HighWater[loc], n)
		}
	}
	return st
}
