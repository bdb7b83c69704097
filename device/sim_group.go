package device

import (
	"fmt"
	"sync"

	"pypto/internal/interrupt"
	"pypto/isa"
)

// Mixed tasks: the cube core and the vector cores of one AI core (split A2/A3
// architecture: one AIC and VectorCores/CubeCores AIVs) run one group of programs
// together, exchanging tiles through the TPUSH / TPOP queues of the group.

// Group is one block of a mixed task: the programs of an AI core's cube core (nil if
// it has none) and of its vector cores, which share the group's queues.
type Group struct {
	Cube   *Block
	Vector []Block
}

// RunGroupTask runs a mixed task and returns what it measured. Group i runs on AI
// core i % chip.CubeCores: its cube block on that cube core, its vector blocks on the
// AI core's vector cores. The cores of a group are simulated together in one
// discrete-event loop (a TPUSH waits for a free slot, a TPOP for an entry, as the
// reference interpreter's queues do), and they start and end each group together.
// On a chip with an L2 model every AI core shares it, so all of them run in one event
// loop in task time order (runGroupsShared); otherwise AI cores run in parallel
// goroutines. The checks of RunTask apply to the blocks of all groups.
func RunGroupTask(chip *Chip, gm []byte, groups []Group, opts RunOptions) (st *TaskStats, err error) {
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
	if len(groups) == 0 {
		return nil, taskErr("task has no groups")
	}
	perAI := chip.VectorCores / chip.CubeCores
	// Flatten the groups' blocks for the checks: flat[i] is a block, kinds[i] its core
	// kind and cores[i] its core.
	var (
		flat  []Block
		kinds []isa.CoreKind
		cores []int
	)
	for gi, g := range groups {
		ai := gi % chip.CubeCores
		if len(g.Vector) > perAI {
			return nil, taskErr("group %d has %d vector blocks; an AI core of chip %s has %d vector cores", gi, len(g.Vector), chip.Name, perAI)
		}
		if g.Cube == nil && len(g.Vector) == 0 {
			return nil, taskErr("group %d has no program", gi)
		}
		if g.Cube != nil {
			flat, kinds, cores = append(flat, *g.Cube), append(kinds, isa.Cube), append(cores, ai)
		}
		for vi, b := range g.Vector {
			flat, kinds, cores = append(flat, b), append(kinds, isa.Vector), append(cores, ai*perAI+vi)
		}
	}
	extents := map[*MachineProgram]map[isa.Location]int{}
	per := make([][]gmInterval, len(flat))
	for i := range flat {
		m := flat[i].Prog
		if m == nil {
			return nil, &SimError{Core: cores[i], Block: i, PC: -1, Msg: "block has no program"}
		}
		if _, ok := extents[m]; !ok {
			ext, err := checkMachine(chip, kinds[i], m)
			if err != nil {
				return nil, err
			}
			extents[m] = ext
		}
		if opts.estimate { // an estimate runs programs the compiler just built: no checks
			continue
		}
		if per[i], err = blockGM(gm, cores[i], i, &flat[i]); err != nil {
			return nil, err
		}
	}
	coreOf := func(b int) int { return cores[b] }
	if len(flat) > 1 && !opts.estimate {
		if err := checkCrossBlock(coreOf, flat, per); err != nil {
			return nil, err
		}
	}

	firsts := make([]int, len(groups)) // flat index of each group's first block
	for gi := 1; gi < len(groups); gi++ {
		firsts[gi] = firsts[gi-1] + groupSize(groups[gi-1])
	}
	active := min(chip.CubeCores, len(groups))
	ais := make([]*aiCore, active)
	var mem *memSystem
	if chip.L2Bytes > 0 && !opts.Functional {
		mem = newMemSystem(chip, len(gm), opts.L2)
	}
	infos := &progInfos{noAccesses: opts.Functional}
	for ai := range active {
		share := opts.PrefetchBytes / int64(active*(1+perAI))
		a := &aiCore{cube: newCoreSim(chip, isa.Cube, ai, gm, opts)}
		a.cube.mem, a.cube.prefetchLeft, a.cube.progs = mem, share, infos
		for v := range perAI {
			c := newCoreSim(chip, isa.Vector, ai*perAI+v, gm, opts)
			c.mem, c.prefetchLeft, c.progs = mem, share, infos
			a.vector = append(a.vector, c)
		}
		for gi := ai; gi < len(groups); gi += chip.CubeCores {
			a.jobs = append(a.jobs, groupJob{g: groups[gi], first: firsts[gi]})
		}
		a.size(extents)
		ais[ai] = a
	}
	var key string
	keyed := false
	if mem != nil {
		if opts.L2 != nil { // the run's next tasks find the L2 this one leaves: name it
			var sims []*coreSim
			for _, a := range ais {
				sims = append(append(sims, a.cube), a.vector...)
			}
			key, keyed = timingKey(chip, isa.CoreInvalid, len(gm), flat, chip.CubeCores, sims, opts)
		}
		// One event loop, so the shared L2 sees accesses in task time order.
		if err := runGroupsShared(ais); err != nil {
			return nil, err
		}
	} else {
		errs := make([]error, active)
		var wg sync.WaitGroup
		for ai, a := range ais {
			wg.Go(func() { errs[ai] = a.run() })
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return nil, e // the lowest failing AI core
			}
		}
	}
	var sims []*coreSim
	for _, a := range ais {
		sims = append(sims, a.cube)
		sims = append(sims, a.vector...)
	}
	var windows []gmInterval
	if !opts.estimate {
		if windows, err = checkMovedWindows(coreOf, flat, per, sims); err != nil {
			return nil, err
		}
	}
	st = collect(chip, isa.Cube, flat, nil, extents)
	st.Kind, st.Mixed, st.ActiveCores = isa.CoreInvalid, true, active
	st.CoreCycles = make([]int64, chip.CubeCores)
	var longest int64
	for _, a := range ais {
		st.CoreCycles[a.cube.index] = a.cube.cycles
		longest = max(longest, a.cube.cycles)
	}
	addCounters(st, sims)
	releaseBuffers(sims)
	st.FootprintRead, st.FootprintWritten = footprint(windows)
	if mem != nil {
		st.L2Hits, st.L2Misses, st.PrefetchedBytes, st.HBMBytesWritten = mem.hits, mem.misses, mem.prefetched, mem.hbmWritten
		st.HBMBytesRead = mem.hbmRead
		mem.release(key, keyed)
	}
	st.setTime(chip, longest)
	st.addGroupStartup(ais)
	return st, nil
}

// addGroupStartup is addStartup for a mixed task, per AI core: the largest start-up
// of its cores and the sum of their shared waits.
func (s *TaskStats) addGroupStartup(ais []*aiCore) {
	n := len(s.CoreCycles)
	s.CoreStartupCycles, s.CoreSharedWaitCycles = make([]int64, n), make([]int64, n)
	var most int64
	for _, a := range ais {
		for _, c := range append([]*coreSim{a.cube}, a.vector...) {
			s.CoreStartupCycles[a.cube.index] = max(s.CoreStartupCycles[a.cube.index], c.startupStall)
			s.CoreSharedWaitCycles[a.cube.index] += c.sharedWait
			s.SharedWaitCycles += c.sharedWait
			most = max(most, c.startupStall)
		}
	}
	s.StartupCycles = s.StartCycles + most
}

func groupSize(g Group) int {
	n := len(g.Vector)
	if g.Cube != nil {
		n++
	}
	return n
}

func newCoreSim(chip *Chip, kind isa.CoreKind, index int, gm []byte, opts RunOptions) *coreSim {
	return &coreSim{chip: chip, kind: kind, index: index, gm: gm, opts: opts, start: int64(chip.DispatchCycles + chip.CoreStartCycles)}
}

// addGroup advances the AI core's cores by a group's time: they start every group
// together.
func (a *aiCore) addGroup(length int64) {
	a.cube.addBlock(length)
	for _, v := range a.vector {
		v.addBlock(length)
	}
}

// setUpCrossCore delays the first group of an AI core by the set-up of its
// cross-core flags (Chip.CrossCoreSetupCycles), which its cores count as start-up.
func setUpCrossCore(runs []*blockRun) {
	for _, r := range runs {
		if s := int64(r.c.chip.CrossCoreSetupCycles); s > 0 && r.c.blocksDone == 0 {
			r.sc.t += s
			r.c.startupStall += s
		}
	}
}

// aiCore is one AI core: its cube core, its vector cores and the groups it runs.
type aiCore struct {
	cube   *coreSim
	vector []*coreSim
	jobs   []groupJob
}

// groupJob is a group and the flat index of its first block (for error locations).
type groupJob struct {
	g     Group
	first int
}

// size gives each core buffers for the largest extent its programs use.
func (a *aiCore) size(extents map[*MachineProgram]map[isa.Location]int) {
	grow := func(c *coreSim, m *MachineProgram) {
		for loc, n := range extents[m] {
			if n > len(c.bufs[loc]) {
				c.bufs[loc] = newBuffer(int(loc), n)
			}
		}
	}
	for _, j := range a.jobs {
		if j.g.Cube != nil {
			grow(a.cube, j.g.Cube.Prog)
		}
		for v, b := range j.g.Vector {
			grow(a.vector[v], b.Prog)
		}
	}
}

// run simulates the AI core's groups one after another.
func (a *aiCore) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &SimError{Core: a.cube.index, Block: -1, PC: -1, Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	for _, j := range a.jobs {
		if err := a.runGroup(j); err != nil {
			return err
		}
	}
	return nil
}

// runGroup runs one group's blocks together: each step starts, over all its cores,
// the instruction that can start first (ties by core order, cube first), so a queue
// instruction waits exactly as long as its partner core makes it.
func (a *aiCore) runGroup(j groupJob) error {
	q := newQueueSet()
	var runs []*blockRun
	bi := j.first
	if j.g.Cube != nil {
		runs = append(runs, newBlockRun(a.cube, bi, j.g.Cube, q))
		bi++
	}
	for v := range j.g.Vector {
		runs = append(runs, newBlockRun(a.vector[v], bi, &j.g.Vector[v], q))
		bi++
	}
	setUpCrossCore(runs)
	for {
		done := true
		for _, r := range runs {
			if err := r.issueAhead(); err != nil {
				return err
			}
			done = done && r.finished()
		}
		if done {
			break
		}
		var best *blockRun
		var bestDI int
		var bestStart int64
		for _, r := range runs {
			if di, st, ok := r.next(); ok && (best == nil || r.t0+st < best.t0+bestStart) {
				best, bestDI, bestStart = r, di, st
			}
		}
		if best == nil {
			for _, r := range runs {
				if !r.finished() {
					return r.deadlock()
				}
			}
		}
		if err := best.start(bestDI, bestStart); err != nil {
			return err
		}
	}
	var length int64
	for _, r := range runs {
		if err := r.finish(); err != nil {
			return err
		}
		length = max(length, r.length())
	}
	// The cores of an AI core start every group together.
	a.addGroup(length)
	return nil
}
