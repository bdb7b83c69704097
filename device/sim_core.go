package device

import (
	"fmt"
	"sort"
	"strings"

	"pypto/isa"
)

// coreSim is one simulated core: its buffers, scratch space for the kernels and the
// counters it reports. A core runs its blocks one after another; cores run in
// parallel goroutines and share only GM (blocks of one task write disjoint GM).
type coreSim struct {
	chip  *Chip
	index int
	gm    []byte
	bufs  [isa.NumLocations][]byte
	opts  RunOptions
	start int64 // task time at which this core starts (after the launch overhead)

	fa, fb, fc []float32
	ia, ib, id []int64
	ic         []int32
	tmp        []byte

	cycles                    int64
	busy                      [numPipes]int64
	gmRead, gmWritten, instrs int64
	trace                     []TraceEvent
}

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
	in    *Instr // the instruction as issued
	issue int64  // when the scalar pipe issued it
	seq   int    // its position among its pipe's issued instructions
	acc   accessSet
}

// runBlock simulates one block from the core's current time and advances it.
//
// It is a discrete-event simulation of the core's pipes. The scalar pipe issues
// instructions in program order, IssueCycles apart, into per-pipe in-order queues
// (unbounded: issue never stalls on a full queue), except that a TSYNC all stops issue
// until everything issued before it has finished. Each step starts, among the
// instructions at the heads of the queues that can start, the one with the earliest
// start time (ties by issue order): start = max(pipe free, issue time, and for a
// WAIT_FLAG the time its event became visible). Values are computed at that moment, so
// they follow the simulated order, not program order; the race checker (sim_race.go)
// makes sure that is the same thing. Start times never decrease, so the order is a
// valid execution of the pipes. When no head can start and work is left, the block is
// deadlocked, which is reported instead of hanging.
func (c *coreSim) runBlock(bi int, blk *Block) error {
	m := blk.Prog
	n := len(m.Instrs)
	fail := func(pc int, format string, args ...any) error {
		e := &SimError{Core: c.index, Block: bi, PC: pc, Msg: fmt.Sprintf(format, args...)}
		if pc >= 0 {
			e.Instr = m.InstrString(pc)
		}
		return e
	}
	var (
		dyn     []dynInstr // issued instructions, in issue order
		races   raceChecker
		queues  [numPipes][]int // indices into dyn
		heads   [numPipes]int
		free    [numPipes]int64
		sems    = map[flagKey][]semEntry{}
		next    int   // next pc to issue
		scalarT int64 // scalar pipe's time
		done    int   // instructions finished (or started: starting fixes the end)
		maxEnd  int64
	)
	t0 := c.start + c.cycles
	record := func(pc int, p isa.Pipe, start, end int64) {
		c.instrs++
		if c.opts.Trace {
			c.trace = append(c.trace, TraceEvent{Core: c.index, Block: bi, PC: pc, Pipe: p, Op: m.Instrs[pc].Op, Start: t0 + start, End: t0 + end})
		}
	}
	for next < n || done < len(dyn) {
		for next < n {
			in := &m.Instrs[next]
			if in.Op == isa.TSYNC && in.Pipe == isa.PipeS {
				if done < len(dyn) {
					break // a full barrier waits for everything issued before it
				}
				scalarT = max(scalarT+int64(c.chip.IssueCycles), maxEnd)
				races.barrier()
				record(next, isa.PipeS, scalarT, scalarT)
				next++
				continue
			}
			if int(in.Pipe) <= 0 || int(in.Pipe) >= numPipes {
				return fail(next, "instruction has no pipe")
			}
			scalarT += int64(c.chip.IssueCycles)
			d := dynInstr{pc: next, in: in, issue: scalarT, acc: accesses(*in)}
			d.seq = races.issue(in.Pipe, len(dyn), next, d.acc)
			queues[in.Pipe] = append(queues[in.Pipe], len(dyn))
			dyn = append(dyn, d)
			next++
		}
		if done == len(dyn) {
			continue // a barrier was waiting for the last issued instruction
		}
		best, bestStart := -1, int64(0)
		for p := range queues {
			if heads[p] >= len(queues[p]) {
				continue
			}
			di := queues[p][heads[p]]
			d := &dyn[di]
			start := max(free[p], d.issue)
			if d.in.Op == isa.WAIT_FLAG {
				q := sems[flagKeyOf(d.in)]
				if len(q) == 0 {
					continue
				}
				start = max(start, q[0].at)
			}
			if best < 0 || start < bestStart || (start == bestStart && di < best) {
				best, bestStart = di, start
			}
		}
		if best < 0 {
			return c.deadlock(m, dyn, queues, heads, fail)
		}
		d := &dyn[best]
		in := d.in
		if other, q, raced := races.start(in.Pipe, d.seq, best, d.acc); raced {
			return fail(d.pc, "%s", raceMessage(m, other, q, in.Pipe))
		}
		if err := c.execRecovering(m, blk, in); err != nil {
			return fail(d.pc, "%v", err)
		}
		end := bestStart + c.chip.duration(in)
		switch in.Op {
		case isa.SET_FLAG:
			k := flagKeyOf(in)
			sems[k] = append(sems[k], semEntry{at: bestStart + int64(c.chip.FlagLatencyCycles), pc: d.pc, known: races.snapshot(in.Pipe, d.seq)})
		case isa.WAIT_FLAG:
			k := flagKeyOf(in)
			races.join(in.Pipe, sems[k][0].known)
			sems[k] = sems[k][1:]
		}
		p := in.Pipe
		free[p] = end
		c.busy[p] += end - bestStart
		maxEnd = max(maxEnd, end)
		heads[p]++
		done++
		record(d.pc, p, bestStart, end)
	}
	// A set nobody waited for would leak into the next block on real hardware.
	var leaked []int
	for _, q := range sems {
		for _, e := range q {
			leaked = append(leaked, e.pc)
		}
	}
	if len(leaked) > 0 {
		sort.Ints(leaked)
		return fail(leaked[0], "set_flag is never consumed by a wait_flag (%d unconsumed set(s) at block end)", len(leaked))
	}
	c.cycles += max(maxEnd, scalarT)
	return nil
}

// execRecovering runs the functional part of an instruction, turning a panic from a
// malformed machine program into an error located at the instruction.
func (c *coreSim) execRecovering(m *MachineProgram, blk *Block, in *Instr) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return c.exec(&execCtx{m: m, blk: blk}, in)
}

// deadlock reports every pipe stuck on a wait whose event cannot come any more.
func (c *coreSim) deadlock(m *MachineProgram, dyn []dynInstr, queues [numPipes][]int, heads [numPipes]int, fail func(int, string, ...any) error) error {
	var stuck []int
	for p := range queues {
		if heads[p] < len(queues[p]) {
			stuck = append(stuck, dyn[queues[p][heads[p]]].pc)
		}
	}
	if len(stuck) == 0 {
		return fail(-1, "deadlock: nothing can run but the block is not finished")
	}
	sort.Ints(stuck)
	others := make([]string, 0, len(stuck))
	for _, pc := range stuck[1:] {
		others = append(others, fmt.Sprintf("pc %d (%s)", pc, m.InstrString(pc)))
	}
	msg := "deadlock: wait_flag can never be satisfied (no set_flag for its event is left to run)"
	if len(others) > 0 {
		msg += "; also blocked: " + strings.Join(others, ", ")
	}
	return fail(stuck[0], "%s", msg)
}

func flagKeyOf(in *Instr) flagKey {
	return flagKey{pipePair{in.Args[0].Pipe, in.Args[1].Pipe}, int(in.Args[2].Imm)}
}
