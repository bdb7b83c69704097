package lower

import (
	"slices"
	"sync"
)

// gmImages recycles an executable's GM images between runs: a run takes one, fills
// it and hands it back once its outputs are copied out, so repeated runs (eager ops in
// a loop, an executor called per batch) neither allocate nor fault in the program's
// whole memory each time. A recycled image is reset to what a fresh one would hold
// where the run can see it: the params are copied over, every other byte is cleared.
type gmImages struct {
	pool sync.Pool // of *[]byte, each of the executable's GMBytes
	once sync.Once
	gaps []gmRange // the bytes outside every param's buffer
}

type gmRange struct{ off, end int }

// get returns an image for one run of e: inputs (one per param) are not yet copied in.
func (g *gmImages) get(e *Executable) []byte {
	if p, _ := g.pool.Get().(*[]byte); p != nil && len(*p) == e.exec.GMBytes {
		gm := *p
		for _, r := range g.paramGaps(e) {
			clear(gm[r.off:r.end])
		}
		return gm
	}
	return make([]byte, e.exec.GMBytes)
}

// GMAllocator lends device memory to runs: a memory pool that several executables
// share.
type GMAllocator interface {
	// Acquire returns n bytes, holding whatever their last user left, and the function
	// that gives them back; it may wait while other runs hold the memory, until stop.
	Acquire(n int, stop <-chan struct{}) (gm []byte, release func(), err error)
}

// image returns the GM image of one run: lent by pool (cleared outside the params'
// buffers, as a fresh image is) or, without a pool, one of e's recycled images.
func (e *Executable) image(pool GMAllocator, stop <-chan struct{}) ([]byte, func(), error) {
	if pool == nil {
		return e.images.get(e), func() {}, nil
	}
	gm, release, err := pool.Acquire(e.exec.GMBytes, stop)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range e.images.paramGaps(e) {
		clear(gm[r.off:r.end])
	}
	return gm, release, nil
}

// put hands an image back; the caller must not use it again.
func (g *gmImages) put(gm []byte) { g.pool.Put(&gm) }

// paramGaps are the stretches of GM that no param's buffer covers, computed once.
func (g *gmImages) paramGaps(e *Executable) []gmRange {
	g.once.Do(func() {
		tg := e.exec.Blocks.Tiles
		var params []gmRange
		for _, t := range tg.Params {
			off := e.exec.Buffers[t].Offset
			params = append(params, gmRange{off, off + tg.Tensors[t].Type.Bytes()})
		}
		slices.SortFunc(params, func(a, b gmRange) int { return a.off - b.off })
		at := 0
		for _, p := range params {
			if p.off > at {
				g.gaps = append(g.gaps, gmRange{at, p.off})
			}
			at = max(at, p.end)
		}
		if at < e.exec.GMBytes {
			g.gaps = append(g.gaps, gmRange{at, e.exec.GMBytes})
		}
	})
	return g.gaps
}
