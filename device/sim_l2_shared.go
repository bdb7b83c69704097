package device

import (
	"math/bits"
	"slices"
)

// SharedL2 is the L2 of one run of a graph (RunOptions.L2): the tasks of the run find
// the lines the tasks before them left, in the order the dispatcher runs them, instead
// of each starting cold. A task that reads what an earlier one wrote, while it is
// still in L2, hits: it pays the L2's latency and bandwidth, not the HBM's.
//
// Stores into the write-back ranges (the workspace of intermediates, which only tasks
// of the run read) stay in L2 as dirty lines: they take L2 bandwidth and no HBM
// bandwidth; a dirty line costs an HBM write when a miss evicts it, booked then on the
// HBM's calendar, and the dirty lines left at the end are written back after the run
// (Close reports their bytes, which no task's time includes). Stores elsewhere (a
// program's inputs and outputs) are written through to HBM as before, so a task that
// writes only outputs (every single-task program, the calibration kernels) takes the
// same time with a SharedL2 as without. Assumed: the runtime marks the workspace's
// lines write-back and the outputs' write-through (the L2's per-access cache modes;
// no public figure gives their cost, taken as none).
//
// Concurrent tasks see the L2 in the order the dispatcher ran them, one after another
// (a task does not see the lines a task beside it brings in meanwhile).
type SharedL2 struct {
	tags      *l2Tags  // nil until the first task on a chip with an L2
	writeBack [][2]int // sorted, disjoint GM byte ranges [lo, hi) written back
	dirty     []uint64 // a bit per GM line: in L2 and not yet written to HBM
	// history names the L2's contents for the timing cache: a hash of the write-back
	// ranges and the timing keys of the tasks that ran so far; known is false once a
	// task without a key ran (its effect is not named by one).
	history uint64
	known   bool
	closed  bool
}

// NewSharedL2 returns an empty L2 for one run whose stores into the byte ranges
// writeBack ([lo, hi) of GM) are written back rather than through.
func NewSharedL2(writeBack [][2]int) *SharedL2 {
	s := &SharedL2{known: true}
	for _, r := range writeBack {
		if r[1] > r[0] {
			s.writeBack = append(s.writeBack, r)
		}
	}
	slices.SortFunc(s.writeBack, func(a, b [2]int) int { return a[0] - b[0] })
	h := fnv{offset64}
	for _, r := range s.writeBack {
		h.add(r[0], r[1])
	}
	s.history = h.sum
	return s
}

// Close ends the run: it returns the bytes of the dirty lines still in L2, which are
// written back to HBM after the run, and gives the directory back. The SharedL2 must
// not be used again.
func (s *SharedL2) Close() (dirtyBytes int64) {
	if s == nil || s.closed {
		return 0
	}
	s.closed = true
	if s.tags == nil {
		return 0
	}
	var lines int
	for _, w := range s.dirty {
		lines += bits.OnesCount64(w)
	}
	dirtyBytes = int64(lines) * int64(s.tags.lineBytes)
	s.tags.dirty = nil
	s.tags.release()
	s.tags, s.dirty = nil, nil
	return dirtyBytes
}

// take returns the directory a task on chip with a GM of gmBytes uses: the run's, or a
// new one for the run's first task.
func (s *SharedL2) take(chip *Chip, gmBytes int) *l2Tags {
	ways := max(1, chip.L2Ways)
	sets := max(1, chip.L2Bytes/(chip.L2LineBytes*ways))
	lines := (gmBytes + chip.L2LineBytes - 1) / chip.L2LineBytes
	if s.closed {
		panic("device: a SharedL2 used after Close")
	}
	if t := s.tags; t != nil {
		if len(t.fill) != lines || len(t.count) != sets || t.ways != ways || t.lineBytes != chip.L2LineBytes {
			panic("device: one SharedL2 for GMs or chips of different sizes")
		}
		t.ends = t.ends[:0]
		return t
	}
	t := takeL2(sets, ways, lines)
	t.lineBytes = chip.L2LineBytes
	s.dirty = make([]uint64, (lines+63)/64)
	t.dirty = s.dirty
	s.tags = t
	return t
}

// endTask readies the directory for the run's next task: every line a task brought in
// is filled before the next one begins.
func (s *SharedL2) endTask(key string, keyed bool) {
	clear(s.tags.fill)
	s.tags.ends = s.tags.ends[:0]
	if !keyed {
		s.known = false
		return
	}
	h := fnv{s.history}
	for _, c := range []byte(key) {
		h.add(int(c))
	}
	s.history = h.sum
}

// writesBack reports whether a store to GM byte at is written back.
func (s *SharedL2) writesBack(at int) bool {
	_, found := slices.BinarySearchFunc(s.writeBack, at, func(r [2]int, at int) int {
		switch {
		case r[1] <= at:
			return -1
		case r[0] > at:
			return 1
		}
		return 0
	})
	return found
}

// l2Op is one lookup of a task's transfers in the directory, in the order the timing
// loop made them: what the timing cache replays to leave the L2 as the loop did.
type l2Op struct {
	first, last int32
	kind        uint8 // l2Load, l2StoreThrough or l2StoreBack
}

const (
	l2Load = iota
	l2StoreThrough
	l2StoreBack
)

// replay makes the lookups of ops in the directory, as the task's timing loop did.
func (t *l2Tags) replay(ops []l2Op) {
	for _, op := range ops {
		switch op.kind {
		case l2Load:
			t.missedScratch, _ = t.accessRun(int(op.first), int(op.last), false, 0, t.missedScratch[:0])
		default:
			t.writeRun(int(op.first), int(op.last), op.kind == l2StoreBack)
		}
	}
	t.wroteBack = 0 // the record holds the bytes written back
}

// markDirty sets (or clears) the dirty bits of lines l0..l1.
func (t *l2Tags) markDirty(l0, l1 int, dirty bool) {
	for w := l0 / 64; w <= l1/64; w++ {
		m := lineMask(max(l0, 64*w), min(l1, 64*w+63))
		if dirty {
			t.dirty[w] |= m
		} else {
			t.dirty[w] &^= m
		}
	}
}
