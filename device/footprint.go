package device

// footprint is the number of distinct GM bytes the blocks of a task read and wrote:
// the union of the byte runs of every window (static ones and those moved by
// registers, as they ran), reads and writes apart, from the windows sorted by start
// (sortedIntervals). It is what the task moves between HBM and an L2 that holds its
// data, whatever the tiling re-reads from L2, so the compiler's fusion and tiling can
// be judged against the compulsory bytes of a program (bench/kernels.py).
func footprint(sorted []gmInterval) (read, written int64) {
	var rd, wr unionSweep
	for _, iv := range sorted {
		if iv.write {
			wr.add(iv)
		} else {
			rd.add(iv)
		}
	}
	return rd.total, wr.total
}

// unionSweep sums the size of the union of intervals given in increasing start.
type unionSweep struct {
	total   int64
	end     int
	started bool
}

func (u *unionSweep) add(iv gmInterval) {
	lo := iv.lo
	if u.started {
		lo = max(lo, u.end)
	}
	if iv.hi > lo {
		u.total += int64(iv.hi - lo)
	}
	if !u.started || iv.hi > u.end {
		u.end = iv.hi
	}
	u.started = true
}
