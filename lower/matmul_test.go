package lower

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// gemmFigures is what a timing-only run of a compiled GEMM measured: the whole run's
// time and the cube's busy ratio over it (busy cube cycles over cycles x cube cores).
type gemmFigures struct {
	cycles   int64
	cubeBusy float64
	tasks    int
}

// runTimingOnly runs every task of exe without values (times do not depend on them),
// which is what makes the large sizes affordable.
func runTimingOnly(exe *Executable) (gemmFigures, error) {
	tg := exe.exec.Blocks.Tiles
	inputs := make([][]byte, len(tg.Params))
	for i, t := range tg.Params {
		inputs[i] = make([]byte, tg.Tensors[t].Type.Bytes())
	}
	_, st, err := exe.RunWith(inputs, device.RunOptions{NoValues: true})
	if err != nil {
		return gemmFigures{}, err
	}
	var cubeBusy int64
	for _, task := range st.Tasks {
		cubeBusy += task.Stats.PipeBusy[isa.PipeM]
	}
	return gemmFigures{cycles: st.Cycles, tasks: len(st.Tasks),
		cubeBusy: float64(cubeBusy) / (float64(st.Cycles) * float64(exe.chip.CubeCores))}, nil
}

func gemmGraph(dt dtype.DType, m, n, k int) *core.Graph {
	bl := core.NewBuilder("gemm")
	x := bl.Param("a", core.TensorType{DType: dt, Shape: core.Shape{m, k}})
	w := bl.Param("b", core.TensorType{DType: dt, Shape: core.Shape{k, n}})
	y, err := bl.Op("matmul", []core.Value{x, w}, nil, core.Location{})
	if err != nil {
		panic(err)
	}
	bl.Output(y)
	return bl.Graph()
}

func preset(t *testing.T, name string) *device.Chip {
	t.Helper()
	c, err := device.Preset(name)
	require.NoError(t, err)
	return c
}

// hasSplitK reports whether exe's matmul was split over K (a sum op follows it).
func hasSplitK(exe *Executable) bool {
	for _, op := range exe.exec.Blocks.Tiles.Ops {
		if op.Kind == TileMatmul && op.Grid[3] > 1 {
			return true
		}
	}
	return false
}

// Few output tiles and a long K: the search splits K over the cores (or a given tile
// does, where the device times K whole faster), and the partial
// products added by the vector sum give the reference's values for every operand
// dtype, transposes and broadcast batch dims.
func TestSplitKMatchesReference(t *testing.T) {
	cases := []struct {
		chip  string
		op    string
		dt    dtype.DType
		a, b  core.Shape
		attrs core.Attrs
		// forced is a tile that splits K, for where the search keeps K whole
		forced []int64
	}{
		{"a2", "matmul", dtype.Float16, core.Shape{16, 32768}, core.Shape{32768, 16}, nil, nil},
		{"a2", "matmul", dtype.BFloat16, core.Shape{13, 40000}, core.Shape{9, 40000}, core.Attrs{"transpose_b": true}, nil},
		{"a2", "matmul", dtype.Float32, core.Shape{30000, 31}, core.Shape{30000, 20}, core.Attrs{"transpose_a": true}, nil},
		{"a2", "matmul", dtype.Int8, core.Shape{32, 32768}, core.Shape{32768, 32}, nil, []int64{16, 32, 256, 4, 8192}},
		{"a2", "batch_matmul", dtype.Float16, core.Shape{2, 1, 16, 30000}, core.Shape{3, 30000, 16}, nil, nil},
		{"tiny", "matmul", dtype.Float16, core.Shape{50, 16000}, core.Shape{16000, 60}, nil, nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s%v@%v%v", c.chip, c.dt, c.a, c.b, c.attrs), func(t *testing.T) {
			bl := core.NewBuilder("sk")
			x := bl.Param("a", core.TensorType{DType: c.dt, Shape: c.a})
			w := bl.Param("b", core.TensorType{DType: c.dt, Shape: c.b})
			y, err := bl.Op(c.op, []core.Value{x, w}, c.attrs, core.Location{})
			require.NoError(t, err)
			bl.Output(y)
			g := bl.Graph()
			chip := preset(t, c.chip)
			exe, err := Compile(g, Options{Chip: chip, Verify: true})
			require.NoError(t, err)
			if !hasSplitK(exe) && c.forced != nil {
				// The device times this one about as fast with K whole: split it as given.
				attrs := core.Attrs{core.AttrTileShape: c.forced}
				maps.Copy(attrs, c.attrs)
				g.Nodes[y].Attrs = attrs
				exe, err = Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
			}
			tg := exe.exec.Blocks.Tiles
			require.True(t, hasSplitK(exe), "K is split: %s", tg.Format())
			parsed, err := ParseTileGraph(tg.Format())
			require.NoError(t, err, "the workspace and the sum print and parse back")
			assert.Equal(t, tg.Format(), parsed.Format())
			_, err = ParseExecGraph(exe.exec.Format(true))
			require.NoError(t, err)
			// An error in the split (a chunk lost or added twice) moves a sum by about
			// the square root of a chunk's depth; the tolerance of a 256-deep fp32 sum
			// (4e-3 plus a unit in the last place) still admits the rounding of fp32
			// accumulation over the whole K.
			compileAndCompare(t, chip, g, 256)
		})
	}
}

// The tile search never weighs a tiling beyond a buffer of the chip, for every preset,
// operand dtype and a range of shapes, nor does the fixed rule give one; small ones
// compile through the search and the backend, whose allocator places every tile.
func TestMatmulTilingFitsEveryPreset(t *testing.T) {
	shapes := [][3]int{{0, 5, 7}, {1, 1, 1}, {17, 65, 33}, {300, 130, 520}, {1000, 3, 7}, {4096, 4096, 4096}, {64, 64, 65536}, {8192, 96, 512}}
	for _, name := range device.PresetNames() {
		chip := preset(t, name)
		for _, dt := range []dtype.DType{dtype.Float16, dtype.BFloat16, dtype.Float32, dtype.Int8} {
			for _, s := range shapes {
				g := matmulGraph(t, dt, core.Shape{s[0], s[2]}, core.Shape{s[2], s[1]}, nil, false)
				tg, err := buildTileGraph(g, Options{Chip: chip}, nil)
				require.NoError(t, err)
				op := tg.Ops[0]
				size := dt.Size()
				tiles := [][]int{op.Tile}
				for _, c := range matmulCandidates(newEstimator(chip), tg, op) {
					tiles = append(tiles, c.tile)
				}
				require.Greater(t, len(tiles), 1)
				for _, tile := range tiles {
					tl := matmulTilingOf(tile)
					what := fmt.Sprintf("%s %s %v: %v", name, dt, s, tile)
					assert.LessOrEqual(t, 2*tl.tm*tl.tk*size, chip.Capacity(isa.Left), what)
					assert.LessOrEqual(t, 2*tl.tk*tl.tn*size, chip.Capacity(isa.Right), what)
					assert.LessOrEqual(t, tl.tm*tl.tn*accType(dt).Size(), chip.Capacity(isa.Acc), what)
					assert.LessOrEqual(t, 2*(tl.tm+tl.tn)*tl.tk*tl.stepK*size, chip.Capacity(isa.Mat), what)
					assert.Zero(t, tl.tm%16+tl.tn%16+tl.tk%16+(tl.tk*size)%32+(tl.tn*size)%32, what)
				}
				if s[0]*s[1]*s[2] <= 1<<20 {
					exe, err := Compile(g, Options{Chip: chip, Verify: true})
					require.NoError(t, err, "%s %s %v", name, dt, s)
					if s[0]*s[1]*s[2] > 0 {
						assert.Contains(t, exe.exec.Blocks.Tiles.Ops[0].Reason, "timing model", "%s %s %v", name, dt, s)
					}
				}
			}
		}
	}
}

// A second compilation of the same matmul signature on the same chip takes the
// search's result from the cache.
func TestMatmulSearchIsCached(t *testing.T) {
	chip := preset(t, "a5")
	g := matmulGraph(t, dtype.BFloat16, core.Shape{123, 789}, core.Shape{789, 457}, nil, false)
	exe1, err := Compile(g, Options{Chip: chip})
	require.NoError(t, err)
	searches.Lock()
	runs := searches.runs
	searches.Unlock()
	exe2, err := Compile(g, Options{Chip: chip})
	require.NoError(t, err)
	searches.Lock()
	assert.Equal(t, runs, searches.runs, "no new search")
	searches.Unlock()
	op1, op2 := exe1.exec.Blocks.Tiles.Ops[0], exe2.exec.Blocks.Tiles.Ops[0]
	assert.Equal(t, op1.Tile, op2.Tile)
	assert.Equal(t, op1.Reason, op2.Reason)

	other := preset(t, "a5")
	other.Buffers[isa.Acc] = device.Buffer{Bytes: 64 << 10, Align: 64}
	_, err = Compile(g, Options{Chip: other})
	require.NoError(t, err)
	searches.Lock()
	assert.Equal(t, runs+1, searches.runs, "an edited chip is another chip")
	searches.Unlock()
}

// Compilations on several threads may search the same signature at once; they agree.
func TestMatmulSearchFromManyThreads(t *testing.T) {
	chip := preset(t, "tiny")
	bl := core.NewBuilder("bmm")
	x := bl.Param("a", core.TensorType{DType: dtype.Float16, Shape: core.Shape{3, 77, 1234}})
	w := bl.Param("b", core.TensorType{DType: dtype.Float16, Shape: core.Shape{1, 1234, 99}})
	y, err := bl.Op("batch_matmul", []core.Value{x, w}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	g := bl.Graph()
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Go(func() {
			exe, err := Compile(g, Options{Chip: chip})
			if assert.NoError(t, err) {
				op := exe.exec.Blocks.Tiles.Ops[0]
				got[i] = fmt.Sprint(op.Tile, op.Reason)
			}
		})
	}
	wg.Wait()
	for _, g := range got[1:] {
		assert.Equal(t, got[0], g)
	}
}

// The searched tiles run no slower than the fixed rule's, on shapes where the rule's
// tiles fit badly (a vector times a matrix, batches of small products, odd sizes) and
// on one where they are already good.
func TestSearchedTilesBeatTheFixedRule(t *testing.T) {
	chip := preset(t, "a2")
	cases := []struct{ a, b core.Shape }{
		{core.Shape{1, 4096}, core.Shape{4096, 11008}},
		{core.Shape{32, 128, 64}, core.Shape{32, 64, 128}},
		{core.Shape{300, 520}, core.Shape{520, 130}},
		{core.Shape{512, 768}, core.Shape{768, 3072}},
	}
	for _, c := range cases {
		op := "matmul"
		if len(c.a) == 3 {
			op = "batch_matmul"
		}
		bl := core.NewBuilder("g")
		x := bl.Param("a", core.TensorType{DType: dtype.Float16, Shape: c.a})
		w := bl.Param("b", core.TensorType{DType: dtype.Float16, Shape: c.b})
		y, err := bl.Op(op, []core.Value{x, w}, nil, core.Location{})
		require.NoError(t, err)
		bl.Output(y)
		var cycles [2]int64
		for i, fixed := range []bool{true, false} {
			exe, err := Compile(bl.Graph(), Options{Chip: chip, FixedTiles: fixed})
			require.NoError(t, err)
			f, err := runTimingOnly(exe)
			require.NoError(t, err)
			cycles[i] = f.cycles
		}
		t.Logf("%v @ %v: fixed rule %d cycles, searched %d (%.2fx)", c.a, c.b, cycles[0], cycles[1], float64(cycles[0])/float64(cycles[1]))
		assert.LessOrEqual(t, float64(cycles[1]), 1.01*float64(cycles[0]), "%v @ %v", c.a, c.b)
	}
}

// FixedTiles, and O0, keep the fixed rule: one base block per stage, K whole, the old
// shapes.
func TestFixedTilesKeepTheRule(t *testing.T) {
	chip := preset(t, "a2")
	g := matmulGraph(t, dtype.Float16, core.Shape{300, 520}, core.Shape{520, 130}, nil, false)
	for _, opts := range []Options{{Chip: chip, Verify: true, FixedTiles: true}, {Chip: chip, Verify: true, OptLevel: O0}} {
		exe, err := Compile(g, opts)
		require.NoError(t, err)
		op := exe.exec.Blocks.Tiles.Ops[0]
		assert.Equal(t, []int{128, 144, 64, 1, 520}, op.Tile)
		assert.Contains(t, op.Reason, "fixed rule")
	}
	exe, err := Compile(g, Options{Chip: chip})
	require.NoError(t, err)
	assert.Contains(t, exe.exec.Blocks.Tiles.Ops[0].Reason, "timing model")
	exe, err = Compile(gemmGraph(dtype.Float16, 16, 16, 65536), Options{Chip: chip, FixedTiles: true})
	require.NoError(t, err)
	assert.False(t, hasSplitK(exe))
}

// A tiling given by the user is checked against the chip and used as given.
func TestGivenMatmulTiling(t *testing.T) {
	chip := preset(t, "tiny")
	p := matmulProblem{dt: dtype.Float16, out: dtype.Float16, batch: 1, m: 256, n: 256, k: 256, aMatrices: 1, bMatrix: 1}
	got, reason, err := chooseMatmulTiling(chip, p, &matmulTiling{tm: 64, tn: 64, tk: 32, stepK: 2})
	require.NoError(t, err)
	assert.Equal(t, []int{64, 64, 32, 2, 256}, got.tile())
	assert.Contains(t, reason, "given")
	_, _, err = chooseMatmulTiling(chip, p, &matmulTiling{tm: 128, tn: 128, tk: 64, stepK: 1})
	assert.ErrorContains(t, err, "exceed")
}

// Each block of a large GEMM owns a rectangle of output tiles, the shape of the
// hand-tuned kernel's 2-D split, and blocks differ by at most one tile.
func TestMatmulBlocksAreRegions(t *testing.T) {
	op := &TileOp{Kind: TileMatmul, Tile: []int{128, 256, 64, 4, 6144}, Grid: []int{1, 48, 24, 1}}
	blocks := matmulBlocks(op, 24)
	seen := map[int]bool{}
	for _, b := range blocks {
		require.Len(t, b, 48)
		rows, cols := map[int]bool{}, map[int]bool{}
		for _, ti := range b {
			require.False(t, seen[ti])
			seen[ti] = true
			rows[ti/24], cols[ti%24] = true, true
		}
		assert.Equal(t, 48, len(rows)*len(cols), "a rectangle of tiles")
		assert.InDelta(t, 1, float64(len(rows)*128)/float64(len(cols)*256), 0.5, "about square")
	}
	blocks = matmulBlocks(&TileOp{Kind: TileMatmul, Tile: []int{128, 256, 64, 4, 4096}, Grid: []int{1, 32, 16, 1}}, 24)
	for _, b := range blocks {
		assert.Contains(t, []int{21, 22}, len(b))
	}
}
