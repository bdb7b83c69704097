package device

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// A small task computes its values in the timing loop; a larger one in a functional
// run beside it. Both give the same bytes and the same statistics.
func TestSmallTasksRunAsLargeOnesDo(t *testing.T) {
	chip := preset(t, "a2")
	const rows = 53
	rng := rand.New(rand.NewPCG(7, 8))
	x := dtype.Encode(dtype.Float32, randValues(rng, dtype.Float32, rows*128, 4))
	run := func(nblocks int) ([]byte, *TaskStats) {
		l := layout(x, make([]byte, rows*128*4))
		var blocks []Block
		for r0 := 0; r0 < rows && len(blocks) < nblocks; r0 += 16 {
			blocks = append(blocks, Block{Prog: compile(t, chip, parse(t, softmaxBlock(rows, r0))), ParamAddrs: l.addrs})
		}
		st, err := RunTask(chip, l.gm, isa.Vector, blocks, RunOptions{})
		require.NoError(t, err)
		return append([]byte(nil), l.bytes(1, rows*128*4)...), st
	}
	saved := smallTaskInstrs
	defer func() { smallTaskInstrs = saved }()
	for _, n := range []int{1, 4} {
		smallTaskInstrs = 1 << 30
		small, sst := run(n)
		smallTaskInstrs = 0
		large, lst := run(n)
		assert.Equal(t, large, small, "%d blocks", n)
		assert.Equal(t, lst.Cycles, sst.Cycles)
		assert.Equal(t, lst.PipeBusy, sst.PipeBusy)
		assert.Equal(t, lst.Instructions, sst.Instructions)
		assert.Equal(t, [2]int64{lst.L2Hits, lst.L2Misses}, [2]int64{sst.L2Hits, sst.L2Misses})
		assert.Equal(t, [2]int64{lst.FootprintRead, lst.FootprintWritten}, [2]int64{sst.FootprintRead, sst.FootprintWritten})
	}
	blocks := []Block{{Prog: compile(t, chip, parse(t, softmaxBlock(rows, 0)))}}
	smallTaskInstrs = saved
	assert.Equal(t, len(blocks[0].Prog.Instrs) <= saved, smallTask(blocks))
}
