package lower

import (
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// Elementwise ops over spaces with small trailing axes (a global pool's [N, C, 1, 1],
// a concat of one-element slabs, a broadcast of per-channel values) walk their axes
// merged: a few long tiles instead of one tile per leading index, with the values of
// the reference interpreter.
func TestSmallTrailingAxesAreMerged(t *testing.T) {
	f32 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float32, Shape: s} }
	cases := []struct {
		name  string
		build func(b *core.Builder) (core.Value, error)
		most  int // tiles of the largest elementwise op at most
	}{
		{"pooled", func(b *core.Builder) (core.Value, error) {
			return b.Op("maximum", []core.Value{b.Param("x", f32(2, 512, 1, 1)), b.Param("y", f32(2, 512, 1, 1))}, nil, core.Location{})
		}, 1},
		{"per-channel", func(b *core.Builder) (core.Value, error) {
			return b.Op("sub", []core.Value{b.Param("x", f32(2, 256, 2, 2)), b.Param("y", f32(1, 256, 1, 1))}, nil, core.Location{})
		}, 512},
		{"slabs", func(b *core.Builder) (core.Value, error) {
			x, y := b.Param("x", f32(2, 300, 1, 1)), b.Param("y", f32(2, 300, 2, 1))
			return b.Op("concat", []core.Value{x, y}, core.Attrs{"axis": int64(2)}, core.Location{})
		}, 2},
		{"transposed", func(b *core.Builder) (core.Value, error) {
			return b.Op("transpose", []core.Value{b.Param("x", f32(3, 200, 1, 2))}, core.Attrs{"perm": []int64{0, 1, 3, 2}}, core.Location{})
		}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := core.NewBuilder(c.name)
			y, err := c.build(b)
			require.NoError(t, err)
			b.Output(y)
			compareOnISA(t, b.Graph(), 0, 0)
			most := 0
			for _, op := range tiled(t, b.Graph()).Ops {
				if op.Kind == TileElementwise {
					most = max(most, tileCount(op.Kind, op.Problem, op.Tile))
				}
			}
			require.LessOrEqual(t, most, c.most)
		})
	}
}

// A space whose last two axes fill their tiles keeps them (the merge is taken only
// when it makes fewer tiles).
func TestFullTrailingAxesAreKept(t *testing.T) {
	b := core.NewBuilder("full")
	typ := core.TensorType{DType: dtype.Float32, Shape: core.Shape{3, 1, 8192}} // a row fills a tile of the a2's UB
	y, err := b.Op("sub", []core.Value{b.Param("x", typ), b.Param("y", typ)}, nil, core.Location{})
	require.NoError(t, err)
	b.Output(y)
	require.Equal(t, []int{3, 1, 8192}, tiled(t, b.Graph()).Ops[0].Problem)
}

// tiled is g's tile graph for the a2 chip.
func tiled(t *testing.T, g *core.Graph) *TileGraph {
	chip, err := device.Preset("a2")
	require.NoError(t, err)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, StopAfter: "plan-exec"})
	require.NoError(t, err)
	return exe.Exec().Blocks.Tiles
}
