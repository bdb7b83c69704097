package session

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"pypto/core"
	"pypto/dtype"
)

// External is host memory owned outside the library (a torch tensor's storage, a
// numpy array) that concrete tensors read without copying it. The owner (the Python
// side) keeps the memory alive until the library reports, through ReleasedExternals,
// that nothing refers to the External any more: every tensor, bound constant and
// executor output that shares the bytes holds the External too, and a cleanup queues
// its id once the Go garbage collector finds it unreachable.
//
// Tensors never write their bytes (see Executor.Run), so sharing is safe on this side;
// a write by the owner is seen by every tensor that shares the memory.
type External struct {
	id    uint64
	start uintptr
	n     int
}

// externals is the process's account of external memory.
var externals struct {
	mu       sync.Mutex
	released []uint64
	live     int              // bytes of the distinct ranges registered and not yet released
	sinceGC  int              // bytes newly held since the last collection this file forced
	ranges   map[extRange]int // live records per memory range
}

// extRange is a range of external memory: records of one range hold one buffer.
type extRange struct {
	start uintptr
	n     int
}

// externalGCBytes is how much external memory may be newly held between two
// collections forced here (assumed: the Go collector paces itself by the Go heap, which
// does not count external memory, so a loop wrapping large buffers could otherwise
// keep many of them alive long after their last use). Wrapping a range that a live
// record already holds (the same tensor converted again) holds nothing new, so it
// costs no collection: a forced collection scans the whole Go heap, tens of
// milliseconds once a model is compiled.
const externalGCBytes = 256 << 20

// FromExternal returns a concrete tensor of type dt[shape] whose bytes are the n =
// dt.Size()*elements bytes at ptr, without a copy. ptr must be aligned to the element
// size and stay valid until id is reported by ReleasedExternals.
func FromExternal(dt dtype.DType, shape []int, ptr unsafe.Pointer, id uint64) (*Tensor, error) {
	t := core.TensorType{DType: dt, Shape: core.Shape(shape).Clone()}
	if err := checkType(t); err != nil {
		return nil, err
	}
	n := t.Bytes()
	if n > 0 && ptr == nil {
		return nil, core.Errorf(core.ValueError, "null data pointer for a non-empty tensor of shape %v", t.Shape)
	}
	if n > 0 && uintptr(ptr)%uintptr(dt.Size()) != 0 {
		return nil, core.Errorf(core.ValueError, "data pointer %#x is not aligned to the %d-byte elements of %s", uintptr(ptr), dt.Size(), dt.LongName())
	}
	r := extRange{uintptr(ptr), n}
	maybeCollect(r)
	ext := &External{id: id, start: r.start, n: n}
	runtime.AddCleanup(ext, releaseExternal, externalRelease{id, r})
	var data []byte
	if n > 0 {
		data = unsafe.Slice((*byte)(ptr), n)
	} else {
		data = []byte{}
	}
	return &Tensor{typ: t, kind: concrete, data: data, keep: ext}, nil
}

type externalRelease struct {
	id uint64
	r  extRange
}

func releaseExternal(x externalRelease) {
	externals.mu.Lock()
	externals.released = append(externals.released, x.id)
	if externals.ranges[x.r]--; externals.ranges[x.r] == 0 {
		delete(externals.ranges, x.r)
		externals.live -= x.r.n
	}
	externals.mu.Unlock()
}

// maybeCollect counts a new record of range r and runs the garbage collector when
// much external memory was newly held since the last time, so that buffers no longer
// referred to are reported released.
func maybeCollect(r extRange) {
	externals.mu.Lock()
	if externals.ranges == nil {
		externals.ranges = map[extRange]int{}
	}
	held := externals.ranges[r] > 0
	externals.ranges[r]++
	if held {
		externals.mu.Unlock()
		return
	}
	// Checked before counting r: wrapping one large buffer costs no collection; the
	// next new buffer after 256 MiB or more pays for one.
	collect := externals.sinceGC >= externalGCBytes
	if collect {
		externals.sinceGC = 0
	}
	externals.live += r.n
	externals.sinceGC += r.n
	externals.mu.Unlock()
	if collect {
		runtime.GC()
	}
}

// ReleasedExternals returns (and forgets) the ids of external buffers nothing refers
// to any more, and the bytes of external memory still referred to. collect first runs
// the garbage collector, so that every buffer unreachable now is in the list.
func ReleasedExternals(collect bool) ([]uint64, int) {
	if collect {
		collectExternals()
	}
	externals.mu.Lock()
	defer externals.mu.Unlock()
	ids := externals.released
	externals.released = nil
	return ids, externals.live
}

// collectExternals runs the garbage collector and waits (up to a second) until the
// cleanups it queued have run: cleanups run after the collection returns, in the order
// queued, so a sentinel queued by a second collection runs after them.
func collectExternals() {
	runtime.GC()
	done := make(chan struct{})
	runtime.AddCleanup(new([64]byte), func(c chan struct{}) { close(c) }, done)
	runtime.GC()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// keepOf returns the External (among keeps) whose memory holds data, or nil: results
// of a run may share a buffer of an input instead of being new memory.
func keepOf(data []byte, keeps []*External) *External {
	if len(data) == 0 || len(keeps) == 0 {
		return nil
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	for _, k := range keeps {
		if k != nil && p >= k.start && p < k.start+uintptr(k.n) {
			return k
		}
	}
	return nil
}

// Keep returns the External the tensor's bytes belong to (nil: library memory).
func (t *Tensor) Keep() *External {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keep
}
