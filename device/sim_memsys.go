package device

import (
	"sync"
	"sync/atomic"

	"pypto/isa"
)

// memSystem is the part of the memory hierarchy all cores of a task share: an LRU L2
// over GM lines and the HBM bandwidth behind it. It is used only when the chip has an
// L2 (Chip.L2Bytes > 0); then RunTask simulates the cores in one event loop in task
// time order (sim_shared.go), so the L2 sees accesses in the order they happen and
// the result is deterministic.
type memSystem struct {
	chip *Chip
	// L2 is set-associative: line l lives in set setOf(l), whose ways hold line
	// numbers most recent first (-1: empty); a miss evicts the set's least recent.
	tags       []int32
	sets, ways int
	// filled lists the sets that hold a line, so release can empty just those: the
	// tags (megabytes for a chip's L2) are reused by later tasks, not cleared whole.
	filled []int32
	lines  int // lines in GM
	// missEnds holds the end time (task cycles) of every load with a missing line
	// still in flight: the cores that share HBM with a new miss.
	missEnds     []int64
	hits, misses int64
}

func newMemSystem(chip *Chip, gmBytes int) *memSystem {
	ways := max(1, chip.L2Ways)
	sets := max(1, chip.L2Bytes/(chip.L2LineBytes*ways))
	m := &memSystem{chip: chip, lines: (gmBytes + chip.L2LineBytes - 1) / chip.L2LineBytes, sets: sets, ways: ways}
	t := spareTags.Swap(nil)
	if t == nil {
		t, _ = emptyTags.Get().(*l2Tags)
	}
	if t != nil && len(t.tags) == sets*ways {
		m.tags, m.filled = t.tags, t.filled[:0]
	} else {
		m.tags = make([]int32, sets*ways)
		for i := range m.tags {
			m.tags[i] = -1
		}
	}
	return m
}

// l2Tags is an empty L2 tag array kept for the next task, with its filled list's memory.
type l2Tags struct {
	tags   []int32
	filled []int32
}

// spareTags keeps one empty tag array through garbage collections (which empty
// emptyTags), so that tasks run one after another never allocate one again.
var (
	spareTags atomic.Pointer[l2Tags]
	emptyTags sync.Pool // of *l2Tags
)

// release empties the sets the task filled and hands the tags to later tasks; m must
// not be used again.
func (m *memSystem) release() {
	for _, s := range m.filled {
		set := m.tags[int(s)*m.ways:][:m.ways]
		for w := range set {
			set[w] = -1
		}
	}
	if t := (&l2Tags{tags: m.tags, filled: m.filled}); !spareTags.CompareAndSwap(nil, t) {
		emptyTags.Put(t)
	}
	m.tags, m.filled = nil, nil
}

// touch makes line l the most recent of its set, inserting it (and evicting the
// set's least recent line when the set is full) if it was absent; it reports whether
// it was present.
func (m *memSystem) touch(l int) bool {
	s := m.setOf(l)
	set := m.tags[s*m.ways:][:m.ways]
	if set[0] < 0 { // the set's first line: a set never empties again
		m.filled = append(m.filled, int32(s))
	}
	li := int32(l)
	w := 0
	for w < len(set)-1 && set[w] != li {
		w++
	}
	hit := set[w] == li
	copy(set[1:w+1], set[:w]) // on a miss w is the last way: its line is evicted
	set[0] = li
	return hit
}

// window calls f with each line the GM window of view o (param at GM byte base)
// touches, run by run, and the bytes of the run in that line. A run is a contiguous
// stretch of the window: a row when columns are adjacent, a column when rows are (a
// transposed view, which the DMA reads as the rows of the stored matrix), else one
// element; so a transposed window moves the bytes it holds, not the gaps between them.
// Lines outside GM are skipped: the run-time checks report such windows.
func (m *memSystem) window(base int, o Operand, f func(line, bytes int)) {
	v := o.GM
	es := o.DType.Size()
	if v.Rows <= 0 || v.Cols <= 0 {
		return
	}
	runs, runStride, runLen := v.Rows, v.RowStride, ((v.Cols-1)*v.ColStride+1)*es // rows
	perElement := false
	switch {
	case v.ColStride <= 1 || v.Cols == 1:
	case v.RowStride == 1 || v.Rows == 1:
		runs, runStride, runLen = v.Cols, v.ColStride, ((v.Rows-1)*v.RowStride+1)*es // columns
	default: // neither axis is contiguous: element by element
		runs, runLen, perElement = v.Rows*v.Cols, es, true
	}
	lb := m.chip.L2LineBytes
	for r := range runs {
		start := v.Offset + r*runStride
		if perElement {
			start = v.Offset + (r/v.Cols)*v.RowStride + (r%v.Cols)*v.ColStride
		}
		lo := base + start*es
		hi := lo + runLen
		lo, hi = max(lo, 0), min(hi, m.lines*lb)
		for a := lo; a < hi; {
			l := a / lb
			e := min(hi, (l+1)*lb)
			f(l, e-a)
			a = e
		}
	}
}

// load is the time a TLOAD of view o starting at task time now takes: the latency
// (hit, or miss if any line misses) plus the hit bytes at the per-core L2 rate plus
// the missed bytes at this core's share of HBM.
func (m *memSystem) load(base int, o Operand, now int64) int64 {
	var hitB, missB int64
	m.window(base, o, func(l, n int) {
		if m.touch(l) {
			hitB += int64(n)
			m.hits++
		} else {
			missB += int64(n)
			m.misses++
		}
	})
	c := m.chip
	d := int64(c.L2HitCycles) + ceilDiv(hitB, c.L2ReadBytesPerCycle)
	if missB > 0 {
		// The cores with a missing load in flight share HBM equally from now on
		// (loads already running keep the rate they started with).
		share := min(c.L2ReadBytesPerCycle, max(1, c.HBMBytesPerCycle/(m.liveMisses(now)+1)))
		d = int64(c.L2MissCycles) + ceilDiv(hitB, c.L2ReadBytesPerCycle) + ceilDiv(missB, share)
		m.missEnds = append(m.missEnds, now+d)
	}
	return max(1, d)
}

// store writes the lines of view o into L2 (write-allocate) and returns the time a
// store that the chip's formula gives d takes when it starts at task time now. The
// L2 is write-through to HBM: written bytes leave at this core's share of the HBM
// bandwidth, shared with the loads that miss, so a task cannot move more bytes than
// HBM carries (a task starts with a cold L2, so its outputs count once each way).
func (m *memSystem) store(base int, o Operand, now, d int64) int64 {
	var bytes int64
	m.window(base, o, func(l, n int) {
		m.touch(l)
		bytes += int64(n)
	})
	if bytes == 0 {
		return d
	}
	c := m.chip
	share := min(c.L2WriteBytesPerCycle, max(1, c.HBMBytesPerCycle/(m.liveMisses(now)+1)))
	d = max(d, ceilDiv(bytes, share))
	m.missEnds = append(m.missEnds, now+d)
	return d
}

// liveMisses drops the HBM transfers that ended before now and counts the others.
func (m *memSystem) liveMisses(now int64) int {
	live := m.missEnds[:0]
	for _, e := range m.missEnds {
		if e > now {
			live = append(live, e)
		}
	}
	m.missEnds = live
	return len(live)
}

// duration is the time instruction in takes when it starts at task time now: the
// chip's formula, except that GM loads go through the memory system and stores
// update it.
func (m *memSystem) duration(r *blockRun, in *Instr, now int64) int64 {
	d := r.c.chip.duration(in)
	var o Operand
	switch in.Op {
	case isa.TPOP:
		// A queue slot is GM workspace its producer wrote just before: its lines are in
		// L2 (write-allocate), and the few slots of a queue are reused long before
		// anything could evict them, so a pop reads at the L2 hit rate and its slot
		// never costs HBM bandwidth.
		return int64(r.c.chip.L2HitCycles) + ceilDiv(int64(in.Args[0].Bytes()), r.c.chip.L2ReadBytesPerCycle)
	case isa.TLOAD:
		o = in.Args[1]
	case isa.TSTORE, isa.TSTORE_FP:
		o = in.Args[0]
	default:
		return d
	}
	if o.Kind != isa.KindGM || o.GM.Param < 0 || o.GM.Param >= len(r.blk.ParamAddrs) {
		return d
	}
	base := r.blk.ParamAddrs[o.GM.Param]
	if in.Op == isa.TLOAD {
		return m.load(base, o, now)
	}
	return m.store(base, o, now, d)
}

// setOf is the L2 set of line l: a multiplicative hash of the line number, as real
// L2s hash their index so that power-of-two strides do not pile into a few sets.
func (m *memSystem) setOf(l int) int {
	return int((uint64(l) * 0x9E3779B97F4A7C15 >> 32) % uint64(m.sets))
}
