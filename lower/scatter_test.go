package lower

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// scatterCase is an index_put (idx: one shape per index tensor) or a scatter (idx: the
// index's shape, src: the values' shape) on x.
type scatterCase struct {
	op    string
	x     core.Shape
	src   core.Shape
	idx   []core.Shape
	attrs core.Attrs
}

// graph builds the case for dt: params x, the values, then the indices.
func (c scatterCase) graph(t *testing.T, dt dtype.DType) *core.Graph {
	b := core.NewBuilder("scatter_case")
	x := b.Param("x", core.TensorType{DType: dt, Shape: c.x})
	v := b.Param("v", core.TensorType{DType: dt, Shape: c.src})
	var idx []core.Value
	for i, s := range c.idx {
		idx = append(idx, b.Param(fmt.Sprintf("i%d", i), core.TensorType{DType: dtype.Int32, Shape: s}))
	}
	in := append([]core.Value{x, v}, idx...)
	if c.op == "scatter" {
		in = []core.Value{x, idx[0], v}
	}
	y, err := b.Op(c.op, in, c.attrs, core.Location{File: "model.py", Line: 12})
	require.NoError(t, err)
	b.Output(y)
	return b.Graph()
}

// indexRange is the range [lo, n) of the values index i of the case may hold.
func (c scatterCase) indexRange(i int) (lo, n int) {
	if c.op == "scatter" {
		d := int(c.attrs.Int("dim", 0))
		if d < 0 {
			d += len(c.x)
		}
		return 0, c.x[d]
	}
	return -c.x[i], c.x[i]
}

// inputs draws the case's inputs: random values and indices in range (with
// duplicates, as small axes make certain).
func (c scatterCase) inputs(g *core.Graph, seed uint64) ([]*core.Array, [][]byte) {
	ins, raw := randomInputs(g)
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range c.idx {
		k := 2 + i
		a := core.NewArray(g.Type(g.Params[k]))
		lo, n := c.indexRange(i)
		for e := range a.Data {
			a.Data[e] = float64(lo + rng.IntN(n-lo))
		}
		ins[k], raw[k] = a, a.Bytes()
	}
	return ins, raw
}

var scatterCases = []scatterCase{
	{"scatter", core.Shape{37}, core.Shape{20}, []core.Shape{{20}}, core.Attrs{"dim": int64(0)}},
	{"scatter", core.Shape{5, 300}, core.Shape{6, 290}, []core.Shape{{5, 270}}, core.Attrs{"dim": int64(-1)}},            // along cols, several col tiles
	{"scatter", core.Shape{7, 45}, core.Shape{9, 45}, []core.Shape{{9, 33}}, core.Attrs{"dim": int64(0)}},                // along rows, index narrower than x
	{"scatter", core.Shape{3, 4, 5, 6}, core.Shape{3, 3, 5, 6}, []core.Shape{{2, 3, 4, 5}}, core.Attrs{"dim": int64(1)}}, // along a leading axis
	{"scatter", core.Shape{4, 3, 70}, core.Shape{6, 3, 70}, []core.Shape{{6, 2, 70}}, core.Attrs{"dim": int64(0), "reduce": "add"}},
	{"index_put", core.Shape{6, 5}, core.Shape{13}, []core.Shape{{13}, {13}}, nil}, // every axis: elements
	{"index_put", core.Shape{3, 4, 2}, core.Shape{2, 7}, []core.Shape{{2, 7}, {2, 7}, {2, 7}}, core.Attrs{"accumulate": true}},
	{"index_put", core.Shape{40, 3, 33}, core.Shape{9, 3, 33}, []core.Shape{{9}}, nil}, // rows of a cache
	{"index_put", core.Shape{5, 6, 300}, core.Shape{4, 2, 300}, []core.Shape{{4, 2}, {4, 2}}, core.Attrs{"accumulate": true}},
	{"index_put", core.Shape{6, 2, 1000}, core.Shape{5, 2, 1000}, []core.Shape{{5}}, nil}, // wide rows: stored row by row
	{"index_put", core.Shape{4, 5, 3000}, core.Shape{7, 3000}, []core.Shape{{7}, {7}}, core.Attrs{"accumulate": true}},
}

func TestScatterOpsMatchTheReference(t *testing.T) {
	for _, chip := range presets(t) {
		for ci, tc := range scatterCases {
			for _, dt := range []dtype.DType{dtype.Float32, dtype.Float16, dtype.BFloat16, dtype.Int8, dtype.Int32, dtype.Bool} {
				if dt == dtype.Bool && (tc.attrs.Bool("accumulate", false) || tc.attrs.Str("reduce", "none") == "add") {
					continue
				}
				g := tc.graph(t, dt)
				ins, raw := tc.inputs(g, uint64(ci))
				want, err := core.Interpret(g, ins)
				require.NoError(t, err)
				for _, donate := range [][]int{nil, {0}} {
					exe, err := Compile(g, Options{Chip: chip, Verify: true, Donate: donate})
					require.NoError(t, err, "%s %v %s", tc.op, tc.x, dt)
					outs, st, err := exe.Run(raw)
					require.NoError(t, err, "%s %v %s", tc.op, tc.x, dt)
					require.Equal(t, want[0].Bytes(), outs[0], "%s %s x %v %s donate %v", chip.Name, tc.op, tc.x, dt, donate)
					if donate == nil {
						continue
					}
					// Only the values move (and the indices); x's bytes are the result's.
					rd, wr := gmBytes(st)
					vals := int64(tc.src.NumElements() * dt.Size())
					if tc.op == "scatter" {
						vals = int64(tc.idx[0].NumElements() * dt.Size())
					}
					assert.Equal(t, vals, wr, "%s %s %v %s: only the values are written", chip.Name, tc.op, tc.x, dt)
					assert.Len(t, exe.Exec().Tasks, 1)
					assert.Less(t, rd, int64(tc.x.NumElements()*dt.Size())+vals*2+int64(4*16*tc.src.NumElements()))
				}
			}
		}
	}
}

// A KV cache of 64 rows written a row at a time: the bytes moved do not grow with
// the cache, and several blocks share the work when a row is wide.
func TestIndexPutOfDonatedCacheMovesOnlyTheRows(t *testing.T) {
	chip := preset(t, "a2")
	for _, rows := range []int{64, 1024} {
		tc := scatterCase{"index_put", core.Shape{rows, 4096}, core.Shape{2, 4096}, []core.Shape{{2}}, nil}
		g := tc.graph(t, dtype.Float16)
		ins, raw := tc.inputs(g, 3)
		want, err := core.Interpret(g, ins)
		require.NoError(t, err)
		exe, err := Compile(g, Options{Chip: chip, Verify: true, Donate: []int{0}})
		require.NoError(t, err)
		outs, st, err := exe.Run(raw)
		require.NoError(t, err)
		require.Equal(t, want[0].Bytes(), outs[0])
		rd, wr := gmBytes(st)
		assert.Equal(t, int64(2*4096*2), wr)
		kernel := exe.Exec().Blocks.Kernels[0]
		assert.Greater(t, len(kernel.Blocks), 1, "a wide row is split over blocks")
		colTiles := exe.Exec().Blocks.Tiles.Ops[0].Grid[2]
		assert.LessOrEqual(t, rd, int64(2*4096*2+colTiles*2*4), "the rows and each column tile's two indices")
		assert.Empty(t, exe.UpdateCopies())
	}
}

// Wide rows are stored row by row (rowStoresPay), narrow ones scattered.
func TestIndexPutStoresWideRowsWhole(t *testing.T) {
	for _, tc := range []struct {
		cols      int
		rowStores bool
	}{{64, false}, {4096, true}} {
		c := scatterCase{"index_put", core.Shape{16, tc.cols}, core.Shape{3, tc.cols}, []core.Shape{{3}}, nil}
		exe, err := Compile(c.graph(t, dtype.Float16), Options{Chip: preset(t, "a2"), Verify: true, Donate: []int{0}})
		require.NoError(t, err)
		assert.Equal(t, scatterWrites(tc.rowStores), exe.Exec().Blocks.Tiles.Ops[0].Tile[2], "rows of %d", tc.cols)
	}
}

func TestScatterIndexOutsideNamesTheLine(t *testing.T) {
	chip := preset(t, "tiny")
	for _, tc := range []struct {
		c   scatterCase
		bad int
		msg string
	}{
		{scatterCase{"index_put", core.Shape{8, 16}, core.Shape{3, 16}, []core.Shape{{3}}, nil}, 8, "index_put: index 8 is out of range for axis 0 of size 8"},
		{scatterCase{"index_put", core.Shape{8, 16}, core.Shape{3, 16}, []core.Shape{{3}}, nil}, -9, "index_put: index -9 is out of range for axis 0 of size 8"},
		{scatterCase{"index_put", core.Shape{8, 16}, core.Shape{3}, []core.Shape{{3}, {3}}, nil}, 1 << 30, "index 1073741824 is out of range for axis 0"},
		{scatterCase{"index_put", core.Shape{8, 4096}, core.Shape{3, 4096}, []core.Shape{{3}}, nil}, 8, "index_put: index 8 is out of range for axis 0 of size 8"},
		{scatterCase{"index_put", core.Shape{8, 4096}, core.Shape{3, 4096}, []core.Shape{{3}}, nil}, -9, "index_put: index -9 is out of range for axis 0 of size 8"},
		{scatterCase{"index_put", core.Shape{8, 4096}, core.Shape{3, 4096}, []core.Shape{{3}}, nil}, 1 << 30, "index 1073741824 is out of range"},
		{scatterCase{"scatter", core.Shape{8, 16}, core.Shape{2, 16}, []core.Shape{{2, 16}}, core.Attrs{"dim": int64(0)}}, -1, "scatter: index -1 is out of range for axis 0 of size 8"},
		{scatterCase{"scatter", core.Shape{8, 16}, core.Shape{2, 16}, []core.Shape{{2, 16}}, core.Attrs{"dim": int64(1)}}, 16, "scatter: index 16 is out of range for axis 1 of size 16"},
	} {
		g := tc.c.graph(t, dtype.Float32)
		_, raw := tc.c.inputs(g, 1)
		a := core.ArrayFromBytes(g.Type(g.Params[2]), raw[2])
		a.Data[1] = float64(tc.bad)
		raw[2] = a.Bytes()
		exe, err := Compile(g, Options{Chip: chip, Verify: true, Donate: []int{0}})
		require.NoError(t, err)
		_, _, err = exe.Run(raw)
		var ce *core.Error
		require.ErrorAs(t, err, &ce, "%s index %d", tc.c.op, tc.bad)
		assert.Contains(t, ce.Error(), tc.msg)
		assert.Equal(t, 12, ce.Loc.Line)
	}
}
