package device

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// l2Tags is the L2's directory: which GM lines it holds, in which set, how recently
// each was used and when each one's fill from HBM completes. The L2 is
// set-associative with LRU replacement: line l lives in set setOf(l), and a miss in a
// full set evicts the set's least recently used line.
//
// What a transfer asks about a line (present? filled when?) is kept per GM line, so
// that a transfer, whose lines are consecutive, reads and writes consecutive memory;
// a miss visits its (hashed) set only in a small per-set array (the set's line count
// and the head of a list of its lines, linked through the lines' state). Recency is a
// stamp per line, the count of accesses when it was last used, so a hit moves
// nothing; a miss in a full set walks the set's list and evicts the line with the
// least stamp, the line a most-recent-first list of the set would evict.
//
// The directory is reused by later tasks without clearing the per-line state: the
// stamps keep counting, a task's first stamp is its base, and a line whose stamp is
// older than the base is absent. Only the sets a task filled are reset.
type l2Tags struct {
	state  []lineState // per GM line
	sets   []l2Set
	filled []int32 // the sets with a line, so release resets just those
	clock  int64   // accesses so far, over every task that used the directory
	base   int64   // this task's first stamp: earlier stamps are lines of earlier tasks
	ways   int
	setDiv uint64 // the number of sets' reciprocal for setOf (fastMod)
}

// lineState is a GM line in the directory: the stamp of its last use (older than
// base: not in L2), when its fill completes (task cycles; 0: filled when the task
// began, or written by a store), and the next line of its set's list (-1: the last).
type lineState struct {
	used, fill int64
	next       int32
}

// l2Set is a set: how many lines it holds and the first of its list (-1: none).
type l2Set struct{ head, count int32 }

// spareL2 keeps one directory through garbage collections (which empty idleL2), so
// that tasks run one after another never allocate one again.
var (
	spareL2 atomic.Pointer[l2Tags]
	idleL2  sync.Pool // of *l2Tags
)

// takeL2 returns an empty directory of sets x ways for a GM of lines lines, reusing
// a released one where it can.
func takeL2(sets, ways, lines int) *l2Tags {
	t := spareL2.Swap(nil)
	if t == nil {
		t, _ = idleL2.Get().(*l2Tags)
	}
	if t == nil {
		t = &l2Tags{}
	}
	if len(t.sets) != sets || t.ways != ways {
		t.sets, t.ways, t.filled = make([]l2Set, sets), ways, t.filled[:0]
		for i := range t.sets {
			t.sets[i] = l2Set{head: -1}
		}
		t.setDiv = ^uint64(0)/uint64(sets) + 1
	}
	if cap(t.state) < lines {
		t.state = make([]lineState, lines) // stamp 0 is older than any base
	}
	t.state = t.state[:lines]
	t.base = t.clock + 1
	return t
}

// release empties the directory and hands it to later tasks; t must not be used again.
func (t *l2Tags) release() {
	if len(t.filled) > len(t.sets)/8 {
		for i := range t.sets { // most sets: one pass in address order
			t.sets[i] = l2Set{head: -1}
		}
	} else {
		for _, s := range t.filled {
			t.sets[s] = l2Set{head: -1}
		}
	}
	t.filled = t.filled[:0]
	if !spareL2.CompareAndSwap(nil, t) {
		idleL2.Put(t)
	}
}

// access makes line l the most recently used, inserting it (and evicting its set's
// least recent line when the set is full) if it was absent. It reports whether the
// line was present and, if so, when its fill completes.
func (t *l2Tags) access(l int) (bool, int64) {
	t.clock++
	st := &t.state[l]
	if st.used >= t.base {
		st.used = t.clock
		return true, st.fill
	}
	*st = lineState{used: t.clock}
	t.insert(l)
	return false, 0
}

// insert takes a way of line l's set for l, evicting the least recent line of a full
// set.
func (t *l2Tags) insert(l int) {
	s := t.setOf(l)
	set := &t.sets[s]
	if int(set.count) == t.ways {
		t.evict(set)
	}
	if set.count == 0 {
		t.filled = append(t.filled, int32(s))
	}
	set.count++
	t.state[l].next, set.head = set.head, int32(l)
}

// evict takes the least recently used line out of a set.
func (t *l2Tags) evict(set *l2Set) {
	prev, victim, before := int32(-1), set.head, int32(-1)
	for l := set.head; l >= 0; l = t.state[l].next {
		if t.state[l].used < t.state[victim].used {
			victim, before = l, prev
		}
		prev = l
	}
	if before < 0 {
		set.head = t.state[victim].next
	} else {
		t.state[before].next = t.state[victim].next
	}
	t.state[victim].used = 0
	set.count--
}

// setOf is the L2 set of line l: a multiplicative hash of the line number, as real
// L2s hash their index so that power-of-two strides do not pile into a few sets.
func (t *l2Tags) setOf(l int) int {
	return fastMod(uint32(uint64(l)*0x9E3779B97F4A7C15>>32), t.setDiv, uint64(len(t.sets)))
}

// fastMod is a % d for d > 0 given div = ^uint64(0)/d + 1: the fraction a/d in 64
// bits times d (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
// 2019), exact for every 32-bit a and d; a division costs tens of cycles.
func fastMod(a uint32, div, d uint64) int {
	hi, _ := bits.Mul64(div*uint64(a), d)
	return int(hi)
}
