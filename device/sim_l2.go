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
// that a transfer, whose lines are consecutive, reads and writes consecutive memory.
// A set is only a count of the lines it holds (a small array, mostly in the host's
// cache): a miss in a set that is not full takes a way by counting it. Recency is a
// stamp per line, the count of accesses when it was last used, so a hit moves
// nothing; a miss in a full set evicts the set's line with the least stamp, the line
// a most-recent-first list of the set would evict, found among the GM lines that map
// to the set (an index built at the first eviction, kept while the GM's size stays).
//
// The directory is reused by later tasks without clearing the per-line state: the
// stamps keep counting, a task's first stamp is its base, and a line whose stamp is
// older than the base is absent. Only the counts of the sets a task filled are reset.
type l2Tags struct {
	// used and fill are the per GM line state, apart so that a roomy directory,
	// which reads no stamps, streams through 8 bytes a line: the stamp of the line's
	// last use (older than base: not in L2; unused when roomy) and when its fill
	// completes: task cycles (0: filled when the task began, or written by a store)
	// or, negative, ^k for the k-th load of ends.
	used, fill []int64
	// count is the lines each set holds, a byte per set (Chip.Validate keeps L2Ways
	// at most maxL2Ways) so that the counts of a2's 24,576 sets fit a host's L1
	// cache: a streaming transfer's lines fall in sets spread over all of them.
	count  []uint8
	filled []int32 // the sets with a line, so release resets just those
	clock  int64   // accesses so far, over every task that used the directory
	base   int64   // this task's first stamp: earlier stamps are lines of earlier tasks
	ways   int
	setDiv uint64 // the number of sets' reciprocal for setOf (fastMod)
	// roomy says that no set has more GM lines than ways (the GM is within
	// evictionFreeLines): nothing is ever evicted, so neither the sets' counts nor
	// the lines' recency matter, and whether a line is present is a bit of present.
	// Streaming a GM that fits the L2 (most tasks') then costs a bit and a fill per
	// line, 64 lines a word.
	roomy   bool
	present []uint64 // roomy: bit l%64 of word l/64 is line l (cleared per task)
	// ends is the completion of each load of the task that missed lines (fillOf):
	// a missed line's fill names its load, whose end is known once the load's
	// bytes are booked, after its lines were looked up.
	ends []int64
	// missedScratch receives the misses of stores, which no one reads.
	missedScratch []lineRange
	// own counts the lines a load's lookups found present because that load itself
	// missed them (its window touches a line twice): the caller resets it per load.
	own int64
	// bySet lists the GM lines of each set, set s's in bySet[setStart[s]:setStart[s+1]],
	// for the len(fill) lines of GM (nil until a set first overflows).
	bySet, setStart []int32
	// dirty, in a run's SharedL2, has a bit per GM line written back but not yet to
	// HBM (nil otherwise: every store is written through); wroteBack counts the dirty
	// lines evictions wrote to HBM since the memory system last took them.
	dirty     []uint64
	wroteBack int64
	lineBytes int
}

// lineRange is the lines first..last (inclusive).
type lineRange struct{ first, last int32 }

// fillOf is the task cycle at which a line whose fill is f is filled.
func (t *l2Tags) fillOf(f int64) int64 {
	if f < 0 {
		return t.ends[^f]
	}
	return f
}

// newLoad names a load about to look its lines up: the fill its missed lines
// get. Its end is 0 until setEnd (a line the load itself brought in is there for it).
func (t *l2Tags) newLoad() int64 {
	t.ends = append(t.ends, 0)
	return ^int64(len(t.ends) - 1)
}

// setEnd records when load id (newLoad) completes: its missed lines are filled then.
func (t *l2Tags) setEnd(id, end int64) { t.ends[^id] = end }

// maxL2Ways is the most ways a set may have: l2Tags counts a set's lines in a byte.
const maxL2Ways = 255

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
	if len(t.count) != sets || t.ways != ways {
		t.count, t.ways, t.filled, t.bySet = make([]uint8, sets), ways, t.filled[:0], nil
		t.setDiv = ^uint64(0)/uint64(sets) + 1
	}
	if len(t.fill) != lines {
		t.bySet = nil // another GM
	}
	if cap(t.fill) < lines {
		t.used, t.fill = make([]int64, lines), make([]int64, lines) // stamp 0 is older than any base
	}
	t.used, t.fill = t.used[:lines], t.fill[:lines]
	t.base = t.clock + 1
	t.roomy = lines <= evictionFreeLines(t)
	if t.roomy {
		t.present = grow(t.present, (lines+63)/64)
		clear(t.present)
	}
	t.ends = t.ends[:0]
	return t
}

// evictionFree caches evictionFreeLines per directory shape (sets, ways).
var evictionFree sync.Map // [2]int -> int

// evictionFreeLines is the largest GM, in lines, in which no set of t's shape has
// more lines than ways: lines 0 .. n-1 fill no set beyond its ways, line n would
// (with the hash, a GM of about sets x ways lines; at most sets x ways).
func evictionFreeLines(t *l2Tags) int {
	key := [2]int{len(t.count), t.ways}
	if n, ok := evictionFree.Load(key); ok {
		return n.(int)
	}
	held := make([]int, len(t.count))
	n := 0
	for ; ; n++ {
		s := t.setOf(n)
		if held[s] == t.ways {
			break
		}
		held[s]++
	}
	evictionFree.Store(key, n)
	return n
}

// release empties the directory and hands it to later tasks; t must not be used again.
func (t *l2Tags) release() {
	if len(t.filled) > len(t.count)/8 {
		clear(t.count) // most sets: one pass in address order
	} else {
		for _, s := range t.filled {
			t.count[s] = 0
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
	missed, fill := t.accessRun(l, l, false, 0, nil)
	return len(missed) == 0, fill
}

// accessRun looks up the consecutive lines l0..l1 (inclusive) in order, as accesses
// of one line each: it appends the runs of lines that were absent to missed, gives
// them fill (a load's, newLoad; 0 for a store) and reports, of the present ones, the
// latest fill. When write is set every line is marked filled (a store's data is
// there). A transfer's lines are looked up here in one loop over consecutive state.
func (t *l2Tags) accessRun(l0, l1 int, write bool, fill int64, missed []lineRange) ([]lineRange, int64) {
	if t.roomy {
		return t.accessRoomy(l0, l1, write, fill, missed)
	}
	var waitFill int64
	floor := len(missed)
	clock, base := t.clock, t.base
	for l := l0; l <= l1; l++ {
		clock++
		if t.used[l] >= base {
			t.used[l] = clock
			if fill < 0 && t.fill[l] == fill {
				t.own++
			}
			waitFill = max(waitFill, t.fillOf(t.fill[l]))
			if write {
				t.fill[l] = 0
			}
			continue
		}
		t.insert(l)
		t.used[l], t.fill[l] = clock, fill
		missed = addLines(missed, floor, l, l)
	}
	t.clock = clock
	return missed, waitFill
}

// accessRoomy is accessRun in a roomy directory: the present bits of 64 lines at a
// time, the fills of just the lines that hit or were filled.
func (t *l2Tags) accessRoomy(l0, l1 int, write bool, fill int64, missed []lineRange) ([]lineRange, int64) {
	var waitFill int64
	floor := len(missed)
	for w := l0 / 64; w <= l1/64; w++ {
		lo, hi := max(l0, 64*w), min(l1, 64*w+63)
		mask := lineMask(lo, hi)
		hit := t.present[w] & mask
		t.present[w] |= mask
		for b := hit; b != 0; b &= b - 1 {
			l := 64*w + bits.TrailingZeros64(b)
			if fill < 0 && t.fill[l] == fill {
				t.own++
			}
			waitFill = max(waitFill, t.fillOf(t.fill[l]))
			if write {
				t.fill[l] = 0
			}
		}
		if miss := mask &^ hit; miss == mask {
			for l := lo; l <= hi; l++ {
				t.fill[l] = fill
			}
			missed = addLines(missed, floor, lo, hi)
		} else {
			for b := miss; b != 0; b &= b - 1 {
				l := 64*w + bits.TrailingZeros64(b)
				t.fill[l] = fill
				missed = addLines(missed, floor, l, l)
			}
		}
	}
	t.clock += int64(l1 - l0 + 1)
	return missed, waitFill
}

// writeRun is accessRun of a store's lines l0..l1: every line ends up present and
// filled (the store's data is there); which were missed does not matter. In a
// SharedL2 the lines become dirty when the store is written back (back), else clean.
func (t *l2Tags) writeRun(l0, l1 int, back bool) {
	if t.dirty != nil {
		defer t.markDirty(l0, l1, back) // after the lookups: a line evicted meanwhile is written back first
	}
	if !t.roomy {
		t.missedScratch, _ = t.accessRun(l0, l1, true, 0, t.missedScratch[:0])
		return
	}
	for w := l0 / 64; w <= l1/64; w++ {
		t.present[w] |= lineMask(max(l0, 64*w), min(l1, 64*w+63))
	}
	for l := l0; l <= l1; l++ {
		t.fill[l] = 0
	}
	t.clock += int64(l1 - l0 + 1)
}

// lineMask is the bits of lines lo..hi (one word's: lo/64 == hi/64) in their word of
// the present bitmap.
func lineMask(lo, hi int) uint64 { return (^uint64(0) >> (63 - (hi - lo))) << (lo % 64) }

// addLines appends lines lo..hi to the runs of missed lines, extending the last run
// when they follow it and it is one of this lookup's (from floor on: a transfer's
// runs of bytes keep runs of lines of their own).
func addLines(missed []lineRange, floor, lo, hi int) []lineRange {
	if n := len(missed); n > floor && int(missed[n-1].last) == lo-1 {
		missed[n-1].last = int32(hi)
		return missed
	}
	return append(missed, lineRange{int32(lo), int32(hi)})
}

// insert takes a way of line l's set for l (absent), evicting the least recent line
// of a full set.
func (t *l2Tags) insert(l int) {
	s := t.setOf(l)
	switch n := t.count[s]; {
	case int(n) == t.ways:
		t.evict(s)
	case n == 0:
		t.filled = append(t.filled, int32(s))
		fallthrough
	default:
		t.count[s] = n + 1
	}
}

// evict takes the least recently used line out of full set s; a dirty one is written
// back (wroteBack).
func (t *l2Tags) evict(s int) {
	if t.bySet == nil {
		t.index()
	}
	victim, oldest := int32(-1), int64(0)
	for _, l := range t.bySet[t.setStart[s]:t.setStart[s+1]] {
		if u := t.used[l]; u >= t.base && (victim < 0 || u < oldest) {
			victim, oldest = l, u
		}
	}
	t.used[victim] = 0
	if t.dirty != nil && t.dirty[victim/64]&(1<<(victim%64)) != 0 {
		t.dirty[victim/64] &^= 1 << (victim % 64)
		t.wroteBack++
	}
}

// index lists the GM lines of each set (a counting sort by set).
func (t *l2Tags) index() {
	sets := len(t.count)
	t.setStart = grow(t.setStart, sets+1)
	clear(t.setStart)
	for l := range t.fill {
		t.setStart[t.setOf(l)+1]++
	}
	for s := range sets {
		t.setStart[s+1] += t.setStart[s]
	}
	next := append([]int32(nil), t.setStart[:sets]...)
	t.bySet = grow(t.bySet, len(t.fill))
	for l := range t.fill {
		s := t.setOf(l)
		t.bySet[next[s]] = int32(l)
		next[s]++
	}
}

// setOf is the L2 set of line l: a multiplicative hash of the line number, as real
// L2s hash their index so that power-of-two strides do not pile into a few sets.
func (t *l2Tags) setOf(l int) int {
	return fastMod(uint32(uint64(l)*0x9E3779B97F4A7C15>>32), t.setDiv, uint64(len(t.count)))
}

// fastMod is a % d for d > 0 given div = ^uint64(0)/d + 1: the fraction a/d in 64
// bits times d (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
// 2019), exact for every 32-bit a and d; a division costs tens of cycles.
func fastMod(a uint32, div, d uint64) int {
	hi, _ := bits.Mul64(div*uint64(a), d)
	return int(hi)
}
