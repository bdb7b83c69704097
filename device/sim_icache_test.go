package device

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/isa"
)

// scalarAdds is a program the scalar unit bounds: trips iterations of body scalar
// additions, as a loop or unrolled (an SMOV of the counter before each copy, the
// same number of scalar instructions as LOOP and ENDLOOP).
func scalarAdds(trips, body int, unroll bool) string {
	var b strings.Builder
	b.WriteString("kernel fetch vector\nparam %y: f32[8]\nreg %i\nreg %x\n")
	add := strings.Repeat("  sadd %x, %x, 1\n", body)
	if unroll {
		for k := range trips {
			fmt.Fprintf(&b, "  smov %%i, %d\n%s", k, add)
		}
		fmt.Fprintf(&b, "  smov %%i, %d\n", trips)
	} else {
		fmt.Fprintf(&b, "  loop %%i, %d\n%s  endloop\n", trips, add)
	}
	b.WriteString("end\n")
	return b.String()
}

func runFetch(t *testing.T, chip *Chip, src string) (*TaskStats, *MachineProgram) {
	t.Helper()
	m := compile(t, chip, parse(t, src))
	st, err := RunTask(chip, make([]byte, 64), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0}}}, RunOptions{})
	require.NoError(t, err)
	return st, m
}

// lines is the number of instruction cache lines a program occupies.
func lines(chip *Chip, m *MachineProgram) int64 {
	return int64((len(m.Instrs)*chip.InstrBytes + chip.ICacheLineBytes - 1) / chip.ICacheLineBytes)
}

// A loop whose body fits the cache misses on its first iteration only; the same
// instructions unrolled, larger than the cache, miss on every line, and the time
// the scalar unit waits for them is what the unrolled program costs more.
func TestLoopThatFitsTheInstructionCacheHits(t *testing.T) {
	chip := preset(t, "a2")
	const trips, body = 64, 31 // 2048 instructions unrolled: 64 KB of code, twice the cache
	looped, lm := runFetch(t, chip, scalarAdds(trips, body, false))
	flat, fm := runFetch(t, chip, scalarAdds(trips, body, true))
	require.Greater(t, int(lines(chip, fm))*chip.ICacheLineBytes, chip.ICacheBytes)
	assert.Equal(t, lines(chip, lm), looped.ICacheMisses, "every line of the loop once")
	assert.Equal(t, lines(chip, fm), flat.ICacheMisses, "every line of the straight-line code once")
	// The first line of each waits the miss latency, the others stream.
	stream := int64(chip.ICacheLineBytes / chip.ICacheFetchBytesPerCycle)
	assert.Equal(t, int64(chip.ICacheMissCycles)+(looped.ICacheMisses-1)*stream, looped.FetchStallCycles)
	assert.Equal(t, int64(chip.ICacheMissCycles)+(flat.ICacheMisses-1)*stream, flat.FetchStallCycles)
	// Both execute the same number of scalar instructions, so the difference in time
	// is the fetch.
	assert.Equal(t, looped.Instructions, flat.Instructions)
	assert.Equal(t, flat.FetchStallCycles-looped.FetchStallCycles, flat.Cycles-looped.Cycles)
	assert.Greater(t, float64(flat.Cycles)/float64(looped.Cycles), 1.15, "straight-line code pays its fetch")

	// Without an instruction cache model (tiny) fetch is free and both cost the same.
	tiny := preset(t, "tiny")
	lt, _ := runFetch(t, tiny, scalarAdds(trips, body, false))
	ft, _ := runFetch(t, tiny, scalarAdds(trips, body, true))
	assert.Equal(t, lt.Cycles, ft.Cycles)
	assert.Zero(t, ft.ICacheMisses)
}

// A loop body twice the cache misses on every line of every iteration: every set
// holds twice its ways of the body's lines, and LRU evicts each before the next
// iteration comes back to it.
func TestLoopLargerThanTheInstructionCacheMissesEveryIteration(t *testing.T) {
	chip := preset(t, "a2")
	body := 2 * chip.ICacheBytes / chip.InstrBytes
	const trips = 3
	st, m := runFetch(t, chip, scalarAdds(trips, body, false))
	bodyLines := int64(body * chip.InstrBytes / chip.ICacheLineBytes)
	assert.GreaterOrEqual(t, st.ICacheMisses, trips*bodyLines)
	assert.LessOrEqual(t, st.ICacheMisses, lines(chip, m)+(trips-1)*(bodyLines+1))
}

// A second block of the same program on a core finds its code in the cache.
func TestInstructionCacheKeepsCodeAcrossBlocks(t *testing.T) {
	chip := preset(t, "a2")
	m := compile(t, chip, parse(t, scalarAdds(4, 16, false)))
	one, err := RunTask(chip, make([]byte, 64), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0}}}, RunOptions{})
	require.NoError(t, err)
	blocks := make([]Block, chip.VectorCores+1) // core 0 runs two blocks
	for i := range blocks {
		blocks[i] = Block{Prog: m, ParamAddrs: []int{0}}
	}
	many, err := RunTask(chip, make([]byte, 64), isa.Vector, blocks, RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(chip.VectorCores)*one.ICacheMisses, many.ICacheMisses)
}

func TestChipWithABadInstructionCacheIsRejected(t *testing.T) {
	for _, edit := range []func(c *Chip){
		func(c *Chip) { c.ICacheBytes = -1 },
		func(c *Chip) { c.ICacheWays = 0 },
		func(c *Chip) { c.InstrBytes = 48 }, // does not divide the 128-byte line
	} {
		c := preset(t, "a2")
		edit(c)
		assert.ErrorContains(t, c.Validate(), "ICache")
	}
}
