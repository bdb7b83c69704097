package device

import (
	"errors"
	"fmt"
	"slices"

	"pypto/isa"
)

// Flag insertion with loops. A loop body runs many times from one copy of code, so
// its flags must be right for every iteration, and hazards cross the loop's
// boundaries in three ways: from the code before the loop into the body (entry),
// from one iteration into the next (loop-carried, e.g. a load that overwrites a tile
// the previous iteration's vector instructions still read) and from the body into
// the code after the loop (exit). The scheme synchronises all three with flags, so a
// loop costs what the same instructions unrolled cost:
//
//   - A loop body is analysed by the straight-line analysis (findSyncs) as two
//     consecutive copies B1 B2, every inner loop expanded to one copy of its body.
//     Syncs inside B1 are the per-iteration syncs; syncs from B1 into B2 are the
//     loop-carried ones. Access sets are static (tile addresses are fixed,
//     register-moved GM views cover their whole param), so a hazard between
//     iterations k-2 and k implies the same hazard between k-1 and k, which B1 -> B2
//     finds; two copies are enough.
//   - The region around a loop (the program, or the body of an enclosing loop) is
//     analysed with the loop expanded to one copy of its body, standing for its first
//     iteration (entry hazards) and its last (exit hazards); an instruction of a later
//     iteration has the same accesses on the same in-order pipe, so ordering the
//     first (last) one orders all. Syncs with both ends in the loop are the loop's own.
//   - A loop-carried sync Q -> P keeps the straight-line placement in the body (set
//     after its producer, wait before its consumer), plus a priming SET_FLAG before
//     the loop that the first iteration's wait consumes and a draining WAIT_FLAG after
//     the ENDLOOP that consumes the last iteration's set. Every (pair, id) thus
//     alternates set, wait. The priming set goes as early as its id allows (at the
//     start of the region around the loop, or after the loop before it), so that it
//     orders nothing the first iteration does not need.
//   - Entry syncs: a hazard from X before the loop (pipe Q) to C in the body (pipe P)
//     needs no flag of its own when a carried sync Q -> P of the loop waits at or
//     before C in the body: its priming set moves to just after X, and the first
//     iteration's wait orders X before C. Otherwise the wait goes before the LOOP.
//   - Exit syncs: a hazard from Y in the body (Q) to D after the loop (P) needs no
//     flag of its own when a carried sync Q -> P of the loop sets at or after Y: its
//     drain (on P, after the ENDLOOP) already orders the last Y before D. Otherwise
//     the set goes after the ENDLOOP.
//     Both also look through nested loops: a carried sync of an inner loop around X
//     or Y serves the same way.
//   - Event ids: in the region around its loop a loop-carried sync holds its id from
//     its priming set to its drain, beside the region's own syncs; the syncs inside
//     the loop avoid the ids of those and of the region's syncs that span the loop.
//
// The analysis of a loop as its first and last iteration holds for loops that run at
// least once. A loop whose trip count is not a positive constant (a register: it may
// be zero) is bracketed instead: TSYNC all before LOOP and after ENDLOOP, paid once
// per execution of the loop; to the code around it, it is a barrier. When event ids
// run out the whole program falls back to bracketing every loop, and a bracketed
// loop whose carried syncs find no ids gets a barrier at the start of every
// iteration instead (correct, without overlap between iterations).

// loopPlan is what the flag inserter decides for one loop.
type loopPlan struct {
	start, end int  // indices of the LOOP and its ENDLOOP
	parent     int  // LOOP index of the enclosing loop, -1 at top level
	bracketed  bool // TSYNC all before the LOOP and after the ENDLOOP
	barrier    bool // a TSYNC all at the start of every iteration instead of carried syncs
	carried    []carriedSync
	inner      []int // LOOP indices of the loops directly inside
	intra      []syncNeed
}

// carriedSync is a loop-carried sync. Positions are instruction indices at the body's
// own depth: the set goes after setAt (an instruction, or an inner loop's ENDLOOP),
// the wait before waitAt (an instruction, or an inner loop's LOOP). The priming set
// goes after primeAt in the code around the loop (-1: at the start of the program).
type carriedSync struct {
	pair          pipePair
	setAt, waitAt int
	primeAt, id   int
	// drainAt is where the draining wait goes in the code around the loop: before
	// that instruction (or loop), the first that needs it; -1: right after the ENDLOOP.
	drainAt int
}

// errNoIDs says the flags do not fit the chip's event ids.
var errNoIDs = errors.New("event ids exhausted")

// matchLoops pairs every LOOP with its ENDLOOP (match[i] is the partner, -1 for other
// instructions).
func matchLoops(ins []Instr) ([]int, error) {
	match := make([]int, len(ins))
	var open []int
	for i, in := range ins {
		match[i] = -1
		switch in.Op {
		case isa.LOOP:
			open = append(open, i)
		case isa.ENDLOOP:
			if len(open) == 0 {
				return nil, fmt.Errorf("pc %d: endloop without a loop", i)
			}
			j := open[len(open)-1]
			open = open[:len(open)-1]
			match[i], match[j] = j, i
		}
	}
	if len(open) > 0 {
		return nil, fmt.Errorf("pc %d: loop without an endloop", open[len(open)-1])
	}
	return match, nil
}

// barrierInstr is a TSYNC all: what the flag inserter adds around bracketed loops,
// and what such a loop stands for when its enclosing region is analysed.
func barrierInstr() Instr {
	return Instr{Op: isa.TSYNC, Pipe: isa.PipeS, Args: []Operand{{Kind: isa.KindPipe, Pipe: isa.PipeAll}}, Src: -1, Match: -1}
}

func flagOp(op isa.Opcode, pair pipePair, id int) Instr {
	p := pair.src
	if op == isa.WAIT_FLAG {
		p = pair.dst
	}
	args := []Operand{{Kind: isa.KindPipe, Pipe: pair.src}, {Kind: isa.KindPipe, Pipe: pair.dst}, {Kind: isa.KindImm, Imm: float64(id)}}
	return Instr{Op: op, Pipe: p, Args: args, Src: -1, Match: -1}
}

// runsAtLeastOnce reports whether a LOOP's trip count is a positive constant.
func runsAtLeastOnce(in Instr) bool {
	return len(in.Args) > 1 && in.Args[1].Kind == isa.KindImm && in.Args[1].Imm >= 1
}

// insertSyncs returns ins with the flags and barriers the hazards need, and the
// LOOP / ENDLOOP instructions matched.
func insertSyncs(chip *Chip, name string, core isa.CoreKind, ins []Instr) ([]Instr, error) {
	fail := func(err error) ([]Instr, error) {
		return nil, &CompileError{Program: name, PC: -1, Msg: err.Error()}
	}
	match, err := matchLoops(ins)
	if err != nil {
		return fail(err)
	}
	out, err := newFlagPlanner(chip, core, ins, match, false).run()
	if errors.Is(err, errNoIDs) {
		out, err = newFlagPlanner(chip, core, ins, match, true).run()
	}
	if err != nil {
		return fail(err)
	}
	outMatch, err := matchLoops(out)
	if err != nil {
		return fail(err)
	}
	for i := range out {
		out[i].Match = outMatch[i]
	}
	return out, nil
}

// flagPlanner inserts the flags of one program.
type flagPlanner struct {
	chip   *Chip
	core   isa.CoreKind
	ins    []Instr
	loops  map[int]*loopPlan // by LOOP index
	within []int             // innermost LOOP index around each instruction, -1 outside loops
	manual map[pipePair][]int
	top    []syncNeed // syncs of the code outside loops
	topIn  []int      // loops at top level
	// bracketAll is the fallback: every loop bracketed by barriers.
	bracketAll bool
}

func newFlagPlanner(chip *Chip, core isa.CoreKind, ins []Instr, match []int, bracketAll bool) *flagPlanner {
	pl := &flagPlanner{chip: chip, core: core, ins: ins, loops: map[int]*loopPlan{}, within: make([]int, len(ins)), manual: manualIDs(ins), bracketAll: bracketAll}
	var open []int
	for i, in := range ins {
		cur := -1
		if len(open) > 0 {
			cur = open[len(open)-1]
		}
		pl.within[i] = cur
		switch in.Op {
		case isa.LOOP:
			pl.loops[i] = &loopPlan{start: i, end: match[i], parent: cur, bracketed: bracketAll || !runsAtLeastOnce(in)}
			if cur >= 0 {
				pl.loops[cur].inner = append(pl.loops[cur].inner, i)
			} else {
				pl.topIn = append(pl.topIn, i)
			}
			open = append(open, i)
		case isa.ENDLOOP:
			open = open[:len(open)-1]
			pl.within[i] = cur
		}
	}
	return pl
}

func (pl *flagPlanner) run() ([]Instr, error) {
	// Analyses go inner loops first: a region's entry and exit syncs look at the
	// carried syncs of the loops inside it. LOOP indices of inner loops are larger.
	starts := make([]int, 0, len(pl.loops))
	for s := range pl.loops {
		starts = append(starts, s)
	}
	slices.Sort(starts)
	for _, s := range slices.Backward(starts) {
		lp := pl.loops[s]
		lp.intra, lp.carried = pl.analyse(lp.start+1, lp.end, lp)
	}
	pl.top, _ = pl.analyse(0, len(pl.ins), nil)
	if err := pl.assign(nil, pl.top, pl.topIn, nil); err != nil {
		return nil, err
	}
	return pl.emit(), nil
}

// elem is one instruction of an analysed sequence: its index in the program, the
// region-level item containing it (itself, or the LOOP of the region's inner loop
// around it) and the copy of the body it belongs to (0 or 1).
type elem struct{ pc, item, copy int }

// expand appends the instructions of ins[lo:hi] to seq, inner loops as one copy of
// their body (bracketed ones as a barrier); item < 0 means lo:hi is the region itself.
func (pl *flagPlanner) expand(lo, hi, item, copy int, seq *[]Instr, meta *[]elem) {
	for i := lo; i < hi; i++ {
		it := item
		if it < 0 {
			it = i
		}
		if pl.ins[i].Op == isa.LOOP {
			lp := pl.loops[i]
			if lp.bracketed {
				*seq = append(*seq, barrierInstr())
				*meta = append(*meta, elem{i, it, copy})
			} else {
				pl.expand(i+1, lp.end, it, copy, seq, meta)
			}
			i = lp.end
			continue
		}
		*seq = append(*seq, pl.ins[i])
		*meta = append(*meta, elem{i, it, copy})
	}
}

// analyse finds the syncs of the region ins[lo:hi]: the body of loop lp (two copies:
// per-iteration and carried syncs) or, with lp nil, the top level.
func (pl *flagPlanner) analyse(lo, hi int, lp *loopPlan) ([]syncNeed, []carriedSync) {
	copies := 1
	if lp != nil {
		copies = 2
	}
	var seq []Instr
	var meta []elem
	for c := range copies {
		pl.expand(lo, hi, -1, c, &seq, &meta)
	}
	var intra []syncNeed
	var carried []carriedSync
	for _, s := range findSyncs(pl.core, seq) {
		p, c := meta[s.producer], meta[s.consumer]
		if p.copy == 1 || (p.copy == c.copy && p.item == c.item && p.item != p.pc) {
			continue // repeats the first copy, or the inner loop's own
		}
		setAt, ok := pl.setSlot(s.pair, p, c, hi)
		if !ok {
			continue
		}
		waitAt, prime, movable := pl.waitSlot(s.pair, c)
		if prime != nil {
			// A carried sync of a loop around c orders the hazard: its first wait
			// consumes the priming set, which comes after the producer on Q (a
			// producer of the previous iteration precedes any priming set of this
			// one). The region's own inner loop's priming set moves up to just after
			// the producer.
			if c.copy == 0 && movable {
				prime.primeAt = max(prime.primeAt, setAt)
			}
			continue
		}
		if c.copy == 0 {
			intra = append(intra, syncNeed{pair: s.pair, producer: setAt, consumer: waitAt})
		} else {
			carried = append(carried, carriedSync{pair: s.pair, setAt: setAt, waitAt: waitAt, primeAt: -1, drainAt: -1})
		}
	}
	return prune(intra), pruneCarried(carried)
}

// setSlot is where the set of a sync from producer p to consumer c goes: after p
// itself at the region's level, or after the ENDLOOP of the region's inner loop
// around p. ok is false when a carried sync of a loop around p (inside that inner
// loop, or the inner loop itself) sets at or after p: its drain orders p's last
// execution before c. The inner loop's own such sync is preferred, and its drain
// moves down to just before c (before c's loop; in the next iteration of the
// region's loop, before that loop's ENDLOOP at end).
func (pl *flagPlanner) setSlot(pair pipePair, p, c elem, end int) (int, bool) {
	if p.item == p.pc {
		return p.pc, true
	}
	var found *carriedSync
	owner := -1
	for l := pl.within[p.pc]; l >= 0; l = pl.loops[l].parent {
		lp := pl.loops[l]
		for k := range lp.carried {
			if cs := &lp.carried[k]; cs.pair == pair && cs.setAt >= p.pc {
				found, owner = cs, l
				break
			}
		}
		if l == p.item {
			break
		}
	}
	if found == nil {
		return pl.loops[p.item].end, true
	}
	if owner == p.item {
		at := end
		if c.copy == 0 {
			at = c.item
		}
		if found.drainAt < 0 || at < found.drainAt {
			found.drainAt = at
		}
	}
	return 0, false
}

// waitSlot is where the wait of a sync into consumer c goes: before c itself at the
// region's level, or before the LOOP of the region's inner loop around c. When a
// carried sync of a loop around c (inside that inner loop, or the inner loop itself)
// waits at or before c, its priming set orders the hazard: that sync is returned
// instead, the outermost such (movable: it is the region's inner loop's own, whose
// priming set can move up to the producer).
func (pl *flagPlanner) waitSlot(pair pipePair, c elem) (int, *carriedSync, bool) {
	if c.item == c.pc {
		return c.pc, nil, false
	}
	var found *carriedSync
	owner := -1
	for l := pl.within[c.pc]; l >= 0; l = pl.loops[l].parent {
		lp := pl.loops[l]
		var best *carriedSync // the latest wait at or before c: its priming set moves least
		for k := range lp.carried {
			if cs := &lp.carried[k]; cs.pair == pair && cs.waitAt <= c.pc && (best == nil || cs.waitAt > best.waitAt) {
				best = cs
			}
		}
		if best != nil {
			found, owner = best, l
		}
		if l == c.item {
			break
		}
	}
	if found != nil {
		return 0, found, owner == c.item
	}
	return c.item, nil, false
}
