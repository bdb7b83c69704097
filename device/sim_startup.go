package device

// What a kernel pays between its launch and steady state, core by core, besides the
// task's launch constants (DispatchCycles, CoreStartCycles, PrologueCycles): its
// first instruction lines (instruction fetch, sim_icache.go), its first touches of GM
// pages (address translation, below), a cold L2 (every task starts with one,
// sim_memsys.go), and in a mixed task the set-up of the cross-core flags and the
// latency of each hand-off between a cube core and its vector cores (below). Each core
// counts the stalls of the first three and the set-up as its start-up
// (TaskStats.CoreStartupCycles), and the time its transfers and hand-offs waited for
// what other cores held (the L2's and the HBM's bandwidth, a line another core was
// filling, the cross-core flag unit) as its shared waits (CoreSharedWaitCycles).

// tlb is a core's address translation: the GM pages it holds, most recent first.
type tlb struct{ pages []int64 }

// translate looks up the pages of GM bytes [lo, hi) in core c's TLB and returns the
// cycles of the page walks the misses take (Chip.PageWalkCycles each, one after
// another); the pages become the most recent.
func (c *coreSim) translate(lo, hi int) int64 {
	ch := c.chip
	if ch.TLBEntries <= 0 || ch.GMPageBytes <= 0 || hi <= lo {
		return 0
	}
	var walks int64
	for p := int64(lo / ch.GMPageBytes); p <= int64((hi-1)/ch.GMPageBytes); p++ {
		t := &c.tlb.pages
		i := indexOf64(*t, p)
		if i < 0 {
			walks++
			if len(*t) < ch.TLBEntries {
				*t = append(*t, 0)
			}
			i = len(*t) - 1
		}
		copy((*t)[1:i+1], (*t)[:i])
		(*t)[0] = p
	}
	cost := walks * int64(ch.PageWalkCycles)
	c.startupStall += cost
	return cost
}

func indexOf64(s []int64, v int64) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// notifyCrossCore is when the other core of a hand-off sees a notification core c
// sends at task time at (a queue entry pushed, a slot freed): after the chip's
// cross-core flag unit, which takes one notification each CrossCoreFlagIssueCycles
// in the order they come (the shared loop starts instructions in task time order),
// has passed it on, and CrossCoreFlagCycles later. Without a shared memory system
// (cores simulated apart) the unit is not modelled.
func (c *coreSim) notifyCrossCore(at int64) int64 {
	m := c.mem
	if m == nil {
		return at
	}
	ch := m.chip
	sent := max(at, m.flagUnitFree)
	m.flagUnitFree = sent + int64(ch.CrossCoreFlagIssueCycles)
	c.sharedWait += sent - at
	return sent + int64(ch.CrossCoreFlagCycles)
}
