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
// sync's set moves later, to just after the consumer of the oldest live sync of that
// pair (whose id it then takes); that is still before its own wait, so it remains
// correct, only less overlapped.

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
// comment).
func assignEventIDs(chip *Chip, reserved map[pipePair][]int, needs []syncNeed) error {
	type state struct {
		free   []int // sorted
		active []int // indices into needs, oldest consumer first
	}
	pairs := map[pipePair]*state{}
	for n := range needs {
		s := &needs[n]
		st := pairs[s.pair]
		if st == nil {
			st = &state{}
			for id := range chip.FlagEventIDs {
				if !slices.Contains(reserved[s.pair], id) {
					st.free = append(st.free, id)
				}
			}
			pairs[s.pair] = st
		}
		s.setAfter = s.producer
		// A sync whose wait precedes this set no longer holds its id.
		for len(st.active) > 0 && needs[st.active[0]].consumer <= s.setAfter {
			st.free = insertSorted(st.free, needs[st.active[0]].id)
			st.active = st.active[1:]
		}
		if len(st.free) > 0 {
			s.id, st.free = st.free[0], st.free[1:]
		} else {
			if len(st.active) == 0 || s.fixed {
				return fmt.Errorf("no event id left for flags from %s to %s: manual flags and loop-carried syncs use all %d", s.pair.src, s.pair.dst, chip.FlagEventIDs)
			}
			oldest := needs[st.active[0]]
			st.active = st.active[1:]
			s.setAfter, s.id = oldest.consumer, oldest.id
		}
		st.active = append(st.active, n)
	}
	return nil
}

func insertSorted(s []int, v int) []int {
	i, _ := slices.BinarySearch(s, v)
	return slices.Insert(s, i, v)
}
