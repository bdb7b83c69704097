package lower

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// inParallel calls do(i) for i in [0, n) on up to GOMAXPROCS goroutines, claiming
// indices in increasing order. Once do(i) fails (returns false or panics), indices
// above i that have not started are skipped, while those below i still run: a caller
// that records results by index then finds the first failure in index order, as a
// sequential loop would. When that first failure is a panic, it is raised again in the
// caller's goroutine (where Compile turns it into an error).
func inParallel(n int, do func(i int) bool) {
	var (
		next atomic.Int64
		stop atomic.Int64 // the lowest failed index, n if none
		wg   sync.WaitGroup
		mu   sync.Mutex
		// the lowest index that panicked, and its value
		panicAt  = int64(n)
		panicked any
	)
	stop.Store(int64(n))
	fail := func(i int64) {
		for s := stop.Load(); i < s && !stop.CompareAndSwap(s, i); s = stop.Load() {
		}
	}
	run := func(i int64) {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				if i < panicAt {
					panicAt, panicked = i, r
				}
				mu.Unlock()
				fail(i)
			}
		}()
		if !do(int(i)) {
			fail(i)
		}
	}
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || i > stop.Load() {
					return
				}
				run(i)
			}
		}()
	}
	wg.Wait()
	if panicAt < int64(n) && panicAt == stop.Load() {
		panic(panicked)
	}
}
