package lower

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// A tile graph built in Go (as the tiling pass builds it) prints, and parses back
// deep-equal but for the location, which the text leaves out.
func TestTileGraphBuiltInGo(t *testing.T) {
	f16 := func(dims ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: dims} }
	g := &TileGraph{
		Name: "a b",
		Tensors: []GMTensor{
			{Value: 0, Type: f16(16, 16), Role: RoleInput},
			{Value: 1, Type: f16(16, 16), Role: RoleInput},
			{Value: 7, Type: f16(16, 16), Role: RoleOutput},
		},
		Ops: []*TileOp{{
			Node: 7, Op: "matmul", Kind: TileMatmul, Core: isa.Cube, Inputs: []int{1, 0}, Output: 2,
			Attrs:   core.Attrs{"transpose_a": true, "scale": math.Copysign(0, -1), "axes": []int64{-1}, "note": "x # y\n", "n": int64(3)},
			Tile:    []int{16, 16, 16, 1, 16},
			Grid:    []int{1, 1, 1, 1},
			Problem: []int{1, 16, 16, 16},
			Loc:     core.Location{File: "model.py", Line: 3},
			Reason:  `a "why" # not a comment`,
		}},
		Params:  []int{1, 0},
		Outputs: []int{2},
	}
	require.NoError(t, g.Verify())
	text := g.Format()
	assert.Equal(t, `tilegraph "a b" {
  tensor t0: f16[16,16] input %0
  tensor t1: f16[16,16] input %1
  tensor t2: f16[16,16] output %7
  params (t1, t0)
  op0: t2 = matmul(t1, t0) {axes=[-1], n=3, note="x # y\n", scale=-0.0, transpose_a=true}
    kind=matmul core=cube problem=[1,16,16,16] tile=[16,16,16,1,16] grid=[1,1,1,1]
    reason="a \"why\" # not a comment"
  return (t2)
}
`, text)
	parsed, err := ParseTileGraph(text)
	require.NoError(t, err)
	g.Ops[0].Loc = core.Location{}
	assert.Equal(t, g, parsed)
	assert.True(t, math.Signbit(parsed.Ops[0].Attrs["scale"].(float64)), "-0.0 keeps its sign")
}

// The block parser checks what does not depend on the chip; the core counts are
// BlockGraph.Verify's, given the chip.
func TestParseBlockGraphLeavesCoreCountsToVerify(t *testing.T) {
	tg, err := ParseTileGraph(readFile(t, "testdata/golden/matmul_multicore.tile.golden"))
	require.NoError(t, err)
	bg, err := ParseBlockGraph(`blockgraph mc {
  kernel k0 = op0 matmul core=cube blocks=3 {
    block 0: tiles [0:2:1]
    block 1: tiles [2:4:1]
    block 2: tiles [4:6:1]
  }
  kernel k1 = op1 relu core=vector blocks=1 {
    block 0: tiles [0:11:1]
  }
}`, tg)
	require.NoError(t, err)
	assert.Same(t, tg, bg.Tiles)
	assert.EqualError(t, bg.Verify(tinyChip(t).Cores), "blockgraph: kernel k0 has 3 blocks for 2 cube cores")

	_, err = ParseBlockGraph("blockgraph mc {}", nil)
	assert.EqualError(t, err, "ValueError: 1:1: no tile graph to read the block graph against")
}

// A block graph text cannot make the parser allocate without bound: the tile count of
// an op is capped before any list is expanded.
func TestParseBlockGraphBoundsTileCounts(t *testing.T) {
	tg, err := ParseTileGraph(`tilegraph big {
  tensor t0: i8[4096,1048576] input %0
  tensor t1: i8[4096,1048576] output %1
  params (t0)
  op0: t1 = relu(t0)
    kind=elementwise core=vector problem=[1,4096,1048576] tile=[1,32] grid=[1,4096,32768]
  return (t1)
}`)
	require.NoError(t, err)
	_, err = ParseBlockGraph("blockgraph big {\n  kernel k0 = op0 relu core=vector blocks=1 {\n    block 0: tiles [0:134217728:1]\n  }\n}", tg)
	assert.EqualError(t, err, "ValueError: 2:10: op0 has more than 16777216 tiles, more than a block graph text may list")
}

// Format describes whatever it is given, since a broken graph is what one wants to
// look at; what it prints for broken parts does not parse.
func TestFormatMalformedGraphsDoesNotPanic(t *testing.T) {
	tg := &TileGraph{Name: "g", Ops: []*TileOp{nil}}
	bg := &BlockGraph{Tiles: tg, Kernels: []*Kernel{nil, {Op: 5}}}
	eg := &ExecGraph{Blocks: bg, Buffers: []Buffer{{}}, Tasks: []*Task{{Kernel: 9, Args: []int{3}}}}
	for _, text := range []string{tg.Format(), bg.Format(), eg.Format(true), eg.Format(false), (&BlockGraph{}).Format(), (&ExecGraph{}).Format(true)} {
		assert.Contains(t, text, "<")
	}
	_, err := ParseExecGraph(eg.Format(true))
	assert.Error(t, err)
}

// Format(false) is a summary: the tasks without programs or the nested graphs.
func TestExecSummaryLeavesOutProgramsAndGraphs(t *testing.T) {
	eg, err := ParseExecGraph(readFile(t, "testdata/golden/matmul_relu.exec.golden"))
	require.NoError(t, err)
	summary := eg.Format(false)
	assert.NotContains(t, summary, "tilegraph")
	assert.NotContains(t, summary, "kernel matmul_0_b0")
	assert.Contains(t, summary, "task 0 matmul_0 kernel=k0 core=cube blocks=2 args=(t0, t1, t2) deps=[]\n")
}
