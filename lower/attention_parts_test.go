package lower

import (
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// Key blocks wider than maxPartCols go through the queues in parts, which a vector core
// folds elementwise before its row reductions. The search picks 256-key blocks (two
// parts) for these head-dim-64 cases; the values are the reference's with every kind of
// mask, causal blocks crossing the diagonal in either part, and last blocks whose
// second part is cut (1000 and 700 keys).
func TestAttentionKeyBlocksInParts(t *testing.T) {
	chip, err := device.Preset("a2")
	require.NoError(t, err)
	for _, c := range []attentionCase{
		{name: "f16_mask", q: core.Shape{1, 2, 512, 64}, k: core.Shape{1, 2, 512, 64}, v: core.Shape{1, 2, 512, 64}, dt: dtype.Float16,
			mask: dtype.Float16, maskShape: core.Shape{512, 512}, scale: 0.125},
		{name: "bool_mask_cut", q: core.Shape{1, 2, 256, 64}, k: core.Shape{1, 2, 1000, 64}, v: core.Shape{1, 2, 1000, 64}, dt: dtype.Float16,
			mask: dtype.Bool, maskShape: core.Shape{256, 1000}},
		{name: "causal", q: core.Shape{1, 2, 512, 64}, k: core.Shape{1, 2, 512, 64}, v: core.Shape{1, 2, 512, 64}, dt: dtype.Float16, causal: true},
		{name: "f32_mask_bf16_cut", q: core.Shape{1, 4, 300, 64}, k: core.Shape{1, 4, 700, 64}, v: core.Shape{1, 4, 700, 64}, dt: dtype.BFloat16,
			mask: dtype.Float32, maskShape: core.Shape{300, 700}},
	} {
		t.Run(c.name, func(t *testing.T) {
			exe, err := Compile(c.graph(t), Options{Chip: chip})
			require.NoError(t, err)
			op := exe.exec.Blocks.Tiles.Ops[0]
			a := tiledAttentionShape(chip.VectorCores/chip.CubeCores, op, exe.exec.Blocks.Tiles.Tensors)
			require.Greater(t, a.parts(), 1, "tile %v: the search no longer picks blocks in parts here; choose a case it does", op.Tile)
			checkAttention(t, chip, c.graph(t))
		})
	}
}

// The search offers no tiling whose last key block has a part wholly past the keys.
func TestAttentionOffersNoEmptyPart(t *testing.T) {
	chip, err := device.Preset("a2")
	require.NoError(t, err)
	for _, keys := range []int{600, 1112, 1000, 512} {
		c := attentionCase{q: core.Shape{1, 2, 512, 64}, k: core.Shape{1, 2, keys, 64}, v: core.Shape{1, 2, keys, 64}, dt: dtype.Float16}
		exe, err := Compile(c.graph(t), Options{Chip: chip, FixedTiles: true})
		require.NoError(t, err)
		tg := exe.exec.Blocks.Tiles
		parted := 0
		for _, cand := range attentionCandidates(newEstimator(chip), tg, tg.Ops[0]) {
			probe := *tg.Ops[0]
			probe.Tile = cand.tile
			a := tiledAttentionShape(chip.VectorCores/chip.CubeCores, &probe, tg.Tensors)
			require.False(t, a.emptyPart(keys), "%d keys, tile %v", keys, cand.tile)
			if a.parts() > 1 {
				parted++
			}
		}
		if keys%256 == 0 || keys%256 > 128 {
			require.Positive(t, parted, "%d keys: some tilings in parts are offered", keys)
		}
	}
}
