package device

import (
	"fmt"
	"slices"

	"pypto/isa"
)

// Flag insertion with loops. A loop body runs many times from one copy of code, so
// its flags must be right for every iteration, and hazards cross the loop's
// boundaries in three ways: from the code before the loop into the body, from one
// iteration into the next (loop-carried, e.g. a load that overwrites a tile the
// previous iteration's vector instructions still read), and from the body into the
// code after the loop. The scheme:
//
//   - Every loop is bracketed by full barriers (TSYNC all before LOOP and after
//     ENDLOOP), paid once per execution of the loop, not per iteration. Nothing before
//     a loop then needs a flag into it, nothing in it a flag out of it, and to the code
//     around it the loop is just a barrier.
//   - The body is analysed as two consecutive copies B1 B2 by the straight-line
//     analysis (findSyncs), starting from "everything known" (the entry barrier) and
//     with inner loops standing for barriers. Syncs inside B1 are the per-iteration
//     syncs; syncs from B1 into B2 are the loop-carried ones. Access sets are static
//     (tile addresses are fixed, register-moved GM views cover their whole param), so
//     a hazard between iterations k-2 and k implies the same hazard between k-1 and k,
//     which B1 -> B2 finds; two copies are enough.
//   - A loop-carried sync Q -> P keeps the straight-line placement (set right after
//     its producer, wait right before its consumer) in the body, plus a priming
//     SET_FLAG before the loop, consumed by the first iteration's wait, and a draining
//     WAIT_FLAG after it, consuming the last iteration's set. Every (pair, id) thus
//     alternates set, wait in every execution, for any trip count, zero included, and
//     the next iteration's load can overlap this iteration's compute when the body
//     double-buffers.
//   - A loop-carried sync holds its event id for the whole loop. When a pair's ids run
//     out, the loop falls back to a full barrier at the start of every iteration
//     instead of its loop-carried syncs (correct, without overlap between iterations).

// loopSyncs is what the flag inserter adds around and inside one loop.
type loopSyncs struct {
	carried []syncNeed // producer and consumer are instruction indices in the body
	barrier bool       // fall back to a barrier at the start of every iteration
}

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

// regionItems lists the instructions of ins[lo:hi] at the region's own depth; an inner
// loop appears as the index of its LOOP.
func regionItems(match []int, lo, hi int) []int {
	var items []int
	for i := lo; i < hi; i++ {
		items = append(items, i)
		if match[i] > i {
			i = match[i]
		}
	}
	return items
}

// barrierInstr is a TSYNC all: what the flag inserter adds around loops, and what an
// inner loop stands for when its enclosing region is analysed.
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
	manual := manualIDs(ins)
	before := make([][]Instr, len(ins)) // waits before instruction i
	after := make([][]Instr, len(ins))  // sets after instruction i
	loops := map[int]*loopSyncs{}

	// held lists, per pipe pair, the ids loop-carried syncs of enclosing loops hold.
	var plan func(lo, hi, loop int, held map[pipePair][]int) error
	plan = func(lo, hi, loop int, held map[pipePair][]int) error {
		items := regionItems(match, lo, hi)
		copies := 1
		if loop >= 0 {
			copies = 2
		}
		seq := make([]Instr, 0, copies*len(items))
		for range copies {
			for _, i := range items {
				if ins[i].Op == isa.LOOP {
					seq = append(seq, barrierInstr())
				} else {
					seq = append(seq, ins[i])
				}
			}
		}
		n := len(items)
		var intra, carried []syncNeed
		for _, s := range findSyncs(core, seq) {
			switch {
			case s.consumer < n:
				intra = append(intra, s)
			case s.producer < n:
				s.producer, s.consumer = items[s.producer], items[s.consumer-n]
				carried = append(carried, s)
			}
			// Syncs inside the second copy repeat the first copy's.
		}
		inner := held
		if loop >= 0 {
			ls := &loopSyncs{barrier: true}
			loops[loop] = ls
			if ids, ok := carriedIDs(chip, manual, held, carried); ok {
				for k := range carried {
					carried[k].id = ids[k]
				}
				withCarried := withHeld(held, carried)
				// The per-iteration syncs must still find ids beside the carried ones;
				// if they cannot, the loop falls back to the barrier.
				if assignEventIDs(chip, union(manual, withCarried), slices.Clone(intra)) == nil {
					ls.carried, ls.barrier, inner = carried, false, withCarried
				}
			}
		}
		if err := assignEventIDs(chip, union(manual, inner), intra); err != nil {
			return err
		}
		for _, s := range intra {
			after[items[s.setAfter]] = append(after[items[s.setAfter]], flagOp(isa.SET_FLAG, s.pair, s.id))
			before[items[s.consumer]] = append(before[items[s.consumer]], flagOp(isa.WAIT_FLAG, s.pair, s.id))
		}
		for _, s := range loops[loop].carriedOrNil() {
			after[s.producer] = append(after[s.producer], flagOp(isa.SET_FLAG, s.pair, s.id))
			before[s.consumer] = append(before[s.consumer], flagOp(isa.WAIT_FLAG, s.pair, s.id))
		}
		for _, i := range items {
			if ins[i].Op == isa.LOOP {
				if err := plan(i+1, match[i], i, inner); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := plan(0, len(ins), -1, nil); err != nil {
		return fail(err)
	}

	out := make([]Instr, 0, len(ins)+8)
	for i, in := range ins {
		ls := loops[i]
		if in.Op == isa.LOOP {
			out = append(out, barrierInstr())
			for _, s := range ls.carried {
				out = append(out, flagOp(isa.SET_FLAG, s.pair, s.id)) // primes the first iteration's wait
			}
		}
		out = append(out, before[i]...)
		out = append(out, in)
		out = append(out, after[i]...)
		switch {
		case in.Op == isa.LOOP && ls.barrier:
			out = append(out, barrierInstr())
		case in.Op == isa.ENDLOOP:
			for _, s := range loops[match[i]].carried {
				out = append(out, flagOp(isa.WAIT_FLAG, s.pair, s.id)) // drains the last iteration's set
			}
			out = append(out, barrierInstr())
		}
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

func (ls *loopSyncs) carriedOrNil() []syncNeed {
	if ls == nil {
		return nil
	}
	return ls.carried
}

// carriedIDs gives each loop-carried sync its own id for the whole loop, avoiding
// manual ids and the ids enclosing loops' carried syncs hold; ok is false when a pair
// runs out.
func carriedIDs(chip *Chip, manual, held map[pipePair][]int, carried []syncNeed) ([]int, bool) {
	taken := union(manual, held)
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

// withHeld adds the ids of a loop's carried syncs to those its enclosing loops hold.
func withHeld(held map[pipePair][]int, carried []syncNeed) map[pipePair][]int {
	add := map[pipePair][]int{}
	for _, s := range carried {
		add[s.pair] = append(add[s.pair], s.id)
	}
	return union(held, add)
}
