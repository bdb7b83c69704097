package device

import (
	"sync"

	"pypto/isa"
)

// The cores' buffers (L1, L0, UB: hundreds of kilobytes per core) are recycled between
// tasks: fresh ones cost page faults and garbage collections on every run (1.5 of 19
// ms for the 1024^3 GEMM of bench/sim_speed.py).
var bufferPools [isa.NumLocations]sync.Pool // of *[]byte

// newBuffer returns n zero bytes for a core's buffer at loc, reusing a released one
// of that location when it is large enough.
func newBuffer(loc, n int) []byte {
	if p, _ := bufferPools[loc].Get().(*[]byte); p != nil && cap(*p) >= n {
		b := (*p)[:n]
		clear(b)
		return b
	}
	return make([]byte, n)
}

// releaseBuffers hands the cores' buffers and block runs (releaseRuns) back for later
// tasks; the cores must not run again.
func releaseBuffers(sims []*coreSim) {
	releaseRuns(sims)
	for _, c := range sims {
		for loc, b := range c.bufs {
			releaseBuffer(loc, b)
			c.bufs[loc] = nil
		}
	}
}

// releaseBuffer hands one buffer of loc back for later tasks.
func releaseBuffer(loc int, b []byte) {
	if cap(b) > 0 {
		bufferPools[loc].Put(&b)
	}
}

// allocBuffers gives each core its own buffers, of its extents.
func allocBuffers(sims []*coreSim) {
	for _, c := range sims {
		for loc, n := range c.extent {
			if n > 0 {
				c.bufs[loc] = newBuffer(loc, n)
			}
		}
	}
}
