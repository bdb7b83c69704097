package device

import (
	"fmt"
	"slices"

	"pypto/isa"
)

// Flag insertion. Program order is the meaning of a PTO program; pipes run in order
// but in parallel with each other, so every pair of conflicting accesses (RAW, WAR,
// WAW on overlapping bytes, after allocation) on different pipes must be ordered by a
// SET_FLAG on the producer's pipe Q, placed after the producer, and a WAIT_FLAG on the
// consumer's pipe P, placed before the consumer. Accesses on the same pipe need
// nothing: a pipe finishes one instruction before it starts the next (the model's
// assumption; real vector pipes also want pipe_barrier between dependent vector
// instructions, which later work can add).
//
// Coverage is tracked with vector clocks: for each pipe, known[q] = k means every
// instruction of pipe q with index < k is known complete when the pipe's next
// instruction starts. A wait joins the knowledge its matching set carried (the k-th
// wait on (Q, P, id) consumes the k-th set), a TSYNC all makes everything before it
// known to every pipe. A hazard whose producer is already known complete needs no new
// flag; this covers existing (manual) syncs, syncs inserted for earlier consumers and
// transitive chains (MTE2 -> MTE1 -> M orders MTE2 before M).
//
// Event ids: syncs of one pipe pair whose set..wait intervals overlap in program order
// get distinct ids, so the program is correct on one-bit hardware flags too. Ids used
// by manual flags of a pair are reserved. When a pair's pool is exhausted, the new
// sync's set moves later, to just after the consumer of the overlapping sync of that
// pair whose wait comes first (whose id it then takes); that is still before its own
// wait, so it remains correct, only less overlapped.

const numPipes = int(isa.PipeAll) + 1

type vclock [numPipes]int

func (v *vclock) join(o vclock) {
	for i := range v {
		v[i] = max(v[i], o[i])
	}
}

type pipePair struct{ src, dst isa.Pipe }

type flagKey struct {
	pair pipePair
	id   int
}

// syncNeed is one inserted set/wait pair.
type syncNeed struct {
	pair     pipePair
	producer int // set goes after this instruction (later if ids run out)
	consumer int // wait goes before this instruction
	setAfter int
	id       int
	// fixed: the set cannot move later (a loop-carried sync's interval in the region
	// around its loop, from its priming set to its drain).
	fixed bool
}

// findSyncs walks the program in order and records a sync for every cross-pipe
// hazard not yet covered. Needs come out ordered by consumer, and per pipe pair also by
// producer (a later consumer's producer is never earlier: that one would be covered).
func findSyncs(core isa.CoreKind, ins []Instr) []syncNeed {
	var (
		known     [numPipes]vclock
		after     = make([]vclock, len(ins)) // knowledge of an instruction's pipe once it is done
		acc       = make([]accessSet, len(ins))
		producers [numPipes][]int // data instructions per pipe, in order
		pending   = map[flagKey][]vclock{}
		owed      = map[flagKey]int{} // waits seen before their set: the next sets are theirs
		needs     []syncNeed
	)
	for j, in := range ins {
		acc[j] = accesses(in)
		p := in.Pipe
		switch {
		case in.Op == isa.SET_FLAG:
			k := flagKey{pipePair{in.Args[0].Pipe, in.Args[1].Pipe}, int(in.Args[2].Imm)}
			if owed[k] > 0 {
				owed[k]-- // consumed by a wait earlier in program order: carries nothing we rely on
			} else {
				snap := known[p]
				snap[p] = j
				pending[k] = append(pending[k], snap)
			}
		case in.Op == isa.WAIT_FLAG:
			k := flagKey{pipePair{in.Args[0].Pipe, in.Args[1].Pipe}, int(in.Args[2].Imm)}
			if q := pending[k]; len(q) > 0 {
				known[p].join(q[0])
				pending[k] = q[1:]
			} else {
				owed[k]++
			}
		case in.Op == isa.TSYNC && in.Args[0].Pipe == isa.PipeAll:
			for q := range known {
				for r := range known[q] {
					known[q][r] = max(known[q][r], j)
				}
			}
		case !acc[j].empty():
			for _, q := range corePipes[core] {
				if q == p || q == isa.PipeS {
					continue
				}
				list := producers[q]
				for n := len(list) - 1; n >= 0 && list[n] >= known[p][q]; n-- {
					i := list[n]
					if !acc[i].conflicts(acc[j]) {
						continue
					}
					needs = append(needs, syncNeed{pair: pipePair{q, p}, producer: i, consumer: j})
					k := after[i]
					k[q] = max(k[q], i+1)
					known[p].join(k)
					break
				}
			}
			producers[p] = append(producers[p], j)
		}
		after[j] = known[p]
		after[j][p] = j + 1
	}
	return needs
}

// manualIDs lists, per pipe pair, the event ids the program's own flags use.
func manualIDs(ins []Instr) map[pipePair][]int {
	reserved := map[pipePair][]int{}
	for _, in := range ins {
		if in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG {
			pp := pipePair{in.Args[0].Pipe, in.Args[1].Pipe}
			if id := int(in.Args[2].Imm); !slices.Contains(reserved[pp], id) {
				reserved[pp] = append(reserved[pp], id)
			}
		}
	}
	return reserved
}

// assignEventIDs gives every sync of one straight-line region an event id other than
// the reserved ones, moving sets later when a pair's pool runs out (see the file
// comment). needs come ordered by consumer. Two syncs of a pair may share an id only
// when one's wait precedes the other's set: the k-th wait of an id consumes its k-th
// set, so an id whose set..wait intervals overlap would hand a wait the wrong set's
// knowledge. The intervals are not ordered by their sets (a loop's priming set can
// come at the start of the program, long before the straight-line syncs ahead of the
// loop), so each sync avoids the id of every assigned sync whose interval overlaps
// its own, not only of those still open at its set.
func assignEventIDs(chip *Chip, reserved map[pipePair][]int, needs []syncNeed) error {
	byPair := map[pipePair][]int{} // assigned syncs of each pair, in assignment order
	overlaps := func(m *syncNeed, from, to int) bool { return m.consumer > from && to > m.setAfter }
	// idFree reports whether id is held by no assigned sync of pair over [from, to].
	idFree := func(pair pipePair, id, from, to int) bool {
		for _, k := range byPair[pair] {
			if m := &needs[k]; m.id == id && overlaps(m, from, to) {
				return false
			}
		}
		return true
	}
	for n := range needs {
		s := &needs[n]
		s.setAfter = s.producer
		s.id = -1
		for id := range chip.FlagEventIDs {
			if !slices.Contains(reserved[s.pair], id) && idFree(s.pair, id, s.setAfter, s.consumer) {
				s.id = id
				break
			}
		}
		if s.id < 0 {
			if s.fixed {
				return fmt.Errorf("no event id left for flags from %s to %s: manual flags and loop-carried syncs use all %d", s.pair.src, s.pair.dst, chip.FlagEventIDs)
			}
			// The pool is exhausted over this interval: the set moves down to the
			// earliest wait of an overlapping sync whose id is then free up to this
			// sync's wait (that wait orders everything before it on the pair's pipes).
			best := -1
			for _, k := range byPair[s.pair] {
				m := &needs[k]
				if !overlaps(m, s.setAfter, s.consumer) || m.consumer > s.consumer || (best >= 0 && m.consumer >= needs[best].consumer) {
					continue
				}
				if idFree(s.pair, m.id, m.consumer, s.consumer) {
					best = k
				}
			}
			if best < 0 {
				return fmt.Errorf("no event id left for flags from %s to %s: all %d are held across this region", s.pair.src, s.pair.dst, chip.FlagEventIDs)
			}
			s.setAfter, s.id = needs[best].consumer, needs[best].id
		}
		byPair[s.pair] = append(byPair[s.pair], n)
	}
	return nil
}
