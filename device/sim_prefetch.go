package device

import "pypto/isa"

// A prefetch of a task's first loads into L2 (RunOptions.PrefetchBytes): the runtime
// knows a task's arguments when it dispatches it, and once the task's inputs are
// complete it can have the L2 fetch the lines the cores will load first while the
// task launches (dispatch, core start, prologue), so that those loads hit instead of
// waiting for HBM. The runtime gives the task as many bytes as HBM moves in that time
// (lower.Runtime.PrefetchL2); each core takes an equal share for the loads of its
// first block, in the order the block issues them, of the params the block does not
// write (their bytes are complete before the task starts). The prefetched bytes cross
// HBM before the task's timeline begins, so they take none of its bandwidth calendar;
// TaskStats.PrefetchedBytes counts them.

// prefetches reports whether a TLOAD of param by run r may find its lines prefetched:
// the core still runs its first block, has prefetch left, and the block's program
// does not store into the param.
func (m *memSystem) prefetches(r *blockRun, param int) bool {
	c := r.c
	if c.prefetchLeft <= 0 || c.cycles != 0 {
		return false
	}
	w, ok := m.written[r.m]
	if !ok {
		w = make([]bool, len(r.m.Params))
		for pc := range r.m.Instrs {
			in := &r.m.Instrs[pc]
			for gi, o := range in.Args {
				if o.Kind == isa.KindGM && writesGM(in.Op, gi) && o.GM.Param >= 0 && o.GM.Param < len(w) {
					w[o.GM.Param] = true
				}
			}
		}
		if m.written == nil {
			m.written = map[*MachineProgram][]bool{}
		}
		m.written[r.m] = w
	}
	return param >= 0 && param < len(w) && !w[param]
}
