package device

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"pypto/isa"
)

// memSystem is the part of the memory hierarchy all cores of a task share: an L2
// over GM lines, its total bandwidth, and the HBM bandwidth behind it. It is used only
// when the chip has an L2 (Chip.L2Bytes > 0); then RunTask simulates the cores in one
// event loop in task time order (sim_shared.go), so the L2 sees accesses in the order
// they happen and the result is deterministic.
//
// A GM transfer is a set of outstanding requests: it is issued at its start, its data
// moves after the latency, through the core's port (one transfer at a time per core
// and direction) and the shared bandwidth calendar, and it completes when its last
// byte has arrived. The pipe is occupied only while the data moves, so the latency of
// one transfer overlaps the data of the one before (up to MemQueueDepth in flight).
type memSystem struct {
	chip *Chip
	// L2 is set-associative: line l lives in set setOf(l), whose ways hold line
	// numbers most recent first (-1: empty); a miss evicts the set's least recent.
	tags       []int32
	sets, ways int
	// fills holds, beside each way's tag, when that line's fill from HBM completes
	// (task cycles): a reader that finds the line before then waits for the fill
	// instead of reading it at the hit rate, and takes no HBM bandwidth for it.
	fills []int64
	// filled lists the sets that hold a line, so release can empty just those: the
	// tags (megabytes for a chip's L2) are reused by later tasks, not cleared whole.
	filled []int32
	lines  int // lines in GM
	cal    calendar
	ports  map[*coreSim]*corePorts
	// setDiv is sets' reciprocal for setOf (fastMod); runs is the lines of the
	// transfer being simulated, reused by every transfer of the task.
	setDiv uint64
	runs   []lineRun
	sink   int64 // what warm read

	hits, misses int64
	// prefetched counts the bytes of the lines the cores' first loads found
	// prefetched; written caches which params each program stores into.
	prefetched int64
	written    map[*MachineProgram][]bool
}

// corePorts is when each of a core's two GM paths is free: reads (MTE2's loads and
// pops) and writes (stores and pushes).
type corePorts struct{ read, write int64 }

func newMemSystem(chip *Chip, gmBytes int) *memSystem {
	ways := max(1, chip.L2Ways)
	sets := max(1, chip.L2Bytes/(chip.L2LineBytes*ways))
	m := &memSystem{chip: chip, lines: (gmBytes + chip.L2LineBytes - 1) / chip.L2LineBytes, sets: sets, ways: ways,
		ports: map[*coreSim]*corePorts{}}
	t := spareTags.Swap(nil)
	if t == nil {
		t, _ = emptyTags.Get().(*l2Tags)
	}
	if t != nil && len(t.tags) == sets*ways {
		m.tags, m.fills, m.filled = t.tags, t.fills, t.filled[:0]
	} else {
		m.tags, m.fills = make([]int32, sets*ways), make([]int64, sets*ways)
		for i := range m.tags {
			m.tags[i] = -1
		}
	}
	m.setDiv = ^uint64(0)/uint64(sets) + 1
	m.cal = calendar{l2: int64(chip.L2TotalBytesPerCycle), hbm: int64(chip.HBMBytesPerCycle), origin: int64(chip.StartCycles())}
	return m
}

// l2Tags is an empty L2 tag array (and its fill times) kept for the next task, with
// its filled list's memory.
type l2Tags struct {
	tags   []int32
	fills  []int64
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
	if len(m.filled) > m.sets/8 {
		// Most sets: one pass over the arrays in address order costs less than
		// visiting the sets in the (hashed) order they were filled.
		for i := range m.tags {
			m.tags[i] = -1
		}
		clear(m.fills)
		m.filled = m.filled[:0]
	}
	for _, s := range m.filled {
		set := m.tags[int(s)*m.ways:][:m.ways]
		for w := range set {
			set[w] = -1
		}
		clear(m.fills[int(s)*m.ways:][:m.ways])
	}
	if t := (&l2Tags{tags: m.tags, fills: m.fills, filled: m.filled}); !spareTags.CompareAndSwap(nil, t) {
		emptyTags.Put(t)
	}
	m.tags, m.fills, m.filled = nil, nil, nil
}

func (m *memSystem) portsOf(c *coreSim) *corePorts {
	p := m.ports[c]
	if p == nil {
		p = &corePorts{}
		m.ports[c] = p
	}
	return p
}

// touch makes line l the most recent of its set, inserting it (and evicting the
// set's least recent line when the set is full) if it was absent; it reports whether
// it was present.
func (m *memSystem) touch(l int) bool {
	hit, _ := m.access(m.setOf(l), l)
	return hit
}

// access is touch on line l of set s that also returns the line's fill time (0 for a
// new line; the fill times move with their lines, so a line is at way 0 of its set
// after an access).
func (m *memSystem) access(s, l int) (bool, int64) {
	set := m.tags[s*m.ways:][:m.ways]
	if set[0] < 0 { // the set's first line: a set never empties again
		m.filled = append(m.filled, int32(s))
	}
	li := int32(l)
	if set[0] == li { // the most recent line again: nothing moves
		return true, m.fills[s*m.ways]
	}
	w := 1
	for w < len(set)-1 && set[w] != li {
		w++
	}
	fills := m.fills[s*m.ways:][:m.ways]
	hit := set[w] == li
	fill := fills[w]
	if !hit {
		fill = 0
	}
	// Shifting one way at a time: the sets are a few ways, and copy's call costs more
	// than the move.
	for i := w; i > 0; i-- {
		set[i], fills[i] = set[i-1], fills[i-1]
	}
	set[0], fills[0] = li, fill
	return hit, fill
}

// setFill records when line l of set s completes its fill (l is in L2).
func (m *memSystem) setFill(s, l int, at int64) {
	set := m.tags[s*m.ways:][:m.ways]
	for w, t := range set {
		if t == int32(l) {
			m.fills[s*m.ways+w] = at
			return
		}
	}
}

// lineRun is the part of a transfer in one L2 line: the line, its set and the bytes.
type lineRun struct{ line, set, bytes int32 }

// prefetchChunk is how many lines of a transfer are looked up together: their sets'
// tags and fill times are read first, all of them independent loads that the host
// overlaps, so that the lookups in transfer order find them in its cache (the tag
// arrays are megabytes, and one miss at a time made the L2 model memory-latency
// bound). The chunk's sets stay well within the host's L1.
const prefetchChunk = 64

// transferLines lists the lines of view o (param at GM byte base) in m.runs, in the
// order window gives them, with their sets.
func (m *memSystem) transferLines(base int, o Operand) []lineRun {
	m.runs = m.runs[:0]
	m.window(base, o, func(l, n int) {
		m.runs = append(m.runs, lineRun{line: int32(l), set: int32(m.setOf(l)), bytes: int32(n)})
	})
	return m.runs
}

// warm reads the tags and fill times of the sets of runs (the prefetch of
// prefetchChunk); the sum only keeps the loads.
func (m *memSystem) warm(runs []lineRun) {
	var sum int64
	for _, r := range runs {
		i := int(r.set) * m.ways
		sum += int64(m.tags[i]) + m.fills[i] + m.fills[i+m.ways-1]
	}
	m.sink += sum
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

// transferTimes is a GM transfer's two times, relative to its start: the pipe is
// occupied until occupy (the data moving through the core's port), and the transfer
// completes at done (its last byte arrived: what a flag after it waits for).
type transferTimes struct{ occupy, done int64 }

// load is a TLOAD of view o issued at task time now by core c: its lines are looked up
// in L2; after the latency (L2HitCycles, or L2MissCycles when a line misses) the data
// moves through c's read port at L2ReadBytesPerCycle, within the L2's and (for the
// missed bytes) the HBM's total bandwidth left by earlier transfers. (npu-facts' GM
// figure of 32 B per cycle per core is HBM's rate shared by the 24 cores, which the
// HBM calendar gives when all of them miss, not a cap for one core missing alone.) A line another core is still filling
// is not fetched again: the load completes no earlier than that fill.
//
// With prefetch, the lines the load misses were prefetched while the task launched
// (sim_prefetch.go), as far as the core's share of the prefetch goes: they are in L2,
// filled before the task's first instruction.
func (m *memSystem) load(c *coreSim, base int, o Operand, now int64, prefetch bool) transferTimes {
	chip := m.chip
	var hitB, missB int64
	var waitFill int64
	lat := int64(chip.L2HitCycles)
	runs := m.transferLines(base, o)
	missing := 0 // the missed lines, moved to the front of runs
	for i := range runs {
		if i%prefetchChunk == 0 {
			m.warm(runs[i:min(len(runs), i+prefetchChunk)])
		}
		r := runs[i]
		hit, fill := m.access(int(r.set), int(r.line))
		if !hit && prefetch && c.prefetchLeft > 0 {
			c.prefetchLeft -= int64(chip.L2LineBytes)
			m.prefetched += int64(chip.L2LineBytes)
			hit = true // a new line's fill time is 0: it was there when the task began
		}
		if hit {
			hitB += int64(r.bytes)
			m.hits++
			waitFill = max(waitFill, fill)
		} else {
			missB += int64(r.bytes)
			m.misses++
			runs[missing] = r
			missing++
		}
	}
	if missB > 0 {
		lat = int64(chip.L2MissCycles)
	}
	p := m.portsOf(c)
	from := max(now+lat, p.read)
	end := m.cal.reserve(now, from, hitB, missB, chip.L2ReadBytesPerCycle, chip.L2ReadBytesPerCycle)
	p.read = end
	for _, r := range runs[:missing] {
		m.setFill(int(r.set), int(r.line), end)
	}
	// Lines filled by another core's load arrive with that fill and then at port speed.
	done := max(end, waitFill+int64(chip.L2LineBytes/max(1, chip.L2ReadBytesPerCycle)))
	return transferTimes{occupy: max(1, end-from), done: max(1, done-now)}
}

// store is a TSTORE of view o issued at now by core c whose pipe's own formula takes
// d (the fixpipe's or MTE3's rate): its lines are written into L2 (write-allocate)
// through c's write port at L2WriteBytesPerCycle and, the L2 being write-through, to
// HBM, within the total bandwidths; a task starts with a cold L2, so its outputs
// count once each way. The store completes when L2 has the data (L2HitCycles after
// its last byte leaves).
func (m *memSystem) store(c *coreSim, base int, o Operand, now, d int64) transferTimes {
	var bytes int64
	runs := m.transferLines(base, o)
	for i, r := range runs {
		if i%prefetchChunk == 0 {
			m.warm(runs[i:min(len(runs), i+prefetchChunk)])
		}
		m.access(int(r.set), int(r.line))
		m.fills[int(r.set)*m.ways] = 0 // the line is at way 0 after its access
		bytes += int64(r.bytes)
	}
	if bytes == 0 {
		return transferTimes{occupy: d, done: d}
	}
	chip := m.chip
	p := m.portsOf(c)
	from := max(now, p.write)
	end := m.cal.reserve(now, from, 0, bytes, chip.L2WriteBytesPerCycle, chip.L2WriteBytesPerCycle)
	end = max(end, now+d)
	p.write = end
	return transferTimes{occupy: max(1, end-now), done: max(1, end-now+int64(chip.L2HitCycles))}
}

// duration is the occupancy and completion of instruction in, issued at task time
// now by run r: the chip's formula, except that GM transfers go through the memory
// system.
func (m *memSystem) duration(r *blockRun, in *Instr, now int64) transferTimes {
	d := r.c.chip.duration(in)
	var o Operand
	switch in.Op {
	case isa.TPOP:
		// A queue slot is GM workspace its producer wrote just before: its lines are in
		// L2 (write-allocate), and the few slots of a queue are reused long before
		// anything could evict them, so a pop reads at the L2 hit rate and its slot
		// never costs HBM bandwidth.
		t := int64(r.c.chip.L2HitCycles) + ceilDiv(int64(in.Args[0].Bytes()), r.c.chip.L2ReadBytesPerCycle)
		return transferTimes{t, t}
	case isa.TLOAD:
		o = in.Args[1]
	case isa.TSTORE, isa.TSTORE_FP:
		o = in.Args[0]
	default:
		return transferTimes{d, d}
	}
	if o.Kind != isa.KindGM || o.GM.Param < 0 || o.GM.Param >= len(r.blk.ParamAddrs) {
		return transferTimes{d, d}
	}
	base := r.blk.ParamAddrs[o.GM.Param]
	if in.Op == isa.TLOAD {
		return m.load(r.c, base, o, now, m.prefetches(r, o.GM.Param))
	}
	return m.store(r.c, base, o, now, d)
}

// setOf is the L2 set of line l: a multiplicative hash of the line number, as real
// L2s hash their index so that power-of-two strides do not pile into a few sets.
func (m *memSystem) setOf(l int) int {
	return fastMod(uint32(uint64(l)*0x9E3779B97F4A7C15>>32), m.setDiv, uint64(m.sets))
}

// fastMod is a % d for d > 0 given div = ^uint64(0)/d + 1: the fraction a/d in 64
// bits times d (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
// 2019), exact for every 32-bit a and d; a division costs tens of cycles.
func fastMod(a uint32, div, d uint64) int {
	hi, _ := bits.Mul64(div*uint64(a), d)
	return int(hi)
}
