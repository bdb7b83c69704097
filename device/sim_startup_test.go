package device

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/isa"
)

// A core's first touch of a GM page waits for the page walk (Chip.PageWalkCycles); a
// page its TLB holds costs nothing more, and the walks count as the core's start-up.
func TestFirstTouchOfAPageWalksItsTable(t *testing.T) {
	chip := preset(t, "a2")
	page := chip.GMPageBytes / 4 // f32 elements per page
	src := fmt.Sprintf(`
kernel pages vector
param %%x: f32[%[1]d]
tile %%t: vec f32[8x64]
tile %%u: vec f32[8x64]
tile %%v: vec f32[8x64]
  tload %%t, %%x[0; 8x64; 64,1]
  tsync all
  tload %%u, %%x[512; 8x64; 64,1]
  tsync all
  tload %%v, %%x[%[2]d; 8x64; 64,1]
end
`, 2*page, page)
	m := compile(t, chip, parse(t, src))
	st, err := RunTask(chip, make([]byte, 2*chip.GMPageBytes), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0}}}, RunOptions{Trace: true, NoValues: true})
	require.NoError(t, err)
	var loads []int64
	for _, e := range st.Trace {
		if e.Op == isa.TLOAD {
			loads = append(loads, e.Cycles())
		}
	}
	require.Len(t, loads, 3)
	walk := int64(chip.PageWalkCycles)
	require.Positive(t, walk)
	assert.Equal(t, loads[0], loads[2], "a new page: a walk, then a miss, as the first")
	assert.Equal(t, loads[0]-walk, loads[1], "a held page: no walk (its lines miss too, the window being new)")
	assert.Equal(t, 2*walk, st.CoreStartupCycles[0]-st.FetchStallCycles, "the walks count as start-up, with the first block's fetch stalls")
	assert.Equal(t, st.StartCycles+st.CoreStartupCycles[0], st.StartupCycles)
}

// handOffTask is a mixed task of groups AI cores, each cube core pushing tiles
// accumulators to its first vector core, which pops and frees them.
func handOffTask(t *testing.T, chip *Chip, groups, tiles int) *TaskStats {
	cube := compile(t, chip, parse(t, fmt.Sprintf(`kernel push cube
reg %%i
tile %%a: left f16[64x64]
tile %%b: right f16[64x64]
tile %%c: acc f32[64x64]
  tmatmul %%c, %%a, %%b
  loop %%i, %d
    tpush 0, %%c
  endloop
end
`, tiles)))
	vec := compile(t, chip, parse(t, fmt.Sprintf(`kernel pop vector
reg %%i
tile %%v: vec f32[64x64]
  loop %%i, %d
    tpop %%v, 0
    tfree 0
  endloop
end
`, tiles)))
	idle := compile(t, chip, parse(t, "kernel idle vector\nend\n"))
	var gs []Group
	for range groups {
		gs = append(gs, Group{Cube: &Block{Prog: cube}, Vector: []Block{{Prog: vec}, {Prog: idle}}})
	}
	st, err := RunGroupTask(chip, make([]byte, 512), gs, RunOptions{NoValues: true})
	require.NoError(t, err)
	return st
}

// Cores that hand tiles to each other share the L2's bandwidth and the chip's
// cross-core flag unit: alone an AI core's hand-offs wait for neither, with all 24
// busy they queue for both, and the time per block grows with the core count.
func TestHandOffsShareTheFlagUnitAndTheL2(t *testing.T) {
	chip := preset(t, "a2")
	one := handOffTask(t, chip, 1, 32)
	all := handOffTask(t, chip, chip.CubeCores, 32)
	t.Logf("shared waits: one AI core %d, %d AI cores %d; kernel %d and %d cycles", one.SharedWaitCycles, chip.CubeCores, all.SharedWaitCycles, one.KernelCycles, all.KernelCycles)
	assert.Greater(t, all.SharedWaitCycles/int64(chip.CubeCores), 10*one.SharedWaitCycles, "each core waits far more when all hand tiles at once")
	assert.Greater(t, all.KernelCycles, one.KernelCycles, "per-block time grows with the cores handing tiles at once")
	// Without the flag unit's serialisation and with an L2 that carries every port,
	// the 24 AI cores take as long as one.
	free := preset(t, "a2")
	free.CrossCoreFlagIssueCycles = 0
	free.L2TotalBytesPerCycle = 4 * free.CubeCores * (free.L2ReadBytesPerCycle + free.L2WriteBytesPerCycle)
	assert.Equal(t, handOffTask(t, free, 1, 32).KernelCycles, handOffTask(t, free, free.CubeCores, 32).KernelCycles)
	// A mixed task's cores set their cross-core flags up before they start.
	assert.GreaterOrEqual(t, one.StartupCycles, one.StartCycles+int64(chip.CrossCoreSetupCycles))
}
