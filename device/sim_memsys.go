package device

import "pypto/isa"

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
	chip  *Chip
	l2    *l2Tags // the L2's directory (sim_l2.go)
	lines int     // lines in GM
	cal   calendar
	ports []corePorts // by the cores' portSlot
	// missed lists the runs of lines the transfer being simulated missed, reused by
	// every transfer.
	missed []lineRange

	hits, misses int64
	// prefetched counts the bytes of the lines the cores' first loads found
	// prefetched; written caches which params each program stores into.
	prefetched int64
	written    map[*MachineProgram][]bool
	// hbmRead counts the bytes read from HBM: the fills of the lines loads missed
	// (whole lines); hbmWritten the bytes written to it: stores written through and
	// dirty lines written back when evicted.
	hbmRead, hbmWritten int64
	// shared is the run's L2 the task found (RunOptions.L2), nil for a cold L2 of the
	// task's own; log, with it, records the directory's lookups for the timing cache.
	shared *SharedL2
	log    []l2Op
	// flagUnitFree is when the chip's cross-core flag unit takes its next
	// notification (sim_startup.go).
	flagUnitFree int64
}

// corePorts is when each of a core's two GM paths is free: reads (MTE2's loads and
// pops) and writes (stores and pushes).
type corePorts struct{ read, write int64 }

// newMemSystem is the memory system of a task on chip with a GM of gmBytes: a cold
// L2 of its own, or the run's shared one (nil: none).
func newMemSystem(chip *Chip, gmBytes int, shared *SharedL2) *memSystem {
	ways := max(1, chip.L2Ways)
	sets := max(1, chip.L2Bytes/(chip.L2LineBytes*ways))
	lines := (gmBytes + chip.L2LineBytes - 1) / chip.L2LineBytes
	m := &memSystem{chip: chip, lines: lines, shared: shared}
	if shared != nil {
		m.l2 = shared.take(chip, gmBytes)
	} else {
		m.l2 = takeL2(sets, ways, lines)
	}
	m.cal = calendar{l2: int64(chip.L2TotalBytesPerCycle), hbm: int64(chip.HBMBytesPerCycle), origin: int64(chip.StartCycles())}
	return m
}

// release hands the L2's directory to later tasks (to the run's next task when it is
// shared: key names the task for the timing cache, keyed says it has one); m must
// not be used again.
func (m *memSystem) release(key string, keyed bool) {
	if m.shared != nil {
		m.shared.endTask(key, keyed)
	} else {
		m.l2.release()
	}
	m.l2 = nil
}

// note records a lookup of lines first..last for the timing cache's replay, when the
// L2 is the run's.
func (m *memSystem) note(first, last int, kind uint8) {
	if m.shared != nil {
		m.log = append(m.log, l2Op{int32(first), int32(last), kind})
	}
}

// writeBacks books on the HBM the dirty lines the lookups just made evicted, from
// time from on (the bandwidth they take delays later transfers, not this one's
// issue: the L2 writes them while the transfer waits for its data).
func (m *memSystem) writeBacks(now, from int64) {
	if m.l2.wroteBack == 0 {
		return
	}
	b := m.l2.wroteBack * int64(m.chip.L2LineBytes)
	m.l2.wroteBack = 0
	m.hbmWritten += b
	m.cal.reserve(now, from, 0, b, m.chip.HBMBytesPerCycle)
}

func (m *memSystem) portsOf(c *coreSim) *corePorts {
	if c.portSlot == 0 { // a mixed task's cube and vector cores share indices: a slot each
		m.ports = append(m.ports, corePorts{})
		c.portSlot = len(m.ports)
	}
	return &m.ports[c.portSlot-1]
}

// touch accesses line l in L2 (l2Tags.access) and reports whether it was present.
func (m *memSystem) touch(l int) bool {
	hit, _ := m.l2.access(l)
	return hit
}

// setOf is the L2 set of line l.
func (m *memSystem) setOf(l int) int { return m.l2.setOf(l) }

// window calls f with each contiguous byte range [lo, hi) of GM that the window of
// view o (param at GM byte base) touches, run by run. A run is a contiguous stretch of
// the window: a row when columns are adjacent, a column when rows are (a transposed
// view, which the DMA reads as the rows of the stored matrix), else one element; so a
// transposed window moves the bytes it holds, not the gaps between them. Adjacent
// rows of whole lines are one run, which looks up the same lines. Bytes
// outside GM are skipped: the run-time checks report such windows.
func (m *memSystem) window(base int, o Operand, f func(lo, hi int)) {
	v := o.GM
	es := o.DType.Size()
	if v.Rows <= 0 || v.Cols <= 0 {
		return
	}
	runs, runStride, runLen := v.Rows, v.RowStride, ((v.Cols-1)*v.ColStride+1)*es // rows
	perElement := false
	switch {
	case v.ColStride == 1 && v.RowStride == v.Cols && lineAligned(base+v.Offset*es, v.Cols*es, m.chip.L2LineBytes):
		runs, runLen = 1, v.Rows*v.Cols*es // adjacent rows of whole lines: one run
	case v.ColStride <= 1 || v.Cols == 1:
	case v.RowStride == 1 || v.Rows == 1:
		runs, runStride, runLen = v.Cols, v.ColStride, ((v.Rows-1)*v.RowStride+1)*es // columns
	default: // neither axis is contiguous: element by element
		runs, runLen, perElement = v.Rows*v.Cols, es, true
	}
	end := m.lines * m.chip.L2LineBytes
	for r := range runs {
		start := v.Offset + r*runStride
		if perElement {
			start = v.Offset + (r/v.Cols)*v.RowStride + (r%v.Cols)*v.ColStride
		}
		lo := base + start*es
		if lo, hi := max(lo, 0), min(lo+runLen, end); lo < hi {
			f(lo, hi)
		}
	}
}

// lineAligned reports whether rows of rowBytes from byte at on are whole lines of lb.
func lineAligned(at, rowBytes, lb int) bool { return lb > 0 && at%lb == 0 && rowBytes%lb == 0 }

// transferTimes is a GM transfer's two times, relative to its start: the pipe is
// occupied until occupy (the data moving through the core's port), and the transfer
// completes at done (its last byte arrived: what a flag after it waits for). latency
// is the memory's access latency included in done (a read's wait for its first data
// less MTE2's own set-up, readWait; a store's completion in L2).
type transferTimes struct{ occupy, done, latency int64 }

// readWait splits what a GM read waits before its first data (wait: the L2 hit or
// miss latency, with the address translation) into MTE2's own set-up, the first
// LoadSetupCycles of it (decoding the transfer, generating its addresses), and the
// memory's latency, which it returns. The presets' latencies count from the read's
// start, set-up included (as PipeStartup does without an L2), so the split moves no
// time: it is what a measurement of the instruction sees, which counts the engine's
// set-up and data but not the wait for the memory (device/calib/instr.go).
func (m *memSystem) readWait(wait int64) int64 {
	return wait - min(wait, int64(m.chip.LoadSetupCycles))
}

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
func (m *memSystem) load(c *coreSim, base int, o Operand, now int64, prefetch bool, strided int64) transferTimes {
	chip := m.chip
	var bytes, missLines int64
	var waitFill int64
	lat := int64(chip.L2HitCycles)
	lb := chip.L2LineBytes
	id := m.l2.newLoad()
	m.missed = m.missed[:0]
	m.l2.own = 0
	var span0, span1 int
	m.window(base, o, func(lo, hi int) {
		if bytes == 0 {
			span0 = lo
		}
		span1 = max(span1, hi)
		first := len(m.missed)
		var fill int64
		m.missed, fill = m.l2.accessRun(lo/lb, (hi-1)/lb, false, id, m.missed)
		m.note(lo/lb, (hi-1)/lb, l2Load)
		waitFill = max(waitFill, fill)
		if prefetch {
			m.missed = m.takePrefetched(c, m.missed, first)
		}
		var runMissLines int64
		for _, r := range m.missed[first:] {
			runMissLines += int64(r.last-r.first) + 1
		}
		missLines += runMissLines
		m.hits += int64((hi-1)/lb-lo/lb+1) - runMissLines
		bytes += int64(hi - lo)
	})
	// A line the transfer itself missed and touches again (the next row of a window
	// whose rows are shorter than a line) is the same fill, not a hit.
	m.hits -= m.l2.own
	m.misses += missLines
	m.hbmRead += missLines * int64(lb)
	if missLines > 0 {
		lat = int64(chip.L2MissCycles)
	}
	lat += c.translate(span0, span1)
	p := m.portsOf(c)
	// The L2 fills whole lines from HBM, whatever part of them the window uses; a
	// strided window moves no faster than its bursts (stridedBursts).
	from := max(now+lat, p.read)
	m.writeBacks(now, now)
	alone := from + max(strided, ceilDiv(bytes, chip.L2ReadBytesPerCycle))
	end := m.cal.reserve(now, from, bytes, missLines*int64(lb), chip.L2ReadBytesPerCycle)
	end = max(end, from+strided)
	p.read = end
	m.l2.setEnd(id, end)
	// Lines filled by another core's load arrive with that fill and then at port speed.
	done := max(end, waitFill+int64(chip.L2LineBytes/max(1, chip.L2ReadBytesPerCycle)))
	c.sharedWait += max(0, done-alone) // the calendar's share and other cores' fills
	return transferTimes{occupy: max(1, end-from), done: max(1, done-now), latency: m.readWait(lat)}
}

// takePrefetched takes out of the runs of missed lines from first on those that core c's
// share of the task's prefetch brought in, first lines first: they were filled
// before the task's first instruction (fill 0) and are not fetched again.
func (m *memSystem) takePrefetched(c *coreSim, missed []lineRange, first int) []lineRange {
	lb := int64(m.chip.L2LineBytes)
	kept := first
	for _, r := range missed[first:] {
		if c.prefetchLeft > 0 {
			n := min(int64(r.last-r.first)+1, (c.prefetchLeft+lb-1)/lb) // lines prefetched
			c.prefetchLeft -= n * lb
			m.prefetched += n * lb
			for l := r.first; l < r.first+int32(n); l++ {
				m.l2.fill[l] = 0
			}
			if r.first += int32(n); r.first > r.last {
				continue
			}
		}
		missed[kept] = r
		kept++
	}
	return missed[:kept]
}

// store is a TSTORE of view o issued at now by core c whose pipe's own formula takes
// d (the fixpipe's or MTE3's rate): its lines are written into L2 (write-allocate)
// through c's write port at L2WriteBytesPerCycle and, the L2 being write-through, to
// HBM, within the total bandwidths; a task starts with a cold L2, so its outputs
// count once each way. In a run's SharedL2 a store into the workspace is written back
// instead: its lines stay in L2, dirty, and take no HBM bandwidth until evicted. The
// store completes when L2 has the data (L2HitCycles after its last byte leaves).
func (m *memSystem) store(c *coreSim, base int, o Operand, now, d int64) transferTimes {
	var through, back int64
	var span0, span1 int
	m.window(base, o, func(lo, hi int) {
		if through+back == 0 {
			span0 = lo
		}
		span1 = max(span1, hi)
		lb := m.chip.L2LineBytes
		wb := m.shared != nil && m.shared.writesBack(lo)
		m.l2.writeRun(lo/lb, (hi-1)/lb, wb)
		if wb {
			back += int64(hi - lo)
			m.note(lo/lb, (hi-1)/lb, l2StoreBack)
		} else {
			through += int64(hi - lo)
			m.note(lo/lb, (hi-1)/lb, l2StoreThrough)
		}
	})
	if through+back == 0 {
		return transferTimes{occupy: d, done: d}
	}
	chip := m.chip
	p := m.portsOf(c)
	from := max(now+c.translate(span0, span1), p.write)
	m.writeBacks(now, now)
	m.hbmWritten += through
	alone := max(from+ceilDiv(back+through, chip.L2WriteBytesPerCycle), now+d)
	end := m.cal.reserve(now, from, back+through, through, chip.L2WriteBytesPerCycle)
	end = max(end, now+d)
	c.sharedWait += max(0, end-alone)
	p.write = end
	return transferTimes{occupy: max(1, end-now), done: max(1, end-now+int64(chip.L2HitCycles)), latency: int64(chip.L2HitCycles)}
}

// duration is the occupancy and completion of instruction in, issued at task time
// now by run r: the chip's formula, except that GM transfers go through the memory
// system.
func (m *memSystem) duration(r *blockRun, in *Instr, now int64) transferTimes {
	var o Operand
	switch in.Op {
	case isa.TPOP, isa.TPUSH:
		return m.handOff(r.c, in, now)
	case isa.TLOAD:
		o = in.Args[1]
	case isa.TSTORE, isa.TSTORE_FP:
		o = in.Args[0]
	default:
		return r.c.chip.times(in)
	}
	if o.Kind != isa.KindGM || o.GM.Param < 0 || o.GM.Param >= len(r.blk.ParamAddrs) {
		return r.c.chip.times(in)
	}
	base := r.blk.ParamAddrs[o.GM.Param]
	if in.Op == isa.TLOAD { // the pipe's own formula does not apply: the memory system times it
		return m.load(r.c, base, o, now, m.prefetches(r, o.GM.Param), stridedBursts(r.c.chip, in))
	}
	return m.store(r.c, base, o, now, r.c.chip.duration(in))
}

// handOff is a queue transfer issued at now by core c: a TPOP reads its slot, a
// TPUSH writes it. A slot is GM workspace its producer wrote just before: its lines
// are in L2 (write-allocate), and the few slots of a queue are reused long before
// anything could evict them, so a pop reads at the L2 hit latency, and a slot never
// costs HBM bandwidth. Both go through the core's port and the L2's total bandwidth
// like any transfer, so that cores handing tiles to each other share what the L2
// carries; a push takes at least its pipe's own formula (the fixpipe's or MTE3's).
func (m *memSystem) handOff(c *coreSim, in *Instr, now int64) transferTimes {
	chip := m.chip
	p := m.portsOf(c)
	if in.Op == isa.TPOP {
		bytes := int64(in.Args[0].Bytes())
		lat := int64(chip.L2HitCycles)
		from := max(now+lat, p.read)
		alone := from + ceilDiv(bytes, chip.L2ReadBytesPerCycle)
		end := m.cal.reserve(now, from, bytes, 0, chip.L2ReadBytesPerCycle)
		p.read = end
		c.sharedWait += max(0, end-alone)
		return transferTimes{occupy: max(1, end-from), done: max(1, end-now), latency: m.readWait(lat)}
	}
	d := chip.duration(in)
	bytes := int64(in.Args[1].Bytes())
	from := max(now, p.write)
	alone := max(from+ceilDiv(bytes, chip.L2WriteBytesPerCycle), now+d)
	end := max(m.cal.reserve(now, from, bytes, 0, chip.L2WriteBytesPerCycle), now+d)
	p.write = end
	c.sharedWait += max(0, end-alone)
	return transferTimes{occupy: max(1, end-now), done: max(1, end-now)}
}
