package session

import (
	"sync"

	"pypto/core"
	"pypto/internal/checked"
)

// MemoryPool is device memory of a fixed size that lends each run of the executors
// using it the GM image its program needs, and takes it back when the run is over: one
// arena, reused run after run and shared by every executor that uses the pool.
//
// Release is delayed to the end of a run: a run's region goes back to the pool only
// after its last task has finished and its outputs are copied out, so no task ever
// reads bytes another run is writing. (Inside a run, the program's memory plan reuses
// an intermediate's bytes only once every task that reads it is ordered before the
// task that overwrites them.) A run that finds no free region large enough waits for
// another run to give one back; every program is checked at compile time to fit the
// whole pool, so it always gets one eventually.
type MemoryPool struct {
	size int

	mu      sync.Mutex
	arena   []byte // allocated at the first run
	free    []span // free regions, by offset, coalesced
	changed chan struct{}
	stats   PoolStats
	// blocked counts the times a run found no free region and began to wait: tests wait
	// on it rather than on a sleep that a loaded machine can outlast.
	blocked int
}

type span struct{ off, end int }

// PoolStats describe a pool's use so far.
type PoolStats struct {
	SizeBytes  int `json:"size_bytes"`
	InUseBytes int `json:"in_use_bytes"` // lent to runs in progress
	// HighWaterBytes is the most lent at once; the arena is touched up to
	// ArenaTouchedBytes from its start (regions are placed first fit, so sequential
	// runs reuse the same bytes).
	HighWaterBytes    int   `json:"high_water_bytes"`
	ArenaTouchedBytes int   `json:"arena_touched_bytes"`
	Runs              int64 `json:"runs"`        // regions lent
	WaitedRuns        int64 `json:"waited_runs"` // runs that waited for another to give memory back
	Live              int   `json:"live_runs"`   // runs holding a region now
}

// NewMemoryPool makes a pool of size bytes (its memory is allocated at the first run).
func NewMemoryPool(size int) (*MemoryPool, error) {
	if size <= 0 {
		return nil, core.Errorf(core.ValueError, "a memory pool needs a positive size in bytes, got %d", size)
	}
	if err := checked.Host(size, func() string { return "the memory pool" }); err != nil {
		return nil, core.Errorf(core.MemoryError, "%v", err).Suggest("ask for a smaller pool: the size of the largest program's memory plan (executor.info()[\"memory\"][\"peak_bytes\"]) is enough for one run at a time")
	}
	return &MemoryPool{size: size, free: []span{{0, size}}, changed: make(chan struct{}), stats: PoolStats{SizeBytes: size}}, nil
}

// Size is the pool's size in bytes.
func (p *MemoryPool) Size() int { return p.size }

// Stats reports the pool's use so far.
func (p *MemoryPool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Acquire lends n bytes of the arena (their contents are what the last user left) and
// returns the function that gives them back. It waits while no free region is large
// enough; stop (Ctrl-C) ends the wait with an error.
func (p *MemoryPool) Acquire(n int, stop <-chan struct{}) ([]byte, func(), error) {
	if n > p.size {
		return nil, nil, core.Errorf(core.MemoryError, "a run needs %d bytes of device memory, but the memory pool holds %d", n, p.size).
			Suggest("make the pool larger: p.MemoryPool(size=%d) or more", n)
	}
	n = max(n, 1)
	waited := false
	for {
		p.mu.Lock()
		if p.arena == nil {
			p.arena = make([]byte, p.size)
		}
		if off, ok := p.take(n); ok {
			p.stats.Runs++
			if waited {
				p.stats.WaitedRuns++
			}
			p.stats.Live++
			p.stats.InUseBytes += n
			p.stats.HighWaterBytes = max(p.stats.HighWaterBytes, p.stats.InUseBytes)
			p.stats.ArenaTouchedBytes = max(p.stats.ArenaTouchedBytes, off+n)
			gm := p.arena[off : off+n : off+n]
			p.mu.Unlock()
			var once sync.Once
			return gm, func() { once.Do(func() { p.give(span{off, off + n}) }) }, nil
		}
		changed := p.changed
		p.blocked++
		p.mu.Unlock()
		waited = true
		select {
		case <-changed:
		case <-stop:
			return nil, nil, core.Errorf(core.Interrupted, "interrupted while waiting for %d bytes of the memory pool", n)
		}
	}
}

// take removes the first free region of n bytes; p.mu is held.
func (p *MemoryPool) take(n int) (int, bool) {
	for i, s := range p.free {
		if s.end-s.off < n {
			continue
		}
		off := s.off
		if s.off+n == s.end {
			p.free = append(p.free[:i], p.free[i+1:]...)
		} else {
			p.free[i].off += n
		}
		return off, true
	}
	return 0, false
}

// give returns a region, merging it with its free neighbours, and wakes waiting runs.
func (p *MemoryPool) give(r span) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := 0
	for i < len(p.free) && p.free[i].off < r.off {
		i++
	}
	p.free = append(p.free, span{})
	copy(p.free[i+1:], p.free[i:])
	p.free[i] = r
	if i+1 < len(p.free) && p.free[i].end == p.free[i+1].off {
		p.free[i].end = p.free[i+1].end
		p.free = append(p.free[:i+1], p.free[i+2:]...)
	}
	if i > 0 && p.free[i-1].end == p.free[i].off {
		p.free[i-1].end = p.free[i].end
		p.free = append(p.free[:i], p.free[i+1:]...)
	}
	p.stats.Live--
	p.stats.InUseBytes -= r.end - r.off
	close(p.changed)
	p.changed = make(chan struct{})
}
