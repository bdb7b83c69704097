package lower

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// ffnGraph is relu(x @ w1 + b1) @ w2 + r over u rows (x [1, u, k] as a traced input
// is), with the run's row count in a last int32 param, and the sizes telling the
// compiler that x's and r's rows are valid up to it.
func ffnGraph(t *testing.T, u, k, h, n int) (*core.Graph, *DynamicSizes) {
	bl := core.NewBuilder("ffn")
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: s} }
	x := bl.Param("x", f16(1, u, k))
	w1, b1 := bl.Param("w1", f16(k, h)), bl.Param("b1", f16(h))
	w2 := bl.Param("w2", f16(h, n))
	r := bl.Param("r", f16(u, n))
	bl.Param("sizes", core.TensorType{DType: dtype.Int32, Shape: core.Shape{1}})
	op := builderOp(t, bl)
	x2 := op("reshape", core.Attrs{"shape": []int64{int64(u), int64(k)}}, x)
	hid := op("relu", nil, op("add", nil, op("matmul", nil, x2, w1), b1))
	bl.Output(op("add", nil, op("matmul", nil, hid, w2), r))
	return bl.Graph(), &DynamicSizes{Param: 5, Symbols: []string{"s"}, Extents: [][]int{{-1, 0, -1}, {-1, -1}, {-1}, {-1, -1}, {0, -1}, {-1}}}
}

// ffnInputs are random inputs of ffnGraph whose rows past rows are zero (the padding a
// bucketed run gives them) and the sizes param holding rows.
func ffnInputs(g *core.Graph, rows int) [][]byte {
	rng := rand.New(rand.NewPCG(3, uint64(rows)))
	var raw [][]byte
	for i, p := range g.Params {
		typ := g.Type(p)
		if i == len(g.Params)-1 {
			raw = append(raw, dtype.Encode(dtype.Int32, []float64{float64(rows)}))
			continue
		}
		a := randomArray(rng, typ)
		if i == 0 || i == 4 { // x [1, u, k] and r [u, n]: rows along the axis before the last
			cols := typ.Shape[len(typ.Shape)-1]
			for j := rows * cols; j < len(a.Data); j++ {
				a.Data[j] = 0
			}
		}
		raw = append(raw, a.Bytes())
	}
	return raw
}

// A program compiled for a bound of the rows computes, for a run of fewer rows, the
// valid rows' bits of the program run padded, in fewer cycles: both matmuls loop over
// the tiles the run's rows need, the edge tile cut to its valid rows.
func TestDynamicRowsFollowTheRunSize(t *testing.T) {
	for _, chip := range presets(t) {
		for _, c := range []struct {
			u, k, h, n int
			fixed      bool // the fixed rules' tiles rather than the tile search's
		}{{200, 96, 160, 80, false}, {200, 96, 160, 80, true}, {500, 300, 250, 130, false}} {
			t.Run(fmt.Sprintf("%s/%dx%dx%dx%d/fixed=%v", chip.Name, c.u, c.k, c.h, c.n, c.fixed), func(t *testing.T) {
				g, dyn := ffnGraph(t, c.u, c.k, c.h, c.n)
				padded, err := Compile(g, Options{Chip: chip, Verify: true, FixedTiles: c.fixed})
				require.NoError(t, err)
				exe, err := Compile(g, Options{Chip: chip, Verify: true, FixedTiles: c.fixed, Dynamic: dyn})
				require.NoError(t, err)
				tg := exe.Exec().Blocks.Tiles
				dynamic := 0
				for _, op := range tg.Ops {
					if op.Kind == TileMatmul || op.Kind == TileMatmulEpilogue {
						require.NotNil(t, op.Dynamic, "op %s", op.Op)
						assert.Equal(t, DynamicRows{Sizes: tg.Params[5], Index: 0}, *op.Dynamic)
						dynamic++
					}
				}
				require.Equal(t, 2, dynamic)
				var cycles []int64
				for _, rows := range []int{1, 15, 17, c.u / 2, c.u - 1, c.u} {
					in := ffnInputs(g, rows)
					want, ps, err := padded.Run(in)
					require.NoError(t, err)
					got, st, err := exe.Run(in)
					require.NoError(t, err)
					valid := rows * c.n * 2
					require.Equal(t, want[0][:valid], got[0][:valid], "rows %d", rows)
					// The padded program keeps A's K stages in L1 across a row of tiles
					// (residentA); the tile loop loads them for every tile (loading only
					// on a new row would take a register-counted loop, a barrier), which
					// costs up to 7% at the bound here.
					assert.Less(t, st.Cycles, ps.Cycles+ps.Cycles/12, "rows %d: at most a few per cent over the padded program", rows)
					t.Logf("rows %d: %d cycles, padded %d", rows, st.Cycles, ps.Cycles)
					cycles = append(cycles, st.Cycles)
				}
				assert.Less(t, cycles[0], cycles[len(cycles)-1], "one row costs less than the bound")
			})
		}
	}
}

// The valid rows are those of the graph computed for their exact size by the
// reference interpreter (an independent oracle: exact sums, rounded once).
func TestDynamicRowsMatchTheReferenceOfTheExactSize(t *testing.T) {
	chip := preset(t, "a2")
	const u, k, h, n = 130, 64, 96, 48
	g, dyn := ffnGraph(t, u, k, h, n)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: dyn})
	require.NoError(t, err)
	for _, rows := range []int{1, 33, 130} {
		in := ffnInputs(g, rows)
		got, _, err := exe.Run(in)
		require.NoError(t, err)
		exact, _ := ffnGraph(t, rows, k, h, n)
		var ins []*core.Array
		for i, p := range exact.Params {
			typ := exact.Type(p)
			ins = append(ins, core.ArrayFromBytes(typ, in[i][:typ.Bytes()]))
		}
		want, err := core.Interpret(exact, ins)
		require.NoError(t, err)
		dev := core.ArrayFromBytes(want[0].Type, got[0][:want[0].Type.Bytes()])
		scale := maxAbs(want[0].Data)
		for j, w := range want[0].Data {
			tol := tolerance(dtype.Float16, w, h) + tolerance(dtype.Float16, scale, h)
			require.InDelta(t, w, dev.Data[j], tol, "rows %d element %d", rows, j)
		}
	}
}

// A run whose size is past the bound is refused by the device, not computed wrong.
func TestDynamicRowsPastTheBoundAreAnError(t *testing.T) {
	g, dyn := ffnGraph(t, 64, 32, 32, 32)
	exe, err := Compile(g, Options{Chip: preset(t, "tiny"), Verify: true, Dynamic: dyn})
	require.NoError(t, err)
	in := ffnInputs(g, 64)
	in[5] = dtype.Encode(dtype.Int32, []float64{65})
	_, _, err = exe.Run(in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rows")
}

// A kernel that stays padded reads whole inputs, so the matmul producing its input
// stays padded too; a matmul reading a padded kernel whose extents are followed (an
// elementwise one) may still follow the run's rows.
func TestPaddedReadersKeepTheirProducersPadded(t *testing.T) {
	bl := core.NewBuilder("mixed")
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: s} }
	x := bl.Param("x", f16(96, 64))
	w := bl.Param("w", f16(64, 64))
	bl.Param("sizes", core.TensorType{DType: dtype.Int32, Shape: core.Shape{1}})
	op := builderOp(t, bl)
	bl.Output(op("cumsum", core.Attrs{"axis": int64(-1)}, op("matmul", nil, x, w))) // a scan: not followed
	bl.Output(op("matmul", nil, op("add", nil, x, x), w))
	dyn := &DynamicSizes{Param: 2, Symbols: []string{"s"}, Extents: [][]int{{0, -1}, {-1, -1}, {-1}}}
	exe, err := Compile(bl.Graph(), Options{Chip: preset(t, "tiny"), Verify: true, Dynamic: dyn, OptLevel: O1})
	require.NoError(t, err)
	var kinds []string
	for _, op := range exe.Exec().Blocks.Tiles.Ops {
		kinds = append(kinds, fmt.Sprintf("%s:%v", op.Op, op.Dynamic != nil))
	}
	assert.Equal(t, []string{"matmul:false", "cumsum:false", "add:false", "matmul:true"}, kinds)
}

// Aliases are followed when they add or drop axes of size 1 or walk ranges of axes of
// their source (an axis walked whole maps to the alias's); merging axes is not.
func TestAliasAxesFollowWholeAxes(t *testing.T) {
	m, ok := aliasAxes(core.Shape{1, 8, 4}, nil, core.Shape{8, 4})
	require.True(t, ok)
	assert.Equal(t, []int{-1, 0, 1}, m)
	_, ok = aliasAxes(core.Shape{1, 8, 4}, nil, core.Shape{32})
	assert.False(t, ok, "a merge")
	// The transpose of [8, 4] walks the rows as its columns.
	m, ok = aliasAxes(core.Shape{8, 4}, &affineMap{strides: []int{1, 4}}, core.Shape{4, 8})
	require.True(t, ok)
	assert.Equal(t, []int{1, 0}, m)
	// Rows 2.. of the rows: the columns are walked whole, the rows are not.
	m, ok = aliasAxes(core.Shape{8, 4}, &affineMap{offset: 8, strides: []int{4, 1}}, core.Shape{6, 4})
	require.True(t, ok)
	assert.Equal(t, []int{-1, 1}, m)
	// Columns 4..8 of [3, 12] (a fused projection's second part) walk its rows whole.
	m, ok = aliasAxes(core.Shape{3, 12}, &affineMap{offset: 4, strides: []int{12, 1}}, core.Shape{3, 4})
	require.True(t, ok)
	assert.Equal(t, []int{0, -1}, m)
	_, ok = aliasAxes(core.Shape{3, 12}, &affineMap{offset: 10, strides: []int{12, 1}}, core.Shape{3, 4})
	assert.False(t, ok, "columns past the tensor's")
}

// The dynamic line of the tile graph's text form reads back; a bad index is an error
// at its line.
func TestDynamicRowsTextRoundTrips(t *testing.T) {
	g, dyn := ffnGraph(t, 64, 32, 32, 32)
	exe, err := Compile(g, Options{Chip: preset(t, "tiny"), Verify: true, Dynamic: dyn, StopAfter: "plan-exec"})
	require.NoError(t, err)
	text := exe.Exec().Blocks.Tiles.Format()
	require.Contains(t, text, "dynamic rows=t5[0]")
	back, err := ParseTileGraph(text)
	require.NoError(t, err)
	assert.Equal(t, text, back.Format())
	_, err = ParseTileGraph(strings.Replace(text, "dynamic rows=t5[0]", "dynamic rows=t5[1]", 1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "element 1 of t5, which has 1")
}

// A row kernel (a softmax over the last axis) whose rows are a symbol's runs the
// run's rows only, in groups of its load slots, with the bits of the padded program;
// a group's tiles past the last do nothing.
func TestDynamicRowKernelsFollowTheRunSize(t *testing.T) {
	for _, chip := range presets(t) {
		for _, c := range []struct{ u, cols int }{{100, 64}, {300, 200}} {
			t.Run(fmt.Sprintf("%s/%dx%d", chip.Name, c.u, c.cols), func(t *testing.T) {
				bl := core.NewBuilder("softmax")
				x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{1, c.u, c.cols}})
				bl.Param("sizes", core.TensorType{DType: dtype.Int32, Shape: core.Shape{1}})
				y, err := bl.Op("softmax", []core.Value{x}, core.Attrs{"axis": int64(-1)}, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				g := bl.Graph()
				dyn := &DynamicSizes{Param: 1, Symbols: []string{"s"}, Extents: [][]int{{-1, 0, -1}, {-1}}}
				padded, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				exe, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: dyn})
				require.NoError(t, err)
				require.Len(t, exe.Exec().Blocks.Tiles.Ops, 1)
				require.NotNil(t, exe.Exec().Blocks.Tiles.Ops[0].Dynamic, "the row kernel follows the rows")
				rng := rand.New(rand.NewPCG(5, uint64(c.u)))
				for _, rows := range []int{1, 2, 7, c.u / 3, c.u - 1, c.u} {
					a := randomArray(rng, g.Type(g.Params[0]))
					for j := rows * c.cols; j < len(a.Data); j++ {
						a.Data[j] = 0
					}
					in := [][]byte{a.Bytes(), dtype.Encode(dtype.Int32, []float64{float64(rows)})}
					want, _, err := padded.Run(in)
					require.NoError(t, err)
					got, _, err := exe.Run(in)
					require.NoError(t, err)
					valid := rows * c.cols * 2
					require.Equal(t, want[0][:valid], got[0][:valid], "rows %d", rows)
				}
			})
		}
	}
}

// A dynamic matmul's K stages are even in number, the base blocks unchanged.
func TestEvenStagesCutKAgain(t *testing.T) {
	assert.Equal(t, []kStage{{0, 256}, {256, 256}, {512, 256}, {768, 256}}, evenStages(kStages(1024, 384), 64))
	assert.Equal(t, []kStage{{0, 192}, {192, 192}, {384, 128}, {512, 100}}, evenStages(kStages(612, 256), 64), "blocks 3, 3, 2, 2; the last one partial")
	assert.Equal(t, []kStage{{0, 256}, {256, 256}}, evenStages(kStages(512, 256), 64))
	assert.Equal(t, []kStage{{0, 0}}, evenStages(kStages(0, 256), 64), "an empty K keeps its one stage")
	assert.Equal(t, []kStage{{0, 64}, {64, 64}, {128, 64}}, evenStages(kStages(192, 64), 64), "no stage of two blocks to split")
}

// The estimate of a program for a run counts a dynamic kernel over the run's rows: at
// the bound it is the padded estimate, below it less.
func TestEstimatesFollowTheRunRows(t *testing.T) {
	g, dyn := ffnGraph(t, 512, 256, 256, 128)
	exe, err := Compile(g, Options{Chip: preset(t, "a2"), Verify: true, Dynamic: dyn, StopAfter: "plan-exec"})
	require.NoError(t, err)
	whole, searched := exe.EstimatedMsAt(nil)
	require.True(t, searched)
	atBound, _ := exe.EstimatedMsAt([]int{512})
	few, _ := exe.EstimatedMsAt([]int{16})
	assert.Equal(t, whole, atBound)
	assert.Less(t, few, atBound)
}

// The estimate of a program places its tasks as a run does (the dispatcher with the
// program's runtime features): with the launches overlapped it is near the run's
// time, well under the sum of the tasks alone, and with the plain runtime it is that
// sum.
func TestEstimatesPlaceTheTasksAsARunDoes(t *testing.T) {
	const u = 512
	g, dyn := ffnGraph(t, u, 256, 256, 128)
	chip := preset(t, "a2")
	for _, rt := range []Runtime{{}, PlainRuntime()} {
		exe, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: dyn, Runtime: rt})
		require.NoError(t, err)
		_, st, err := exe.Run(ffnInputs(g, u))
		require.NoError(t, err)
		ms, _ := exe.EstimatedMsAt([]int{u})
		run, alone := st.Seconds*1e3, float64(st.SequentialCycles)/chip.ClockHz*1e3
		t.Logf("runtime %+v: estimate %.5f ms, run %.5f ms, tasks one after another %.5f ms", rt, ms, run, alone)
		assert.InEpsilon(t, run, ms, 0.05, "the estimate is within 5%% of the run")
		if rt == PlainRuntime() {
			continue
		}
		assert.Less(t, ms, 0.9*alone, "the launches overlap")
	}
}

// attentionGraph is a padded program's attention over u rows (as core.PlanPadding
// makes it): softmax(where(mask, q k^T, -inf)) where(keep, v, 0), q, k and v
// projections of x, whose rows are valid up to the run's size; mask and keep are true
// at the valid keys and rows.
func attentionGraph(t *testing.T, u, e int) (*core.Graph, *DynamicSizes) {
	bl := core.NewBuilder("attention")
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: s} }
	x := bl.Param("x", f16(u, e))
	wq, wk, wv := bl.Param("wq", f16(e, e)), bl.Param("wk", f16(e, e)), bl.Param("wv", f16(e, e))
	mask := bl.Param("mask", core.TensorType{DType: dtype.Bool, Shape: core.Shape{1, u}})
	keep := bl.Param("keep", core.TensorType{DType: dtype.Bool, Shape: core.Shape{u, 1}})
	bl.Param("sizes", core.TensorType{DType: dtype.Int32, Shape: core.Shape{1}})
	op := builderOp(t, bl)
	full := func(v float64) core.Value {
		return op("full", core.Attrs{"value": v, "dtype": "float16", "shape": []int64{}})
	}
	q, k, v := op("matmul", nil, x, wq), op("matmul", nil, x, wk), op("matmul", nil, x, wv)
	scores := op("matmul", core.Attrs{"transpose_b": true}, q, k)
	probs := op("softmax", core.Attrs{"axis": int64(-1)}, op("where", nil, mask, scores, full(math.Inf(-1))))
	bl.Output(op("matmul", nil, probs, op("where", nil, keep, v, full(0))))
	return bl.Graph(), &DynamicSizes{Param: 6, Symbols: []string{"s"},
		Extents: [][]int{{0, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {-1, 0}, {0, -1}, {-1}}, Masks: []int{4, 5}}
}

// With the keys' softmax selected by a mask and the values' matmul cutting its K at
// the run's size, the key and value projections follow the run's rows too: every
// matmul and the softmax are dynamic, and the valid rows have the bits of the padded program even when
// the input's padded rows hold NaN (which no dynamic kernel reads, and which the
// selects keep out of the padded program's sums).
func TestDynamicAttentionFollowsTheRunsKeys(t *testing.T) {
	const u, e = 160, 64
	chip := preset(t, "a2")
	g, dyn := attentionGraph(t, u, e)
	// Unfused: attention kernels (flash_attention) do not follow the run's size yet.
	off := map[string]bool{"fuse-attention": true}
	padded, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: off})
	require.NoError(t, err)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: dyn, Disabled: off})
	require.NoError(t, err)
	cut := 0
	for _, op := range exe.Exec().Blocks.Tiles.Ops {
		if op.Kind == TileElementwise { // the values' select: elementwise kernels stay padded
			continue
		}
		require.NotNil(t, op.Dynamic, "op %s (%s) stays padded", op.Op, op.Kind)
		if op.Dynamic.CutK {
			cut++
		}
	}
	assert.Equal(t, 1, cut, "the values' matmul cuts its K")
	for _, rows := range []int{1, 17, u / 2, u} {
		rng := rand.New(rand.NewPCG(7, uint64(rows)))
		in, dirty := paddedRunInputs(g, rng, rows, e, []int{4, 5}, 6)
		want, ps, err := padded.Run(in)
		require.NoError(t, err)
		got, st, err := exe.Run(dirty)
		require.NoError(t, err)
		require.Equal(t, want[0][:rows*e*2], got[0][:rows*e*2], "rows %d", rows)
		t.Logf("rows %d: %d cycles, padded %d", rows, st.Cycles, ps.Cycles) // launch-bound at this size
	}
}

// paddedRunInputs are a padded program's inputs for a run of rows rows: random, the
// first param's rows past the run zero (the padding a bucketed run gives them), the
// mask params true at the run's rows (their first elements), the sizes param the run's
// count; dirty is the same with NaN in the first param's padded rows (e columns each).
func paddedRunInputs(g *core.Graph, rng *rand.Rand, rows, e int, masks []int, sizes int) (in, dirty [][]byte) {
	for i, p := range g.Params {
		typ := g.Type(p)
		switch {
		case slices.Contains(masks, i):
			buf := make([]byte, typ.Bytes())
			for j := range rows {
				buf[j] = 1
			}
			in = append(in, buf)
		case i == sizes:
			in = append(in, dtype.Encode(dtype.Int32, []float64{float64(rows)}))
		default:
			a := randomArray(rng, typ)
			if i == 0 {
				for j := rows * e; j < len(a.Data); j++ {
					a.Data[j] = 0
				}
			}
			in = append(in, a.Bytes())
		}
	}
	dirty = append(dirty, in...)
	x := core.ArrayFromBytes(g.Type(g.Params[0]), in[0])
	for j := rows * e; j < len(x.Data); j++ {
		x.Data[j] = math.NaN()
	}
	dirty[0] = x.Bytes()
	return in, dirty
}

// causalAttentionGraph is a padded program's causal attention over u rows (as
// core.PlanPadding makes it): scaled_dot_product_attention(q, k, where(keep, v, 0)),
// is_causal, of projections of x, whose rows are valid up to the run's size.
func causalAttentionGraph(t *testing.T, u, e int) (*core.Graph, *DynamicSizes) {
	bl := core.NewBuilder("causal_attention")
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: s} }
	x := bl.Param("x", f16(u, e))
	wq, wk, wv := bl.Param("wq", f16(e, e)), bl.Param("wk", f16(e, e)), bl.Param("wv", f16(e, e))
	keep := bl.Param("keep", core.TensorType{DType: dtype.Bool, Shape: core.Shape{u, 1}})
	bl.Param("sizes", core.TensorType{DType: dtype.Int32, Shape: core.Shape{1}})
	op := builderOp(t, bl)
	zero := op("full", core.Attrs{"value": 0.0, "dtype": "float16", "shape": []int64{}})
	q, k, v := op("matmul", nil, x, wq), op("matmul", nil, x, wk), op("matmul", nil, x, wv)
	bl.Output(op("scaled_dot_product_attention", core.Attrs{"is_causal": true}, q, k, op("where", nil, keep, v, zero)))
	return bl.Graph(), &DynamicSizes{Param: 5, Symbols: []string{"s"},
		Extents: [][]int{{0, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {0, -1}, {-1}}, Masks: []int{4}}
}

// A causal attention kernel follows the run's size: it runs only the query tiles the
// run's rows need and loads its keys and values up to the run's size, so that the
// projections of its keys and values may leave their padded rows unwritten too. The
// valid rows have the bits of the padded program, even with NaN in the input's padded
// rows, and fewer rows cost fewer cycles.
func TestDynamicCausalAttentionFollowsTheRunsSize(t *testing.T) {
	const u, e = 640, 64
	chip := preset(t, "a2")
	g, dyn := causalAttentionGraph(t, u, e)
	padded, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: dyn})
	require.NoError(t, err)
	kinds := map[TileKind]int{}
	for _, op := range exe.Exec().Blocks.Tiles.Ops {
		if op.Dynamic != nil {
			kinds[op.Kind]++
			if op.Kind == TileAttention {
				assert.True(t, op.Dynamic.CutK, "the attention cuts its keys")
			}
		}
	}
	assert.Equal(t, 1, kinds[TileAttention], "the attention follows the run")
	assert.Positive(t, kinds[TileMatmul]+kinds[TileMatmulEpilogue], "and so do the projections")
	var cycles []int64
	for _, rows := range []int{1, 100, 333, u} {
		rng := rand.New(rand.NewPCG(9, uint64(rows)))
		in, dirty := paddedRunInputs(g, rng, rows, e, []int{4}, 5)
		want, ps, err := padded.Run(in)
		require.NoError(t, err)
		got, st, err := exe.Run(dirty)
		require.NoError(t, err)
		require.Equal(t, want[0][:rows*e*2], got[0][:rows*e*2], "rows %d", rows)
		var att int64
		for k, task := range exe.Exec().Tasks {
			if exe.Exec().Blocks.Tiles.Ops[exe.Exec().Blocks.Kernels[task.Kernel].Op].Kind == TileAttention {
				att = st.Tasks[k].Stats.KernelCycles
			}
		}
		t.Logf("rows %d: %d cycles (the attention's kernel %d), padded %d", rows, st.Cycles, att, ps.Cycles)
		cycles = append(cycles, att)
	}
	assert.Less(t, cycles[1], cycles[len(cycles)-1]*3/5, "the attention of 100 rows costs much less than at the bound")
}

// A padded program zeroes the value rows past the run's size (where(keep, v, 0)); with
// a bias the select joins the value projection's epilogue. Where that projection
// computes only the run's rows, the select is the identity on them: the epilogue drops
// it and its mask (dynamic_row_selects.go), and the rows the product reads have the
// padded program's bits.
func TestDynamicEpilogueDropsTheSelectOfItsRows(t *testing.T) {
	const u, e = 192, 512 // wide enough rows for the select to join the epilogue
	chip := preset(t, "a2")
	bl := core.NewBuilder("values")
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: s} }
	x, wv, bv := bl.Param("x", f16(u, e)), bl.Param("wv", f16(e, e)), bl.Param("bv", f16(e))
	probs := bl.Param("probs", f16(u, u))
	keep := bl.Param("keep", core.TensorType{DType: dtype.Bool, Shape: core.Shape{u, 1}})
	bl.Param("sizes", core.TensorType{DType: dtype.Int32, Shape: core.Shape{1}})
	op := builderOp(t, bl)
	zero := op("full", core.Attrs{"value": 0.0, "dtype": "float16", "shape": []int64{}})
	v := op("add", nil, op("matmul", nil, x, wv), bv)
	bl.Output(op("matmul", nil, probs, op("where", nil, keep, v, zero)))
	g := bl.Graph()
	dyn := &DynamicSizes{Param: 5, Symbols: []string{"s"},
		Extents: [][]int{{0, -1}, {-1, -1}, {-1}, {0, 0}, {0, -1}, {-1}}, Masks: []int{4}}
	padded, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	selects := func(exe *Executable) (epilogues, withSelect int) {
		for _, op := range exe.Exec().Blocks.Tiles.Ops {
			if op.Kind == TileMatmulEpilogue {
				epilogues++
				if strings.Contains(op.Attrs.Str("body", ""), "where") {
					withSelect++
				}
			}
		}
		return epilogues, withSelect
	}
	n, s := selects(padded)
	require.Equal(t, 1, n, "the select joins the values' epilogue")
	require.Equal(t, 1, s, "the padded program selects")
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: dyn})
	require.NoError(t, err)
	for _, op := range exe.Exec().Blocks.Tiles.Ops {
		require.NotNil(t, op.Dynamic, "op %s (%s) stays padded", op.Op, op.Kind)
		if op.Kind == TileMatmulEpilogue {
			assert.Len(t, op.Inputs, 3, "x, wv and the bias: the mask is no longer read")
		}
	}
	n, s = selects(exe)
	require.Equal(t, 1, n)
	require.Equal(t, 0, s, "the dynamic epilogue drops the select of its rows")
	for _, rows := range []int{1, 100, u} {
		rng := rand.New(rand.NewPCG(11, uint64(rows)))
		in, dirty := paddedRunInputs(g, rng, rows, e, []int{4}, 5)
		want, _, err := padded.Run(in)
		require.NoError(t, err)
		got, _, err := exe.Run(dirty)
		require.NoError(t, err)
		require.Equal(t, want[0][:rows*e*2], got[0][:rows*e*2], "rows %d", rows)
	}
}

// builderOp applies ops to bl, failing the test on an error.
func builderOp(t *testing.T, bl *core.Builder) func(name string, attrs core.Attrs, in ...core.Value) core.Value {
	return func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
}
