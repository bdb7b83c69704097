package lower

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// maskTile names the tiles an explicit mask is loaded into (one per part of a key block).
var maskTile = regexp.MustCompile(`^mask(_[0-9]+)?$`)

// An explicit mask reads nothing the cube computes, so each vector core loads and
// converts a key block's mask tile before it pops that block's scores: the load runs
// while the core waits for the cube. The values are the reference's (compared through
// the attention cases with masks).
func TestAttentionMaskLoadsBeforeTheScoresPop(t *testing.T) {
	chip, err := device.Preset("a2")
	require.NoError(t, err)
	for _, mask := range []dtype.DType{dtype.Float16, dtype.Bool} {
		c := attentionCase{q: core.Shape{1, 2, 256, 64}, k: core.Shape{1, 2, 512, 64}, v: core.Shape{1, 2, 512, 64},
			dt: dtype.Float16, mask: mask, maskShape: core.Shape{256, 512}}
		exe, err := Compile(c.graph(t), Options{Chip: chip, Verify: true})
		require.NoError(t, err)
		task := exe.Exec().Tasks[0]
		require.Equal(t, 2, task.Vectors, "a mixed attention task")
		for v, prog := range task.Group(0)[1:] {
			loads, pops := 0, 0
			for _, in := range prog.Body {
				name := func(i int) string { return prog.Tiles[in.Args[i].Tile].Name }
				switch {
				case in.Op == isa.TLOAD && maskTile.MatchString(name(0)):
					loads++
				case in.Op == isa.TPOP && strings.HasPrefix(name(0), "s_"):
					pops++
					require.GreaterOrEqual(t, loads, pops, "%v mask, vector core %d: the mask of every scores pop is loaded before it", mask, v)
				}
			}
			require.Positive(t, pops)
			require.Equal(t, pops, loads, "a mask tile per scores tile")
		}
		checkAttention(t, chip, c.graph(t))
	}
}
