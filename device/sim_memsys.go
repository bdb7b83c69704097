package device

import "pypto/isa"

// memSystem is the part of the memory hierarchy all cores of a task share: an LRU L2
// over GM lines and the HBM bandwidth behind it. It is used only when the chip has an
// L2 (Chip.L2Bytes > 0); then RunTask simulates the cores in one event loop in task
// time order (sim_shared.go), so the L2 sees accesses in the order they happen and
// the result is deterministic.
type memSystem struct {
	chip *Chip
	// The LRU list over lines, in dense arrays indexed by line (GM byte / line
	// size); index lines is the list's head sentinel. Most recent first.
	prev, next []int32
	in         []bool
	lines      int // lines in GM
	held, cap  int // lines in L2, and how many fit
	// missEnds holds the end time (task cycles) of every load with a missing line
	// still in flight: the cores that share HBM with a new miss.
	missEnds     []int64
	hits, misses int64
}

func newMemSystem(chip *Chip, gmBytes int) *memSystem {
	n := (gmBytes + chip.L2LineBytes - 1) / chip.L2LineBytes
	m := &memSystem{chip: chip, lines: n, cap: max(1, chip.L2Bytes/chip.L2LineBytes),
		prev: make([]int32, n+1), next: make([]int32, n+1), in: make([]bool, n)}
	m.prev[n], m.next[n] = int32(n), int32(n)
	return m
}

// touch makes line l the most recent, inserting it (and evicting the least recent
// line when L2 is full) if it was absent; it reports whether it was present.
func (m *memSystem) touch(l int) bool {
	h := int32(m.lines)
	li := int32(l)
	hit := m.in[l]
	if hit {
		if m.next[h] == li {
			return true
		}
		m.next[m.prev[li]], m.prev[m.next[li]] = m.next[li], m.prev[li]
	} else {
		m.in[l] = true
		m.held++
		if m.held > m.cap {
			old := m.prev[h]
			m.next[m.prev[old]], m.prev[h] = h, m.prev[old]
			m.in[old] = false
			m.held--
		}
	}
	m.next[li], m.prev[li] = m.next[h], h
	m.prev[m.next[h]], m.next[h] = li, li
	return hit
}

// window calls f with each line the GM window of view o (param at GM byte base)
// touches, row by row, and the bytes of the row in that line. Lines outside GM are
// skipped: the run-time checks report such windows.
func (m *memSystem) window(base int, o Operand, f func(line, bytes int)) {
	v := o.GM
	es := o.DType.Size()
	if v.Rows <= 0 || v.Cols <= 0 {
		return
	}
	span := ((v.Cols-1)*v.ColStride + 1) * es
	lb := m.chip.L2LineBytes
	for r := range v.Rows {
		lo := base + (v.Offset+r*v.RowStride)*es
		hi := lo + span
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
		live := m.missEnds[:0]
		for _, e := range m.missEnds {
			if e > now {
				live = append(live, e)
			}
		}
		m.missEnds = live
		share := min(c.L2ReadBytesPerCycle, max(1, c.HBMBytesPerCycle/(len(live)+1)))
		d = int64(c.L2MissCycles) + ceilDiv(hitB, c.L2ReadBytesPerCycle) + ceilDiv(missB, share)
		m.missEnds = append(m.missEnds, now+d)
	}
	return max(1, d)
}

// store writes the lines of view o into L2 (write-allocate).
func (m *memSystem) store(base int, o Operand) {
	m.window(base, o, func(l, _ int) { m.touch(l) })
}

// duration is the time instruction in takes when it starts at task time now: the
// chip's formula, except that GM loads go through the memory system and stores
// update it.
func (m *memSystem) duration(r *blockRun, in *Instr, now int64) int64 {
	d := r.c.chip.duration(in)
	var o Operand
	switch in.Op {
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
	m.store(base, o)
	return d
}
