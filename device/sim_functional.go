package device

import "pypto/isa"

// runNow executes an issued pipe instruction at once, in program order: the
// functional mode (RunOptions.Functional). No pipe queues, no start times, no race
// checks: for a program whose flags are right, program order computes what any
// flag-respecting order computes, which the timed runs check. Flags are still
// counted (a SET_FLAG adds an event, a WAIT_FLAG consumes one if there is one), so a
// WAIT_FLAG on the scalar pipe finds its event.
func (r *blockRun) runNow(pc int, in *Instr) error {
	r.c.instrs++
	switch in.Op {
	case isa.SET_FLAG:
		r.sems.push(pc, semEntry{pc: pc})
		return nil
	case isa.WAIT_FLAG:
		if len(r.sems.pending(pc)) > 0 {
			r.sems.pop(pc)
		}
		return nil
	}
	r.x.now, r.x.end = r.sc.t, r.sc.t
	if err := r.c.execRecovering(&r.x, in); err != nil {
		return r.fail(pc, "%v", err)
	}
	return nil
}
