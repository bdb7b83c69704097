package device

import (
	"fmt"

	"pypto/isa"
)

// Race detection. Pipes run in parallel, so two conflicting accesses (RAW, WAR, WAW on
// overlapping bytes) on different pipes are ordered only by synchronisation: a
// SET_FLAG / WAIT_FLAG chain or a TSYNC all. The hardware does not check this; a
// missing flag makes a kernel read stale data only under some timings. The simulator
// checks it independently of timing, with the happens-before relation the
// synchronisation instructions define, so a missing flag is reported even when the
// simulated timing happens to order the two instructions.
//
// Vector clocks over per-pipe sequence numbers: known[p][q] = k means the first k
// instructions of pipe q (in issue order) happen before whatever pipe p starts next.
// An instruction of pipe p knows every earlier instruction of p (pipes are in order)
// and every scalar-pipe instruction executed before it was issued;
// a SET_FLAG carries its pipe's knowledge, the WAIT_FLAG that consumes it joins it;
// a TSYNC all makes everything issued before it known to every pipe. When an
// instruction starts, every conflicting instruction before it in issue order on
// another pipe must be known complete.

// raceEntry is one issued data instruction of a pipe.
type raceEntry struct {
	seq   int // sequence number among its pipe's instructions
	order int // position in the block's issue order
	pc    int
	acc   accessSet
}

type raceChecker struct {
	// off skips the checks of a program already found race-free (program_cache.go):
	// instructions are still numbered, nothing else is kept.
	off      bool
	known    [numPipes]vclock
	issued   [numPipes]int         // instructions issued per pipe so far
	accessed [numPipes]bool        // whether the pipe has issued an instruction that touches memory
	hist     [numPipes][]raceEntry // per pipe, data instructions in issue order not yet known to every pipe
}

// maxHistory bounds the remembered accesses of one pipe. A pipe that keeps accessing
// memory while another never synchronises with it (or has not accessed memory yet)
// would otherwise make the history grow with the trip count of a loop; beyond the
// bound the oldest accesses are forgotten, so a race with an access that long ago can
// go unreported.
const maxHistory = 1 << 16

// issue assigns the next sequence number of pipe p to an instruction and, for a data
// instruction, remembers what it accesses.
func (r *raceChecker) issue(p isa.Pipe, order, pc int, acc accessSet) int {
	seq := r.issued[p]
	r.issued[p]++
	if !r.off && !acc.empty() {
		r.hist[p] = append(r.hist[p], raceEntry{seq: seq, order: order, pc: pc, acc: acc})
		r.accessed[p] = true
	}
	return seq
}

// barrier records a TSYNC all: everything issued so far is complete for every pipe.
func (r *raceChecker) barrier() {
	if r.off {
		return
	}
	for p := range r.known {
		for q := range r.known[p] {
			r.known[p][q] = max(r.known[p][q], r.issued[q])
		}
	}
	for q := range r.hist {
		r.hist[q] = r.hist[q][:0]
	}
}

// snapshot is the knowledge a SET_FLAG at sequence number seq of pipe p carries:
// everything p knew, and every earlier instruction of p itself.
func (r *raceChecker) snapshot(p isa.Pipe, seq int) vclock {
	if r.off {
		return vclock{}
	}
	s := r.known[p]
	s[p] = max(s[p], seq)
	return s
}

// join records a WAIT_FLAG on pipe p consuming a set that carried k.
func (r *raceChecker) join(p isa.Pipe, k vclock) {
	if !r.off {
		r.known[p].join(k)
	}
}

// start checks the instruction at sequence number seq of pipe p (position order in
// issue order) as it starts. sSeen is the number of scalar-pipe instructions executed
// before it was issued: those execute at issue, so they are complete. It returns the
// earlier conflicting instruction of another pipe that is not known complete, if any.
func (r *raceChecker) start(p isa.Pipe, seq, sSeen, order int, acc accessSet) (other raceEntry, otherPipe isa.Pipe, raced bool) {
	if r.off {
		return raceEntry{}, 0, false
	}
	r.known[p][p] = max(r.known[p][p], seq)
	r.known[p][isa.PipeS] = max(r.known[p][isa.PipeS], sSeen)
	if acc.empty() {
		return raceEntry{}, 0, false
	}
	for q := range r.hist {
		if isa.Pipe(q) == p {
			continue
		}
		h := r.hist[q]
		i := firstSeq(h, r.known[p][q])
		for _, e := range h[i:] {
			if e.order > order {
				break
			}
			if e.acc.conflicts(acc) || acc.conflicts(e.acc) {
				return e, isa.Pipe(q), true
			}
		}
	}
	r.trim()
	return raceEntry{}, 0, false
}

// trim drops history every pipe already knows complete, so a long block keeps only
// the instructions still in flight.
func (r *raceChecker) trim() {
	for q := range r.hist {
		h := r.hist[q]
		if len(h) < 64 {
			continue
		}
		// Only pipes that touch memory can conflict; one that has not yet is assumed
		// to synchronise before it does (the flag inserter makes it).
		least := r.issued[q]
		for p := range r.known {
			if p != q && r.accessed[p] {
				least = min(least, r.known[p][q])
			}
		}
		i := firstSeq(h, least)
		if len(h)-i > maxHistory {
			i = len(h) - maxHistory/2
		}
		if i > len(h)/2 {
			r.hist[q] = append(h[:0], h[i:]...)
		}
	}
}

// firstSeq is the index of the first entry of h with sequence number >= k.
func firstSeq(h []raceEntry, k int) int {
	lo, hi := 0, len(h)
	for lo < hi {
		m := (lo + hi) / 2
		if h[m].seq < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// raceMessage explains a race for the error that names the later instruction.
func raceMessage(m *MachineProgram, other raceEntry, q, p isa.Pipe) string {
	return fmt.Sprintf("race: conflicts with pc %d (%s) on pipe %s, which no flag or barrier orders before it (a set_flag %s, %s / wait_flag pair is missing)",
		other.pc, m.InstrString(other.pc), q, q, p)
}
