package device

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"pypto/dtype"
	"pypto/isa"
)

// The bound counts MTE1's moves when the caller counts them: the bytes into L0A and
// L0B at their rates and the fractal rows each move pays for; without them it is the
// other pipes' bound.
func TestBoundCountsL1ToL0Moves(t *testing.T) {
	chip := preset(t, "a2")
	w := Work{DType: dtype.Float16, MACs: 4096 * 100}
	base := chip.Bound(w)
	w.L0ABytes, w.L0BBytes, w.L0FractalRows = 512*1000, 256*1000, 10
	mte1 := int64(1000 + 1000 + 10*chip.L1ToL0FractalRowCycles)
	assert.Equal(t, base-100+mte1, chip.Bound(w))
	w.Starts = map[isa.Pipe]int64{isa.PipeMTE1: 4}
	assert.Equal(t, base-100+mte1+4*int64(chip.PipeStartup[isa.PipeMTE1]), chip.Bound(w))
}
