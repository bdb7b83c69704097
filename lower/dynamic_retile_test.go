package lower

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A program that knows the least rows its runs have (a bucket's low end) may pick
// other tiles for its dynamic matmuls than the bound alone would, saying why in the
// tile's reason; every run still gives the padded program's bits in its valid rows.
func TestRangeTilesKeepTheValues(t *testing.T) {
	chip := preset(t, "a2")
	const u, k, h, n, least = 768, 256, 1024, 256, 641
	g, dyn := ffnGraph(t, u, k, h, n)
	plain, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: dyn})
	require.NoError(t, err)
	ranged := *dyn
	ranged.Least = []int{least}
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: &ranged})
	require.NoError(t, err)
	padded, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	before, after := plain.Exec().Blocks.Tiles.Ops, exe.Exec().Blocks.Tiles.Ops
	require.Len(t, after, len(before))
	changed := 0
	for i, op := range after {
		if fmt.Sprint(op.Tile) != fmt.Sprint(before[i].Tile) {
			changed++
			require.True(t, strings.HasPrefix(op.Reason, fmt.Sprintf("for runs of %d to %d rows", least, u)), "op %s: %s", op.Op, op.Reason)
			require.NotNil(t, op.Dynamic)
		}
	}
	require.Positive(t, changed, "the bound's tiles are not the range's here")
	back, err := ParseTileGraph(exe.Exec().Blocks.Tiles.Format())
	require.NoError(t, err)
	require.Equal(t, exe.Exec().Blocks.Tiles.Format(), back.Format())
	for _, rows := range []int{least, 700, u} {
		in := ffnInputs(g, rows)
		want, _, err := padded.Run(in)
		require.NoError(t, err)
		got, _, err := exe.Run(in)
		require.NoError(t, err)
		valid := rows * n * 2
		require.Equal(t, want[0][:valid], got[0][:valid], "rows %d", rows)
	}
}
