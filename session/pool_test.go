package session

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMemoryPoolLendsFirstFitAndCoalesces(t *testing.T) {
	p, err := NewMemoryPool(1000)
	require.NoError(t, err)
	a, relA, err := p.Acquire(300, nil)
	require.NoError(t, err)
	b, relB, err := p.Acquire(300, nil)
	require.NoError(t, err)
	require.Len(t, a, 300)
	a[0], b[0] = 1, 2
	require.Equal(t, byte(1), a[0], "regions do not overlap")
	relA()
	relA() // a second release is a no-op
	c, relC, err := p.Acquire(200, nil)
	require.NoError(t, err)
	require.Equal(t, &p.arena[0], &c[0], "the freed region at the start is reused first")
	relC()
	relB()
	st := p.Stats()
	require.Equal(t, PoolStats{SizeBytes: 1000, HighWaterBytes: 600, ArenaTouchedBytes: 600, Runs: 3}, st)
	require.Equal(t, []span{{0, 1000}}, p.free, "freed regions merge back into one")
	_, _, err = p.Acquire(1001, nil)
	require.ErrorContains(t, err, "needs 1001 bytes of device memory, but the memory pool holds 1000")
}

func TestMemoryPoolRunWaitsForMemory(t *testing.T) {
	p, err := NewMemoryPool(1000)
	require.NoError(t, err)
	_, rel, err := p.Acquire(800, nil)
	require.NoError(t, err)
	got := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, r, err := p.Acquire(500, nil)
		require.NoError(t, err)
		close(got)
		r()
	}()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.blocked > 0
	}, 30*time.Second, time.Millisecond, "the second run never began to wait")
	select {
	case <-got:
		t.Fatal("a run got memory the pool does not have free")
	default:
	}
	rel()
	wg.Wait()
	require.Equal(t, int64(1), p.Stats().WaitedRuns)
	stop := make(chan struct{})
	_, rel, _ = p.Acquire(900, nil)
	close(stop)
	_, _, err = p.Acquire(500, stop)
	require.ErrorContains(t, err, "interrupted while waiting")
	rel()
}
