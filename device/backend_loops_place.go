package device

import (
	"cmp"
	"slices"

	"pypto/isa"
)

// Event ids and placement of the flags backend_loops.go plans.

// prune drops the syncs another sync of the same pair implies (one that sets at or
// after its set and waits at or before its wait), which mapping instructions inside
// inner loops to the loop's boundaries produces, and returns the rest ordered by
// wait position.
func prune(needs []syncNeed) []syncNeed {
	slices.SortStableFunc(needs, func(a, b syncNeed) int {
		return cmp.Or(cmp.Compare(a.consumer, b.consumer), cmp.Compare(b.producer, a.producer))
	})
	best := map[pipePair]int{} // latest set among the kept syncs so far, per pair
	out := needs[:0]
	for _, s := range needs {
		if m, ok := best[s.pair]; ok && m >= s.producer {
			continue
		}
		best[s.pair] = s.producer
		out = append(out, s)
	}
	return out
}

// pruneCarried is prune for loop-carried syncs.
func pruneCarried(cs []carriedSync) []carriedSync {
	needs := make([]syncNeed, len(cs))
	for k, c := range cs {
		needs[k] = syncNeed{pair: c.pair, producer: c.setAt, consumer: c.waitAt}
	}
	needs = prune(needs)
	out := make([]carriedSync, len(needs))
	for k, s := range needs {
		out[k] = carriedSync{pair: s.pair, setAt: s.producer, waitAt: s.consumer, primeAt: -1}
	}
	return out
}

// assign gives event ids to the syncs of one region (the body of lp, or the top
// level when lp is nil): its inner loops' carried syncs first, each its own id for
// the whole region, then the region's syncs, then recursively the inner loops. held
// lists the ids live across the whole region (enclosing loops' carried syncs and
// syncs that span the region's loop), lp's own carried syncs aside.
func (pl *flagPlanner) assign(lp *loopPlan, intra []syncNeed, inner []int, heldOuter map[pipePair][]int) error {
	held := heldOuter
	if lp != nil {
		held = withCarried(heldOuter, lp.carried)
	}
	reserved := union(pl.manual, held)
	for _, s := range inner {
		l := pl.loops[s]
		ids, ok := carriedIDs(pl.chip, reserved, l.carried)
		if !ok {
			if !l.bracketed {
				return errNoIDs
			}
			l.carried, l.barrier = nil, true
			continue
		}
		for k := range l.carried {
			l.carried[k].id = ids[k]
		}
		reserved = withCarried(reserved, l.carried)
	}
	if err := assignEventIDs(pl.chip, reserved, intra); err != nil {
		switch {
		case lp != nil && lp.bracketed && len(lp.carried) > 0:
			lp.carried, lp.barrier = nil, true
			return pl.assign(lp, intra, inner, heldOuter)
		case !pl.bracketAll:
			return errNoIDs
		}
		return err
	}
	for _, s := range inner {
		l := pl.loops[s]
		hl := held
		for _, o := range inner {
			if o != s {
				hl = withCarried(hl, pl.loops[o].carried)
			}
		}
		for _, n := range intra {
			if n.setAfter <= l.start && n.consumer > l.end {
				hl = union(hl, map[pipePair][]int{n.pair: {n.id}})
			}
		}
		if err := pl.assign(l, l.intra, l.inner, hl); err != nil {
			return err
		}
	}
	return nil
}

// carriedIDs gives each loop-carried sync its own id, avoiding the taken ones; ok is
// false when a pair runs out.
func carriedIDs(chip *Chip, taken map[pipePair][]int, carried []carriedSync) ([]int, bool) {
	taken = union(taken, nil)
	ids := make([]int, len(carried))
	for k, s := range carried {
		id := 0
		for id < chip.FlagEventIDs && slices.Contains(taken[s.pair], id) {
			id++
		}
		if id == chip.FlagEventIDs {
			return nil, false
		}
		ids[k] = id
		taken[s.pair] = append(taken[s.pair], id)
	}
	return ids, true
}

// union merges two per-pair id lists into a fresh map.
func union(a, b map[pipePair][]int) map[pipePair][]int {
	out := map[pipePair][]int{}
	for _, m := range []map[pipePair][]int{a, b} {
		for pp, ids := range m {
			for _, id := range ids {
				if !slices.Contains(out[pp], id) {
					out[pp] = append(out[pp], id)
				}
			}
		}
	}
	return out
}

// withCarried adds the ids of carried syncs to a per-pair id list.
func withCarried(held map[pipePair][]int, carried []carriedSync) map[pipePair][]int {
	add := map[pipePair][]int{}
	for _, s := range carried {
		add[s.pair] = append(add[s.pair], s.id)
	}
	return union(held, add)
}

// emit returns the program with its flags and barriers in place. Before a LOOP come
// the waits of entry syncs, then sets (priming sets, and sets an exhausted id pool
// moved there); after an ENDLOOP the draining waits, then the sets of exit syncs.
func (pl *flagPlanner) emit() []Instr {
	n := len(pl.ins)
	before, after := make([][]Instr, n), make([][]Instr, n)
	prelude, drains := make([][]Instr, n), make([][]Instr, n)
	place := func(needs []syncNeed) {
		for _, s := range needs {
			set := flagOp(isa.SET_FLAG, s.pair, s.id)
			if pl.ins[s.setAfter].Op == isa.LOOP {
				prelude[s.setAfter] = append(prelude[s.setAfter], set)
			} else {
				after[s.setAfter] = append(after[s.setAfter], set)
			}
			before[s.consumer] = append(before[s.consumer], flagOp(isa.WAIT_FLAG, s.pair, s.id))
		}
	}
	place(pl.top)
	for i := range pl.ins {
		lp := pl.loops[i]
		if lp == nil {
			continue
		}
		place(lp.intra)
		for _, c := range lp.carried {
			set, wait := flagOp(isa.SET_FLAG, c.pair, c.id), flagOp(isa.WAIT_FLAG, c.pair, c.id)
			after[c.setAt] = append(after[c.setAt], set)
			before[c.waitAt] = append(before[c.waitAt], wait)
			if c.primeAt < 0 {
				prelude[lp.start] = append(prelude[lp.start], set)
			} else {
				after[c.primeAt] = append(after[c.primeAt], set)
			}
			drains[lp.end] = append(drains[lp.end], wait)
		}
	}
	out := make([]Instr, 0, n+n/2)
	for i, in := range pl.ins {
		out = append(out, before[i]...)
		switch in.Op {
		case isa.LOOP:
			lp := pl.loops[i]
			if lp.bracketed {
				out = append(out, barrierInstr())
			}
			out = append(out, prelude[i]...)
			out = append(out, in)
			if lp.barrier {
				out = append(out, barrierInstr())
			}
		case isa.ENDLOOP:
			out = append(out, in)
			out = append(out, drains[i]...)
			if pl.loops[pl.within[i]].bracketed {
				out = append(out, barrierInstr())
			}
		default:
			out = append(out, in)
		}
		out = append(out, after[i]...)
	}
	return out
}
