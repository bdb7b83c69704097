package lower

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// A matmul block whose tiles share rows keeps A's K stages in L1 and loads them once
// per row of tiles: fewer A loads than tiles times stages, the reference's values,
// plain and with an epilogue. The matmul is given its 256 x 128 tiles (blocks of two
// tiles of a row): the search's choice between them and 128 x 256 (blocks of two tiles
// of a column, which share B) is within 0.3% of the time.
func TestResidentAStagesLoadOncePerRow(t *testing.T) {
	chip := preset(t, "a2")
	for _, epilogue := range []bool{false, true} {
		var g *core.Graph
		if epilogue {
			g = reluLinearGraph(t, 512, 384, 3072, core.Attrs{core.AttrTileShape: []int64{256, 128, 64}})
		} else {
			g = matmulGraph(t, dtype.Float16, core.Shape{512, 384}, core.Shape{384, 3072}, core.Attrs{core.AttrTileShape: []int64{256, 128, 64}}, false)
		}
		exe, err := Compile(g, Options{Chip: chip, Verify: true})
		require.NoError(t, err)
		op := exe.Exec().Blocks.Tiles.Ops[0]
		task := exe.Exec().Tasks[0]
		prog := task.Programs[0] // block 0's cube program
		require.Contains(t, isa.Format(prog), "a_l1_k0", "A's stages have tiles of their own")
		t.Logf("tile %v", op.Tile)
		tiles := len(exe.Exec().Blocks.Kernels[0].Blocks[0])
		stages := ceilDiv(op.Problem[3], op.Tile[2]*op.Tile[3])
		aLoads := 0
		for _, in := range prog.Body {
			if in.Op == isa.TLOAD && strings.HasPrefix(prog.Tiles[in.Args[0].Tile].Name, "a_l1") {
				aLoads++
			}
		}
		require.Less(t, aLoads, tiles*stages, "A is loaded once per row of tiles")
		compileAndCompare(t, chip, g, 384)
	}
}

// reluLinearGraph is relu(x @ w + bias) in f16, the matmul with the given attributes.
func reluLinearGraph(t *testing.T, m, k, n int, attrs core.Attrs) *core.Graph {
	bl := core.NewBuilder("linear")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{m, k}})
	w := bl.Param("w", core.TensorType{DType: dtype.Float16, Shape: core.Shape{k, n}})
	bias := bl.Param("bias", core.TensorType{DType: dtype.Float16, Shape: core.Shape{n}})
	y, err := bl.Op("matmul", []core.Value{x, w}, attrs, core.Location{})
	require.NoError(t, err)
	y, err = bl.Op("add", []core.Value{y, bias}, nil, core.Location{})
	require.NoError(t, err)
	y, err = bl.Op("relu", []core.Value{y}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	return bl.Graph()
}
