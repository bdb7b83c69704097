package device

// calendar shares the L2's and the HBM's total bandwidth between the transfers of a
// task: time is cut into buckets of bucketCycles, each with the bytes the L2 and the
// HBM can move in it, and each transfer takes, bucket by bucket from when its data
// starts to move, what its core's port allows of what earlier transfers left. The
// shared event loop starts transfers in task time order, so earlier requests are
// served first, as a memory controller's queue does, and a core that asks when the
// others already use the whole bandwidth waits for its share.
type calendar struct {
	l2, hbm int64 // bytes per cycle in total (0: unlimited)
	// origin is the task time of the buckets' grid: the kernels' first instruction, so
	// that a task's start constants shift its kernel without changing it.
	origin int64
	base   int64 // bucket number of used[0]
	used   []bucket
	// hbmFull is a bucket number before which every bucket's HBM bytes are used up: a
	// transfer of missed bytes alone moves nothing there, so it starts looking at
	// hbmFull (streaming cores keep the HBM full for many buckets ahead).
	hbmFull int64
}

type bucket struct{ l2, hbm int64 }

// bucketCycles is the calendar's resolution: short against a GM transfer (a 16 KB
// load takes about 150 cycles at a core's port), long enough to keep few buckets.
const bucketCycles = 64

// reserve moves bytes through a core's port (port bytes per cycle) and the L2 from
// time from on, and hbm bytes through the HBM in proportion as they move (a load's
// fills of the lines it missed, a store's write-through; 0 for a load that hits),
// within what the buckets have left. The fills are whole lines, so hbm may exceed the
// bytes the port delivers (a window using part of each line it misses). now is the
// event loop's time (no later call starts before it). It returns when the last byte
// has moved.
func (c *calendar) reserve(now, from, bytes, hbm int64, port int) int64 {
	now, from = now-c.origin, from-c.origin
	c.trim(now)
	t := max(0, from)
	if hbm > 0 && c.hbm > 0 {
		t = max(t, c.hbmFull*bucketCycles)
	}
	p := int64(max(1, port))
	defer c.advanceFull()
	total, hbmTotal := bytes, hbm
	for bytes > 0 || hbm > 0 {
		b := t / bucketCycles
		cyc := (b+1)*bucketCycles - t
		u := c.at(b)
		// What the bucket has left, and no more than its rate over the part of the
		// bucket still ahead.
		mv := min(bytes, p*cyc)
		if c.l2 > 0 {
			mv = min(mv, max(0, min(c.l2*bucketCycles-u.l2, c.l2*cyc)))
		}
		hv := hbm
		if bytes > 0 {
			hv = min(hbm, ceilDiv(mv*hbmTotal, int(max(1, total))))
		}
		if c.hbm > 0 && hv > 0 {
			if left := max(0, min(c.hbm*bucketCycles-u.hbm, c.hbm*cyc)); hv > left {
				// The HBM's share binds: move only what its bytes carry.
				hv = left
				if bytes > 0 {
					mv = min(mv, hv*total/max(1, hbmTotal))
				}
			}
		}
		u.l2 += mv
		u.hbm += hv
		bytes -= mv
		hbm -= hv
		if bytes == 0 && hbm == 0 {
			// The last bucket: the time what moved in it takes at the port's and the
			// totals' rates.
			need := ceilDiv(mv, int(p))
			if c.l2 > 0 {
				need = max(need, ceilDiv(mv, int(c.l2)))
			}
			if c.hbm > 0 {
				need = max(need, ceilDiv(hv, int(c.hbm)))
			}
			return c.origin + t + min(need, cyc)
		}
		t = (b + 1) * bucketCycles
	}
	return c.origin + t
}

// advanceFull moves hbmFull past the buckets whose HBM bytes are used up.
func (c *calendar) advanceFull() {
	if c.hbm <= 0 {
		return
	}
	c.hbmFull = max(c.hbmFull, c.base)
	for i := c.hbmFull - c.base; i < int64(len(c.used)) && c.used[i].hbm >= c.hbm*bucketCycles; i++ {
		c.hbmFull++
	}
}

// at is the bucket of number b, appending empty ones as needed.
func (c *calendar) at(b int64) *bucket {
	i := b - c.base
	for int64(len(c.used)) <= i {
		c.used = append(c.used, bucket{})
	}
	return &c.used[i]
}

// trim drops the buckets before time t, the event loop's time: transfers are issued
// in task time order and move no earlier than they are issued, so no later one
// reaches them.
func (c *calendar) trim(t int64) {
	drop := t/bucketCycles - c.base
	if drop <= 0 || drop < int64(len(c.used))/2 {
		return
	}
	if drop >= int64(len(c.used)) {
		c.used, c.base = c.used[:0], t/bucketCycles
		return
	}
	c.used = append(c.used[:0], c.used[drop:]...)
	c.base += drop
}
