package device

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// cacheTask is a softmax of 53 rows over 4 blocks whose values run apart from the
// timing loop (smallTaskInstrs 0), with the cache's hits taken as they are.
type cacheTask struct {
	chip   *Chip
	blocks []Block
	rows   int
}

func newCacheTask(t *testing.T) *cacheTask {
	saved, check := smallTaskInstrs, checkTimingCache
	smallTaskInstrs, checkTimingCache = 0, false
	t.Cleanup(func() { smallTaskInstrs, checkTimingCache = saved, check })
	timingCache.clear()
	c := &cacheTask{chip: preset(t, "a2"), rows: 53}
	for r0 := 0; r0 < c.rows; r0 += 16 {
		c.blocks = append(c.blocks, Block{Prog: compile(t, c.chip, parse(t, softmaxBlock(c.rows, r0)))})
	}
	return c
}

// run runs the task on input x at GM offset base and returns the output and stats.
func (c *cacheTask) run(t *testing.T, chip *Chip, x []byte, base int, opts RunOptions) ([]byte, *TaskStats) {
	n := c.rows * 128 * 4
	gm := make([]byte, base+2*n)
	copy(gm[base:], x)
	for i := range c.blocks {
		c.blocks[i].ParamAddrs = []int{base, base + n}
	}
	st, err := RunTask(chip, gm, isa.Vector, c.blocks, opts)
	require.NoError(t, err)
	return gm[base+n:], st
}

func (c *cacheTask) input(seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	return dtype.Encode(dtype.Float32, randValues(rng, dtype.Float32, c.rows*128, 4))
}

// withoutFlag is st with TimingCached cleared, for comparing the rest.
func withoutFlag(st *TaskStats) TaskStats {
	s := *st
	s.TimingCached = false
	return s
}

// A task run again with the same timing inputs takes its times from the cache (from
// its third run: a program's first run has no hash) and still computes its values
// from its new inputs.
func TestTimingCacheKeepsTheTimesOfARepeatedTask(t *testing.T) {
	c := newCacheTask(t)
	x := c.input(1)
	_, first := c.run(t, c.chip, x, 0, RunOptions{})
	_, second := c.run(t, c.chip, x, 0, RunOptions{})
	assert.False(t, first.TimingCached)
	assert.False(t, second.TimingCached)

	y := c.input(2)
	want, fresh := c.run(t, c.chip, y, 0, RunOptions{NoTimingCache: true})
	got, third := c.run(t, c.chip, y, 0, RunOptions{})
	require.True(t, third.TimingCached, "the third run of the same task")
	assert.False(t, fresh.TimingCached)
	assert.Equal(t, want, got, "values come from this run's input")
	assert.Equal(t, withoutFlag(fresh), withoutFlag(third))
	assert.Equal(t, withoutFlag(first), withoutFlag(third))
	assert.Positive(t, third.L2Hits+third.L2Misses)
}

// Every input of the timing is part of the key: a changed chip constant, other
// addresses, a prefetch, balanced blocks, a program changed in place each miss the
// cache and give the times a fresh loop gives.
func TestTimingCacheKeyHasEveryTimingInput(t *testing.T) {
	c := newCacheTask(t)
	x := c.input(3)
	for range 2 {
		c.run(t, c.chip, x, 0, RunOptions{})
	}
	_, base := c.run(t, c.chip, x, 0, RunOptions{})
	require.True(t, base.TimingCached)

	slower := c.chip.Clone()
	slower.HBMBytesPerCycle /= 4
	moved := func(m *MachineProgram) {
		i := slices.IndexFunc(m.Instrs, func(in Instr) bool { return in.Op == isa.TLOAD })
		m.Instrs = slices.Insert(m.Instrs, i, m.Instrs[i]) // an extra load: same pointer
	}
	cases := []struct {
		name   string
		chip   *Chip
		base   int
		opts   RunOptions
		change func()
	}{
		{name: "chip constant", chip: slower},
		{name: "addresses", chip: c.chip, base: 4096 + 64},
		{name: "prefetch", chip: c.chip, opts: RunOptions{PrefetchBytes: 1 << 16}},
		{name: "balance", chip: c.chip, opts: RunOptions{BalanceBlocks: true}},
		{name: "program edited", chip: c.chip, change: func() { moved(c.blocks[0].Prog) }},
	}
	for _, tc := range cases {
		if tc.change != nil {
			tc.change()
		}
		_, st := c.run(t, tc.chip, x, tc.base, tc.opts)
		assert.False(t, st.TimingCached, tc.name)
		tc.opts.NoTimingCache = true
		_, fresh := c.run(t, tc.chip, x, tc.base, tc.opts)
		assert.Equal(t, withoutFlag(fresh), withoutFlag(st), tc.name)
		tc.opts.NoTimingCache = false
		_, again := c.run(t, tc.chip, x, tc.base, tc.opts)
		assert.True(t, again.TimingCached, "%s, run again", tc.name)
		assert.Equal(t, withoutFlag(fresh), withoutFlag(again), tc.name)
	}
	_, slow := c.run(t, slower, x, 0, RunOptions{})
	assert.Greater(t, slow.Cycles, base.Cycles, "the slower HBM's own entry")
}

// With checkTimingCache every hit runs the loop again: a kept record that differs
// from it (a key that missed an input) fails the task.
func TestCheckedTimingCacheReportsAWrongRecord(t *testing.T) {
	c := newCacheTask(t)
	x := c.input(4)
	for range 2 {
		c.run(t, c.chip, x, 0, RunOptions{})
	}
	timingCache.mu.Lock()
	require.Len(t, timingCache.entries, 1)
	for _, rec := range timingCache.entries {
		rec.cores[0].cycles++
	}
	timingCache.mu.Unlock()
	checkTimingCache = true
	gm := make([]byte, 2*c.rows*128*4)
	copy(gm, x)
	_, err := RunTask(c.chip, gm, isa.Vector, c.blocks, RunOptions{})
	require.ErrorContains(t, err, "timing cache's key misses an input")
}

// The cache holds at most timingCacheEntries tasks, dropping the oldest.
func TestTimingCacheIsBounded(t *testing.T) {
	c := newCacheTask(t)
	c.run(t, c.chip, c.input(5), 0, RunOptions{})
	sims := []*coreSim{{}}
	for i := range timingCacheEntries + 3 {
		timingCache.keep(string(rune('a'+i%26))+string(rune(i)), sims, nil)
	}
	assert.Len(t, timingCache.entries, timingCacheEntries)
	assert.Len(t, timingCache.order, timingCacheEntries)

	// Large keys (tasks of many blocks) are bounded by their bytes: the oldest go.
	timingCache.clear()
	big := func(i int) string { return string(rune('A'+i)) + strings.Repeat("k", timingCacheBytes/4) }
	for i := range 6 {
		timingCache.keep(big(i), sims, nil)
	}
	assert.LessOrEqual(t, timingCache.bytes, timingCacheBytes)
	assert.Len(t, timingCache.entries, 3)
	assert.NotNil(t, timingCache.lookup(big(5)))
	assert.Nil(t, timingCache.lookup(big(2)))
	timingCache.keep(strings.Repeat("x", timingCacheBytes), sims, nil) // larger than the whole cache
	assert.Len(t, timingCache.entries, 3)
	timingCache.clear()
	assert.Zero(t, timingCache.bytes)
}
