package device

import (
	"fmt"
	"strings"

	"pypto/internal/interrupt"
	"pypto/isa"
)

// The scalar unit of a core: it runs the program's control flow (counted loops),
// keeps the registers, executes the scalar-pipe instructions and issues the others to
// their pipes, resolving the registers their operands name (GM offsets and sizes,
// valid sizes) at the moment it issues them. Registers are written only by
// scalar-pipe instructions, which execute in issue order, so the values an issued
// instruction sees are those of program order.

// defaultMaxInstructions bounds the instructions one block executes when RunOptions
// sets no bound, so that a huge trip count fails instead of running for ever.
const defaultMaxInstructions = 1 << 26

type scalarUnit struct {
	pc    int
	t     int64 // the scalar pipe's time: when the next instruction issues
	regs  []int64
	loops []scalarLoop
	steps int64
	// fetched is steps+1 once the instruction at pc has been fetched (issue may wait
	// and retry; the fetch is paid once).
	fetched int64
}

// scalarLoop is one open loop: its LOOP's pc, counter register, trip count and the
// iterations done.
type scalarLoop struct {
	start, counter int
	count, iter    int64
}

// issueOne runs the scalar unit for one instruction: it issues it to its pipe's
// queue or, for a scalar-pipe instruction, executes it. It reports false when the
// program has ended or issue must wait: for a slot in a full pipe queue, at a TSYNC
// all while issued instructions are unfinished, or at a WAIT_FLAG on the scalar pipe
// whose event is not yet set.
func (r *blockRun) issueOne() (bool, error) {
	if r.sc.pc >= len(r.m.Instrs) {
		return false, nil
	}
	limit := r.c.opts.MaxInstructions
	if limit <= 0 {
		limit = defaultMaxInstructions
	}
	pc := r.sc.pc
	in := &r.m.Instrs[pc]
	if r.sc.steps >= limit {
		e := r.fail(pc, "kernel %s exceeds its budget of %d executed instructions%s (RunOptions.MaxInstructions)", r.m.Name, limit, r.openLoops())
		e.(*SimError).Err = ErrBudget
		return false, e
	}
	if r.sc.steps%interrupt.PollEvery == interrupt.PollEvery-1 && interrupt.Requested(r.c.opts.Interrupt) {
		return false, r.fail(pc, "kernel %s interrupted after %d executed instructions%s", r.m.Name, r.sc.steps, r.openLoops())
	}
	if int(in.Pipe) <= 0 || int(in.Pipe) >= numPipes || in.Pipe == isa.PipeAll {
		return false, r.fail(pc, "instruction has no pipe")
	}
	r.pause(pc)
	if r.sc.fetched != r.sc.steps+1 {
		r.sc.t += r.c.fetch(r.m, pc)
		r.sc.fetched = r.sc.steps + 1
	}
	if in.Pipe != isa.PipeS {
		if q := r.queues[in.Pipe]; len(q)-r.heads[in.Pipe] >= r.c.chip.IssueQueueDepth {
			return false, nil // the pipe's queue is full: wait until its head starts
		}
		res := in
		if !r.info.static[pc] {
			scratch := &r.resolved // executed at once: nothing keeps it
			if !r.c.opts.Functional {
				scratch = r.takeInstr() // queued: it lives until it starts
			}
			var err error
			if res, err = r.resolve(in, scratch); err != nil {
				return false, r.fail(pc, "%v", err)
			}
		}
		// A slot freed when the instruction that held it started.
		r.sc.t = max(r.sc.t, r.lastStart[in.Pipe]) + int64(r.c.chip.IssueCycles)
		if r.c.opts.Functional {
			if err := r.runNow(pc, res); err != nil {
				return false, err
			}
		} else {
			r.enqueue(pc, res)
		}
		r.sc.steps++
		r.sc.pc++
		return true, nil
	}
	start := r.sc.t
	next := pc + 1
	switch in.Op {
	case isa.TSYNC:
		if r.done < r.issued {
			return false, nil // a full barrier waits for everything issued before it
		}
		r.sc.t = max(r.sc.t+int64(r.c.chip.IssueCycles), r.maxEnd)
		start = r.sc.t
		r.races.barrier()
	case isa.WAIT_FLAG:
		q := r.sems.pending(pc)
		if len(q) == 0 {
			return false, nil // the scalar unit stalls until the event is set
		}
		r.sc.t = max(r.sc.t+int64(r.c.chip.IssueCycles), q[0].at)
		start = r.sc.t
		seq := r.races.issue(isa.PipeS, r.issued, pc, accessSet{})
		r.races.start(isa.PipeS, seq, seq, r.issued, accessSet{})
		r.races.join(isa.PipeS, q[0].known)
		r.sems.pop(pc)
		r.nextAt.valid = false
	case isa.SET_FLAG:
		r.sc.t += int64(r.c.chip.IssueCycles)
		seq := r.races.issue(isa.PipeS, r.issued, pc, accessSet{})
		r.races.start(isa.PipeS, seq, seq, r.issued, accessSet{})
		r.nextAt.valid = false
		r.sems.push(pc, semEntry{at: r.sc.t + int64(r.c.chip.FlagLatencyCycles), pc: pc, known: r.races.snapshot(isa.PipeS, seq)})
	case isa.LOOP, isa.ENDLOOP:
		r.sc.t += int64(r.c.chip.IssueCycles)
		var err error
		if next, err = r.control(pc, in); err != nil {
			return false, r.fail(pc, "%v", err)
		}
	default:
		res, acc := in, r.info.access(pc)
		if !r.info.static[pc] {
			var err error
			if res, err = r.resolve(in, &r.resolved); err != nil {
				return false, r.fail(pc, "%v", err)
			}
			if !r.races.off {
				acc = r.spans.accesses(res)
			}
		}
		seq := r.races.issue(isa.PipeS, r.issued, pc, acc)
		if other, q, raced := r.races.start(isa.PipeS, seq, seq, r.issued, acc); raced {
			return false, r.failSync(pc, "%s", raceMessage(r.m, other, q, isa.PipeS))
		}
		r.sc.t += int64(r.c.chip.IssueCycles) + r.c.chip.duration(res)
		r.x.now, r.x.end = start, r.sc.t
		if err := r.c.execRecovering(&r.x, res); err != nil {
			return false, r.fail(pc, "%v", err)
		}
	}
	r.c.busy[isa.PipeS] += r.sc.t - start
	r.record(pc, isa.PipeS, start, r.sc.t, r.sc.t, 0)
	r.sc.steps++
	r.sc.pc = next
	return true, nil
}

// issueAhead issues until the scalar unit's time passes the earliest start any
// issued instruction can have, or issue cannot go on. Instructions issued later start
// later than that (no earlier than their issue), so the next instruction to start is
// among the issued ones: issuing lazily gives the same times as issuing everything at
// once, and keeps only the instructions in flight in memory.
func (r *blockRun) issueAhead() error {
	for {
		if _, st, ok := r.next(); ok && r.sc.t > st {
			return nil
		}
		progressed, err := r.issueOne()
		if err != nil || !progressed {
			return err
		}
	}
}

// control executes LOOP and ENDLOOP and returns the next pc. A LOOP reads its count
// once; a count of 0 skips the body; after the loop the counter equals the count.
func (r *blockRun) control(pc int, in *Instr) (int, error) {
	if in.Match < 0 || in.Match >= len(r.m.Instrs) {
		return 0, fmt.Errorf("%s has no matching %s", in.Op, map[isa.Opcode]string{isa.LOOP: "endloop", isa.ENDLOOP: "loop"}[in.Op])
	}
	sc := &r.sc
	if in.Op == isa.LOOP {
		count, err := r.scalar(in.Args[1])
		if err != nil {
			return 0, err
		}
		if count < 0 {
			return 0, fmt.Errorf("loop count %d is negative", count)
		}
		counter := in.Args[0].Reg
		if counter < 0 || counter >= len(sc.regs) {
			return 0, fmt.Errorf("loop counter names register %d; the program has %d", counter, len(sc.regs))
		}
		sc.regs[counter] = 0
		if count == 0 {
			return in.Match + 1, nil
		}
		sc.loops = append(sc.loops, scalarLoop{start: pc, counter: counter, count: count})
		return pc + 1, nil
	}
	if len(sc.loops) == 0 || sc.loops[len(sc.loops)-1].start != in.Match {
		return 0, fmt.Errorf("endloop does not close the innermost open loop")
	}
	f := &sc.loops[len(sc.loops)-1]
	f.iter++
	sc.regs[f.counter] = f.iter
	if f.iter < f.count {
		return f.start + 1, nil
	}
	sc.loops = sc.loops[:len(sc.loops)-1]
	return pc + 1, nil
}

// scalar is the value of a register or integer-immediate operand.
func (r *blockRun) scalar(o Operand) (int64, error) {
	if o.Kind == isa.KindReg {
		return r.reg(isa.UseReg(o.Reg))
	}
	return int64(o.Imm), nil
}

func (r *blockRun) reg(ref isa.RegRef) (int64, error) {
	i, ok := ref.Index()
	if !ok || i >= len(r.sc.regs) {
		return 0, fmt.Errorf("names register %d; the program has %d", i, len(r.sc.regs))
	}
	return r.sc.regs[i], nil
}

// resolve returns in, which names registers (movedByRegister), with their current
// values in its operands, in scratch (its operands reusing scratch's memory): an
// instruction executed at once needs no memory of its own, which a long loop would
// allocate per iteration, and a queued one takes a copy the core reuses once it has
// started (blockRun.takeInstr).
func (r *blockRun) resolve(in *Instr, out *Instr) (*Instr, error) {
	args := out.Args[:0]
	*out = *in
	out.Args = append(args, in.Args...)
	for i := range out.Args {
		a := &out.Args[i]
		var err error
		switch a.Kind {
		case isa.KindTile:
			if a.ValidRows, err = r.size(a.ValidRowsReg, a.ValidRows, a.Rows, "valid rows"); err != nil {
				return nil, err
			}
			if a.ValidCols, err = r.size(a.ValidColsReg, a.ValidCols, a.Cols, "valid cols"); err != nil {
				return nil, err
			}
			a.ValidRowsReg, a.ValidColsReg = 0, 0
		case isa.KindGM:
			v := &a.GM
			moved := v.OffsetReg != 0
			if moved {
				off, err := r.reg(v.OffsetReg)
				if err != nil {
					return nil, err
				}
				v.Offset += int(off)
				v.OffsetReg = 0
			}
			if v.Rows, err = r.size(v.RowsReg, v.Rows, v.Rows, "view rows"); err != nil {
				return nil, err
			}
			if v.Cols, err = r.size(v.ColsReg, v.Cols, v.Cols, "view cols"); err != nil {
				return nil, err
			}
			v.RowsReg, v.ColsReg = 0, 0
			if moved && in.Op != isa.TPREFETCH {
				// RunTask's cross-block check sees only static windows; this one is
				// known now. Bounds are checked when it executes.
				if msg := checkView(r.m.Params, *v); msg != "" {
					return nil, fmt.Errorf("%s", msg)
				}
				r.c.recordMoved(movedWindow{r.bi, r.blk.ParamAddrs[v.Param], a.DType.Size(), *v, writesGM(in.Op, i)}, r.sc.pc)
			}
		}
	}
	return out, nil
}

// recordMoved adds the byte runs of a moved window to the core's dynGM the first time
// the window runs in a block (pc: where); a window continuing the last one of its
// param and kind to the right extends that one's runs instead (the cross-block check
// merges touching intervals the same way), and one continuing it downwards joins it,
// so that a later window continuing the joined one to the right extends both.
func (c *coreSim) recordMoved(w movedWindow, pc int) {
	if c.noMoved {
		return
	}
	if c.dynSeen == nil || w.block != c.endBlock {
		// Blocks run one after another, and a block's intervals extend only its own.
		if c.dynSeen == nil {
			c.dynSeen = map[movedWindow]bool{}
		}
		clear(c.dynSeen)
		clear(c.dynLast)
		c.endBlock = w.block
	}
	if c.dynSeen[w] {
		return
	}
	c.dynSeen[w] = true
	slot := 2 * w.view.Param
	if w.write {
		slot++
	}
	if slot >= len(c.dynLast) {
		c.dynLast = append(c.dynLast, make([]lastWindow, slot+1-len(c.dynLast))...)
	}
	last, v := &c.dynLast[slot], w.view
	if v.ColStride == 1 && (v.RowStride == v.Cols || v.Rows == 1) && v.Rows > 0 && v.Cols > 0 {
		// One contiguous run: recorded as one row, so that a window continuing it
		// (the next tile of a stream) extends it.
		v = isa.GMView{Param: v.Param, Offset: v.Offset, Rows: 1, Cols: v.Rows * v.Cols, RowStride: contiguousStride, ColStride: 1}
	}
	rowRuns := v.ColStride == 1 && v.RowStride > 0 && v.Rows > 0 && v.Cols > 0 // one run per row, in order
	if last.ok && rowRuns && w.size == last.size && v.RowStride == last.rowStride {
		if c.extendRight(last, v, w.base) {
			return
		}
		if v.Offset == last.offset+last.rows*v.RowStride && last.first+last.rows == len(c.dynGM) {
			// The window continues downwards and its rows follow the last's in dynGM.
			c.dynGM = appendViewIntervals(c.dynGM, v, w.size, w.base, w.block, pc, w.write)
			last.rows += v.Rows
			return
		}
	}
	*last = lastWindow{offset: v.Offset, rows: v.Rows, rowStride: v.RowStride, size: w.size, first: len(c.dynGM), ok: rowRuns}
	c.dynGM = appendViewIntervals(c.dynGM, v, w.size, w.base, w.block, pc, w.write)
}

// contiguousStride is the row stride recordMoved gives a contiguous window it records
// as one row: larger than any GM offset, so that no window continues it downwards
// and every window of the kind continues it (or not) to the right.
const contiguousStride = 1 << 48

// extendRight extends the runs of last's rows that window v (one run per row, last's
// row stride) continues to the right, if its every row starts where such a run ends.
func (c *coreSim) extendRight(last *lastWindow, v isa.GMView, base int) bool {
	r0 := (v.Offset - last.offset) / v.RowStride
	if v.Offset < last.offset || r0+v.Rows > last.rows {
		return false
	}
	runs := c.dynGM[last.first+r0 : last.first+r0+v.Rows]
	for r := range runs {
		if runs[r].hi != base+(v.Offset+r*v.RowStride)*last.size {
			return false
		}
	}
	for r := range runs {
		runs[r].hi += v.Cols * last.size
	}
	return true
}

// size is a dimension given by register ref (or n when none), which must lie in
// [0, bound].
func (r *blockRun) size(ref isa.RegRef, n, bound int, what string) (int, error) {
	if ref == 0 {
		return n, nil
	}
	v, err := r.reg(ref)
	if err != nil {
		return 0, err
	}
	if v < 0 || v > int64(bound) {
		return 0, fmt.Errorf("%s %d from %s lie outside [0, %d]", what, v, r.m.regName(ref), bound)
	}
	return int(v), nil
}

// openLoops names the loops the scalar unit is in, innermost first, with the
// iteration each has reached: where a run that does not end spends its time.
func (r *blockRun) openLoops() string {
	var b strings.Builder
	for i := len(r.sc.loops) - 1; i >= 0; i-- {
		l := r.sc.loops[i]
		if i == len(r.sc.loops)-1 {
			b.WriteString(" in ")
		} else {
			b.WriteString(", inside ")
		}
		fmt.Fprintf(&b, "the loop at pc %d (%s), at iteration %d of %d", l.start, r.m.InstrString(l.start), l.iter+1, l.count)
	}
	return b.String()
}
