package device

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/isa"
)

// chainLoop is a loop whose body computes a chain of n scratch tiles of 4 KB from a
// loaded tile and adds the last to an accumulator carried across iterations: with
// every tile live over the whole loop it needs (n + 2) x 4 KB of UB.
func chainLoop(n int) string {
	var b strings.Builder
	b.WriteString("kernel chain vector\nparam %x: f32[8192]\nparam %y: f32[1024]\nreg %i\nreg %off\n")
	b.WriteString("tile %a: vec f32[8x128]\ntile %acc: vec f32[8x128]\n")
	for k := range n {
		fmt.Fprintf(&b, "tile %%s%d: vec f32[8x128]\n", k)
	}
	b.WriteString("  texpands %acc, 0\n  loop %i, 8\n    smul %off, %i, 1024\n    tload %a, %x[%off; 8x128; 128,1]\n")
	prev := "a"
	for k := range n {
		fmt.Fprintf(&b, "    tadds %%s%d, %%%s, %d\n", k, prev, k+1)
		prev = fmt.Sprintf("s%d", k)
	}
	fmt.Fprintf(&b, "    tadd %%acc, %%acc, %%%s\n  endloop\n  tstore %%y[0; 8x128; 128,1], %%acc\nend\n", prev)
	return b.String()
}

func TestAllocIterationLocalTilesShareBytes(t *testing.T) {
	// Twelve 4 KB tiles do not fit the 32 KB UB of tiny when all are live over the
	// loop; the chain's tiles are each overwritten before they are read, so they may
	// share bytes, and the program fits. The accumulator, read before it is written
	// in every iteration, keeps its bytes for the whole loop.
	chip := preset(t, "tiny")
	p := parse(t, chainLoop(10))
	_, _, err := allocateWith(chip, p, liveRanges)
	require.Error(t, err, "the conservative ranges must not fit, or the test tests nothing")
	m := compile(t, chip, p)
	assert.LessOrEqual(t, m.HighWater[isa.Vec], chip.Capacity(isa.Vec))
	acc := m.Tiles[1]
	require.Equal(t, "acc", acc.Decl.Name)
	for _, o := range m.Tiles {
		if o.Decl.Name == "acc" || o.Addr < 0 {
			continue
		}
		overlap := o.Addr < acc.Addr+acc.Bytes && acc.Addr < o.Addr+o.Bytes
		assert.False(t, overlap, "%s shares bytes with the loop-carried accumulator", o.Decl.Name)
	}
	requireFlagsPaired(t, m)
	params := randParams(p, 3)
	want := runReference(t, p, params)
	got, _ := runDevice(t, chip, p, params)
	compareOutputs(t, p, want, got)
}

func TestLocalRangesKeepLoopCarriedTiles(t *testing.T) {
	p := parse(t, chainLoop(3))
	first, last := localLiveRanges(p)
	loop, end := 1, len(p.Body)-2 // texpands, loop ... endloop, tstore
	require.Equal(t, "loop", p.Body[loop].Op.String())
	require.Equal(t, "endloop", p.Body[end].Op.String())
	// acc (tile 1) is read by the body before the body writes it: live over the loop
	// and from its initialisation to the store.
	assert.Equal(t, [2]int{0, len(p.Body) - 1}, [2]int{first[1], last[1]})
	// a (tile 0) and the chain are killed before use in each iteration: their uses only.
	assert.Equal(t, [2]int{loop + 2, loop + 3}, [2]int{first[0], last[0]})
	for k := 0; k < 3; k++ {
		assert.Equal(t, [2]int{loop + 3 + k, loop + 4 + k}, [2]int{first[2+k], last[2+k]}, "s%d", k)
	}
}
