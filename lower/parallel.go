package lower

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// inParallel calls do(i) for i in [0, n) on up to GOMAXPROCS goroutines, claiming
// indices in increasing order. Once do(i) returns false, indices above i that have not
// started are skipped, while those below i still run: a caller that records results
// by index then finds the first failure in index order, as a sequential loop would.
func inParallel(n int, do func(i int) bool) {
	var next atomic.Int64
	var stop atomic.Int64 // the lowest failed index, n if none
	stop.Store(int64(n))
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || i > stop.Load() {
					return
				}
				if !do(int(i)) {
					for s := stop.Load(); i < s && !stop.CompareAndSwap(s, i); s = stop.Load() {
					}
				}
			}
		}()
	}
	wg.Wait()
}
