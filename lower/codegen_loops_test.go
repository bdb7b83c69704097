package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// loops counts the LOOP instructions of an executable's programs, and returns the
// largest program's size in machine instructions.
func loops(t *testing.T, exe *Executable) (n, size int) {
	t.Helper()
	for _, task := range exe.exec.Tasks {
		for _, m := range task.Machine {
			size = max(size, len(m.Instrs))
			for _, in := range m.Instrs {
				if in.Op == isa.LOOP {
					n++
				}
			}
		}
	}
	return n, size
}

// A matmul block whose straight-line code would not fit the instruction cache gets
// K loops, computes what the reference does, and is the smaller program; one that
// fits stays straight-line.
func TestMatmulKLoopsWhereCodeWouldNotFit(t *testing.T) {
	g := matmulGraph(t, dtype.Float16, core.Shape{384, 6144}, core.Shape{6144, 256}, nil, false)
	chip := preset(t, "a2")
	exe, err := Compile(g, Options{Chip: chip})
	require.NoError(t, err)
	n, wide := loops(t, exe)
	assert.Zero(t, n, "the block's straight-line code fits a2's cache")
	assert.Less(t, wide, codeBudget(chip))

	small := preset(t, "a2")
	small.ICacheBytes = 4 << 10 // 128 instructions
	exe, err = Compile(g, Options{Chip: small})
	require.NoError(t, err)
	n, narrow := loops(t, exe)
	assert.Positive(t, n, "K loops where the code would not fit")
	assert.Less(t, narrow, wide)
	compileAndCompare(t, small, g, 6144)
}
