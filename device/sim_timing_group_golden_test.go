package device

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A mixed task's cube and vector cores load from GM at the same time, each through
// GM ports of its own (a cube core and a vector core may have the same index), and
// its cores exchange tiles through a queue: its timing stays what it was, as
// TestTimingUnchangedOnReferenceKernels keeps the vector and cube tasks'.
func TestTimingUnchangedOnAMixedTask(t *testing.T) {
	const want = "cycles 29424 kernel 13442 cores [14018 14082 14090 14146 14154 14210 14218 14226 14274 14282 14290 14326 14338 14346 14354 14402 14314 14322 14370 14378 14386 14402 14434 14442] l2 768/18432 prefetched 0 s 3264 mte1 1704 mte2 467025 mte3 9120 m 216 fix 960"
	chip := preset(t, "a2")
	gm, gs := loadingGroups(t, chip)
	st, err := RunGroupTask(chip, gm, gs, RunOptions{NoValues: true})
	require.NoError(t, err)
	require.Equal(t, want, timingFingerprint(st))
}

// loadingGroups is the mixed task of TestTimingUnchangedOnAMixedTask: 24 groups whose
// cube and vector cores stream their own slices of GM, then hand one accumulator
// through a queue.
func loadingGroups(t *testing.T, chip *Chip) ([]byte, []Group) {
	const groups, n = 24, 1 << 16 // f16 elements per group's slice of each input
	cube := compile(t, chip, parse(t, fmt.Sprintf(`kernel loads cube
param %%a: f16[%[1]d]
param %%b: f16[%[1]d]
reg %%k
reg %%off
tile %%ma: mat f16[64x128]
tile %%mb: mat f16[64x128]
tile %%sa: mat f16[16x16]
tile %%sb: mat f16[16x16]
tile %%la: left f16[16x16]
tile %%rb: right f16[16x16]
tile %%acc: acc f32[16x16]
  loop %%k, 8
    smul %%off, %%k, 8192
    tload %%ma, %%a[%%off; 64x128; 128,1]
    tload %%mb, %%b[%%off; 64x128; 128,1]
  endloop
  tload %%sa, %%a[0; 16x16; 16,1]
  tload %%sb, %%b[0; 16x16; 16,1]
  tmov %%la, %%sa
  tmov %%rb, %%sb
  tmatmul %%acc, %%la, %%rb
  tpush 2, %%acc
end
`, n)))
	vec := compile(t, chip, parse(t, fmt.Sprintf(`kernel loads vector
param %%x: f16[%[1]d]
param %%y: f32[%[2]d]
reg %%k
reg %%off
tile %%t: vec f16[32x256]
tile %%v: vec f32[16x16]
  loop %%k, 8
    smul %%off, %%k, 8192
    tload %%t, %%x[%%off; 32x256; 256,1]
  endloop
  tpop %%v, 2
  tfree 2
  tstore %%y[0; 16x16; 16,1], %%v
end
`, n, 256)))
	gm := make([]byte, 3*2*groups*n+groups*256*4)
	var gs []Group
	for g := range groups {
		a, b, x := 2*g*n, 2*(groups*n+g*n), 2*(2*groups*n+g*n)
		y := 3*2*groups*n + g*256*4
		gs = append(gs, Group{
			Cube:   &Block{Prog: cube, ParamAddrs: []int{a, b}},
			Vector: []Block{{Prog: vec, ParamAddrs: []int{x, y}}},
		})
	}
	return gm, gs
}
