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
		out[k] = carriedSync{pair: s.pair, setAt: s.producer, waitAt: s.consumer, primeAt: -1, drainAt: -1}
	}
	return out
}

// assign gives event ids to the syncs of one region (the body of lp, or the top
// level when lp is nil), then recursively to those of its inner loops. In the region
// an inner loop's carried sync is an interval from its priming set to its drain, and
// shares the ids with the region's syncs; inside the loop it holds its id throughout.
// heldOuter lists the ids live across the whole region (enclosing loops' carried
// syncs and syncs that span the region's loop), lp's own carried syncs aside.
func (pl *flagPlanner) assign(lp *loopPlan, intra []syncNeed, inner []int, heldOuter map[pipePair][]int) error {
	held, start := heldOuter, -1
	if lp != nil {
		held, start = withCarried(heldOuter, lp.carried), lp.start
	}
	type ref struct{ loop, k int } // k-th carried sync of loop; loop -1: intra[k]
	needs := make([]syncNeed, 0, len(intra))
	refs := make([]ref, 0, len(intra))
	for k, s := range intra {
		needs, refs = append(needs, s), append(refs, ref{-1, k})
	}
	prev := start // a priming set goes no earlier than the end of the previous loop
	for _, s := range inner {
		l := pl.loops[s]
		for k := range l.carried {
			c := &l.carried[k]
			at := l.start // a bracketed loop primes after its barrier
			if !l.bracketed {
				c.primeAt = max(c.primeAt, prev)
				at = c.primeAt
			}
			drain := l.end
			if c.drainAt >= 0 {
				drain = c.drainAt
			}
			needs = append(needs, syncNeed{pair: c.pair, producer: at, consumer: drain, fixed: true})
			refs = append(refs, ref{s, k})
		}
		prev = l.end
	}
	order := make([]int, len(needs))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(needs[a].consumer, needs[b].consumer) })
	sorted := make([]syncNeed, len(needs))
	for k, o := range order {
		sorted[k] = needs[o]
	}
	if err := assignEventIDs(pl.chip, union(pl.manual, held), sorted); err != nil {
		if !pl.bracketAll {
			return errNoIDs
		}
		// Bracketed loops give up their carried syncs for a barrier per iteration:
		// the inner ones first, then this one.
		dropped := false
		for _, s := range inner {
			if l := pl.loops[s]; len(l.carried) > 0 {
				l.carried, l.barrier, dropped = nil, true, true
			}
		}
		if !dropped && lp != nil && len(lp.carried) > 0 {
			lp.carried, lp.barrier, dropped = nil, true, true
		}
		if !dropped {
			return err
		}
		return pl.assign(lp, intra, inner, heldOuter)
	}
	for k, o := range order {
		r := refs[o]
		if r.loop < 0 {
			intra[r.k] = sorted[k]
		} else {
			pl.loops[r.loop].carried[r.k].id = sorted[k].id
		}
	}
	for _, s := range inner {
		l := pl.loops[s]
		hl := held
		for _, n := range sorted {
			if n.setAfter <= l.start && n.consumer >= l.end {
				hl = union(hl, map[pipePair][]int{n.pair: {n.id}})
			}
		}
		if err := pl.assign(l, l.intra, l.inner, hl); err != nil {
			return err
		}
	}
	return nil
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
// the waits of entry syncs, then sets an exhausted id pool moved there (and a
// bracketed loop's priming sets); after an ENDLOOP the draining waits, then the sets
// of exit syncs. A priming set goes right after the producers it orders, or with
// none as early as its id allows: at the start of the region around its loop or
// after the loop before it.
func (pl *flagPlanner) emit() []Instr {
	n := len(pl.ins)
	before, after := make([][]Instr, n), make([][]Instr, n)
	prelude, drains := make([][]Instr, n), make([][]Instr, n)
	var head []Instr // sets at the start of the program
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
			switch {
			case lp.bracketed:
				prelude[lp.start] = append(prelude[lp.start], set)
			case c.primeAt >= 0:
				after[c.primeAt] = append(after[c.primeAt], set)
			default: // at the start of the program
				head = append(head, set)
			}
			if c.drainAt >= 0 {
				before[c.drainAt] = append(before[c.drainAt], wait)
			} else {
				drains[lp.end] = append(drains[lp.end], wait)
			}
		}
	}
	out := make([]Instr, 0, n+n/2)
	out = append(out, head...)
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
