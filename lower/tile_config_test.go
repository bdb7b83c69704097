package lower

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// oneOpGraph applies op to params of the given shapes (f32), with attrs.
func oneOpGraph(t *testing.T, op string, attrs core.Attrs, dt dtype.DType, shapes ...core.Shape) *core.Graph {
	t.Helper()
	bl := core.NewBuilder(op)
	var ins []core.Value
	for i, s := range shapes {
		ins = append(ins, bl.Param(string(rune('a'+i)), core.TensorType{DType: dt, Shape: s}))
	}
	y, err := bl.Op(op, ins, attrs, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	return bl.Graph()
}

// tileOpOf compiles g for the tiny chip and returns its first tile op of the op named.
func tileOpOf(t *testing.T, g *core.Graph, op string) *TileOp {
	t.Helper()
	exe, err := Compile(g, Options{Chip: preset(t, "tiny"), Verify: true})
	require.NoError(t, err)
	for _, o := range exe.exec.Blocks.Tiles.Ops {
		if o.Op == op {
			return o
		}
	}
	t.Fatalf("no tile op %s in the compiled graph", op)
	return nil
}

func TestGivenMatmulTileIsHonoured(t *testing.T) {
	attrs := core.Attrs{core.AttrTileShape: []int64{32, 64, 32}, core.AttrTileFormat: "NZ"}
	g := matmulGraph(t, dtype.Float16, core.Shape{100, 70}, core.Shape{70, 130}, attrs, false)
	op := tileOpOf(t, g, "matmul")
	require.Equal(t, []int{32, 64, 32, 1, 70}, op.Tile)
	require.True(t, strings.HasPrefix(op.Reason, "given"), op.Reason)
	compileAndCompare(t, preset(t, "tiny"), g, 70)
}

func TestGivenMatmulTileKeepsThroughTheEpilogue(t *testing.T) {
	g := matmulGraph(t, dtype.Float16, core.Shape{64, 64}, core.Shape{64, 64}, core.Attrs{core.AttrTileShape: []int64{32, 32, 32}}, true)
	op := tileOpOf(t, g, "fused_matmul")
	require.Equal(t, []int{32, 32, 32}, op.Tile[:3])
	require.Contains(t, op.Reason, "given")
	compileAndCompare(t, preset(t, "tiny"), g, 64)
}

func TestGivenTilesThatDoNotFitNameTheLimit(t *testing.T) {
	for _, c := range []struct {
		g    *core.Graph
		want string
	}{
		{matmulGraph(t, dtype.Float16, core.Shape{512, 512}, core.Shape{512, 512}, core.Attrs{core.AttrTileShape: []int64{256, 256, 64}}, false), "L0A"},
		{matmulGraph(t, dtype.Float16, core.Shape{64, 64}, core.Shape{64, 64}, core.Attrs{core.AttrTileShape: []int64{24, 64, 32}}, false), "fractal"},
		{oneOpGraph(t, "add", core.Attrs{core.AttrTileShape: []int64{64, 512}}, dtype.Float32, core.Shape{64, 512}, core.Shape{64, 512}), "UB"},
		{oneOpGraph(t, "add", core.Attrs{core.AttrTileShape: []int64{4, 12}}, dtype.Float32, core.Shape{64, 512}, core.Shape{64, 512}), "multiple of 8"},
		{oneOpGraph(t, "add", core.Attrs{core.AttrTileFormat: "NZ"}, dtype.Float32, core.Shape{4, 8}, core.Shape{4, 8}), "ND"},
		{oneOpGraph(t, "sum", core.Attrs{"axis": []int64{-1}, core.AttrTileShape: []int64{16, 64}}, dtype.Float32, core.Shape{64, 512}), "multiple of 32"},
		{oneOpGraph(t, "cumsum", core.Attrs{core.AttrTileShape: []int64{1, 64}}, dtype.Float32, core.Shape{4, 64}), "picks its own tile"},
	} {
		_, err := Compile(c.g, Options{Chip: preset(t, "tiny"), Verify: true})
		require.Error(t, err, c.want)
		require.Contains(t, err.Error(), c.want)
	}
}

func TestGivenVectorTilesAreHonoured(t *testing.T) {
	add := oneOpGraph(t, "add", core.Attrs{core.AttrTileShape: []int64{3, 64}}, dtype.Float32, core.Shape{2, 10, 100}, core.Shape{2, 10, 100})
	op := tileOpOf(t, add, "add")
	require.Equal(t, []int{3, 64}, op.Tile)
	require.Equal(t, "given [3 64]; fits chip tiny", op.Reason)
	compileAndCompare(t, preset(t, "tiny"), add, 1)

	big := oneOpGraph(t, "add", core.Attrs{core.AttrTileShape: []int64{64, 64}}, dtype.Float32, core.Shape{5, 40}, core.Shape{5, 40})
	require.Equal(t, []int{5, 40}, tileOpOf(t, big, "add").Tile, "a tile larger than the problem is cut to it")

	sum := oneOpGraph(t, "sum", core.Attrs{"axis": []int64{-1}, core.AttrTileShape: []int64{32, 32}}, dtype.Float32, core.Shape{70, 300})
	require.Equal(t, []int{32, 32}, tileOpOf(t, sum, "sum").Tile)
	compileAndCompare(t, preset(t, "tiny"), sum, 300)

	cols := oneOpGraph(t, "sum", core.Attrs{"axis": []int64{0}, core.AttrTileShape: []int64{8, 16}}, dtype.Float32, core.Shape{70, 300})
	require.Equal(t, []int{8, 16}, tileOpOf(t, cols, "sum").Tile)
	compileAndCompare(t, preset(t, "tiny"), cols, 70)
}

// A tile given to softmax reaches the row kernel its decomposition fuses into.
func TestGivenSoftmaxTileReachesTheRowKernel(t *testing.T) {
	g := oneOpGraph(t, "softmax", core.Attrs{"axis": int64(-1), core.AttrTileShape: []int64{2}}, dtype.Float32, core.Shape{9, 100})
	op := tileOpOf(t, g, "fused_rows")
	require.Equal(t, 2, op.Tile[0])
	require.Contains(t, op.Reason, "given [2]")
	compileAndCompare(t, preset(t, "tiny"), g, 100)
}

func TestTileAttrsPrintAndParseBack(t *testing.T) {
	g := oneOpGraph(t, "relu", core.Attrs{core.AttrTileShape: []int64{4, 32}, core.AttrTileFormat: "ND"}, dtype.Float32, core.Shape{8, 32})
	text := core.Format(g)
	require.Contains(t, text, "tile_shape=[4,32]")
	back, err := core.Parse(text)
	require.NoError(t, err)
	require.Equal(t, text, core.Format(back))
	plain := core.Format(oneOpGraph(t, "relu", nil, dtype.Float32, core.Shape{8, 32}))
	require.NotContains(t, plain, "tile_", "nodes without a tile print as before")
}

func TestTileChoicesListEveryTileOpWithTheMatmulEstimate(t *testing.T) {
	g := matmulGraph(t, dtype.Float16, core.Shape{100, 70}, core.Shape{70, 130}, nil, false)
	exe, err := Compile(g, Options{Chip: preset(t, "tiny"), Verify: true})
	require.NoError(t, err)
	choices := exe.TileChoices(nil)
	require.NotEmpty(t, choices)
	require.Zero(t, choices[0].MeasuredCycles, "not run")
	mm := choices[0]
	require.Equal(t, "matmul", mm.Kind)
	require.Equal(t, []int{1, 100, 130, 70}, mm.Problem)
	require.Contains(t, mm.Reason, "fastest of")
	require.Contains(t, mm.Reason, fmt.Sprintf("est %.0f cycles", mm.EstimatedCycles), "the estimate is the search's")
	require.InDelta(t, mm.EstimatedCycles/1.85e9*1e3, mm.EstimatedMs, 1e-9)
	for _, c := range choices[1:] {
		if c.Kind != "rows" {
			require.Zero(t, c.EstimatedCycles, "kernels with fixed tiles have no estimate: %+v", c)
		}
	}
}

func TestTileChoicesTakeEachOpsMeasuredTime(t *testing.T) {
	bl := core.NewBuilder("two")
	x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{8, 64}})
	s, err := bl.Op("sum", []core.Value{x}, core.Attrs{"axis": []int64{-1}}, core.Location{})
	require.NoError(t, err)
	e, err := bl.Op("exp", []core.Value{x}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(s)
	bl.Output(e)
	// The plain runtime: its tasks run one after another.
	exe, err := Compile(bl.Graph(), Options{Chip: preset(t, "tiny"), Verify: true, OptLevel: O1, Runtime: PlainRuntime()})
	require.NoError(t, err)
	_, raw := randomInputs(bl.Graph())
	_, st, err := exe.Run(raw)
	require.NoError(t, err)
	choices := exe.TileChoices(st)
	require.Len(t, choices, 2)
	var total int64
	for _, c := range choices {
		require.Positive(t, c.MeasuredCycles, c.Op)
		total += c.MeasuredCycles
	}
	require.Equal(t, st.Cycles, total, "the ops' times add up to the run's")
}
