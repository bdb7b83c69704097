package lower

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// fewQueries is attention of 256 queries over 8192 keys: the fixed rule's tile takes
// all 256 rows, one tile on one core.
var fewQueries = attentionCase{q: core.Shape{1, 1, 256, 128}, k: core.Shape{1, 1, 8192, 128}, v: core.Shape{1, 1, 8192, 128}, dt: dtype.Float16}

// taskCycles runs exe timing-only and returns each task's cycles.
func taskCycles(t *testing.T, exe *Executable) []int64 {
	t.Helper()
	tg := exe.exec.Blocks.Tiles
	inputs := make([][]byte, len(tg.Params)-len(exe.constants))
	for i := range inputs {
		inputs[i] = make([]byte, tg.Tensors[tg.Params[i]].Type.Bytes())
	}
	// The plain runtime: the search times each task as launched alone, without a
	// prefetch.
	_, st, err := exe.RunRuntime(inputs, device.RunOptions{NoValues: true}, PlainRuntime())
	require.NoError(t, err)
	out := make([]int64, len(st.Tasks))
	for i, task := range st.Tasks {
		out[i] = task.Stats.Cycles
	}
	return out
}

// The search weighs how the tiles fill the cores through the device's model: for few
// queries over many keys it cuts the rows into tiles for several cores, which the
// simulator runs faster than the fixed rule's one tile, and the result is right.
func TestAttentionSearchFillsTheCores(t *testing.T) {
	chip := preset(t, "a2")
	g := fewQueries.graph(t)
	fixed, err := Compile(g, Options{Chip: chip, FixedTiles: true})
	require.NoError(t, err)
	searched, err := Compile(g, Options{Chip: chip})
	require.NoError(t, err)
	require.Len(t, fixed.exec.Blocks.Kernels[0].Blocks, 1, "the fixed rule's one tile")
	cores := len(searched.exec.Blocks.Kernels[0].Blocks)
	assert.Greater(t, cores, 1, searched.exec.Blocks.Tiles.Ops[0].Reason)
	before, after := taskCycles(t, fixed)[0], taskCycles(t, searched)[0]
	t.Logf("fixed rule %v: %d cycles on 1 core; searched %v: %d cycles on %d cores (%.2fx)",
		fixed.exec.Blocks.Tiles.Ops[0].Tile, before, searched.exec.Blocks.Tiles.Ops[0].Tile, after, cores, float64(before)/float64(after))
	assert.Less(t, after, before)
	checkAttention(t, chip, g)
}

// The estimate a search ranks a tiling by is the device's: for tasks small enough to
// be timed whole it is the time a timing-only run of the compiled program reports, and
// the reason quotes it.
func TestSearchEstimateIsATimingOnlyRun(t *testing.T) {
	softmax := core.NewBuilder("softmax")
	x := softmax.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{60, 512}})
	y, err := softmax.Op("softmax", []core.Value{x}, nil, core.Location{})
	require.NoError(t, err)
	softmax.Output(y)
	for name, c := range map[string]struct {
		chip string
		g    *core.Graph
	}{
		"attention": {"a2", attentionCase{q: core.Shape{1, 2, 128, 64}, k: core.Shape{1, 2, 256, 64}, v: core.Shape{1, 2, 256, 64}, dt: dtype.Float16}.graph(t)},
		"matmul":    {"tiny", matmulGraph(t, dtype.Float16, core.Shape{100, 520}, core.Shape{520, 130}, nil, false)},
		"split-k":   {"a2", matmulGraph(t, dtype.Float16, core.Shape{16, 16384}, core.Shape{16384, 16}, nil, false)},
		"rows":      {"tiny", softmax.Graph()},
	} {
		t.Run(name, func(t *testing.T) {
			chip, g := preset(t, c.chip), c.g
			exe, err := Compile(g, Options{Chip: chip})
			require.NoError(t, err)
			tg := exe.exec.Blocks.Tiles
			run := taskCycles(t, exe)
			op := tg.Ops[0]
			require.Contains(t, op.Reason, "timing model")
			est, err := newEstimator(chip).cycles(tg, op)
			require.NoError(t, err)
			whole := newEstimator(chip)
			whole.whole = true
			exact, err := whole.cycles(tg, op)
			require.NoError(t, err)
			assert.Equal(t, run[0], exact, "a whole estimate is a timing-only run of the op's task")
			// A large task is timed by samples of its blocks (split-k's nine blocks).
			assert.InEpsilon(t, float64(run[0]), float64(est), 0.005, "the estimate is within 0.5 percent of the run")
			total := est
			if len(run) > 1 { // the split K's sum, timed cold: the run finds the partial
				// products in L2, where the matmul left them
				sum, err := newEstimator(chip).cycles(tg, tg.Ops[1])
				require.NoError(t, err)
				assert.LessOrEqual(t, run[1], sum)
				assert.InEpsilon(t, float64(sum), float64(run[1]), 0.05)
				total += sum
			}
			assert.Contains(t, op.Reason, fmt.Sprintf("est %d cycles", total), "the search chose by it")
		})
	}
}

// For each kind of kernel the search tiles, the tiling it picks runs no slower than
// any other it weighed (timed, or ruled out by its bound), each simulated whole (on
// tiny, where the search times these tasks whole too), and every bound it ranked the
// candidates by is a lower bound of the simulated time.
func TestSearchPicksTheFastestItWeighs(t *testing.T) {
	chip := preset(t, "tiny")
	rows := core.NewBuilder("layer_norm")
	x := rows.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{40, 768}})
	gamma := rows.Param("g", core.TensorType{DType: dtype.Float16, Shape: core.Shape{768}})
	beta := rows.Param("b", core.TensorType{DType: dtype.Float16, Shape: core.Shape{768}})
	y, err := rows.Op("layer_norm", []core.Value{x, gamma, beta}, nil, core.Location{})
	require.NoError(t, err)
	rows.Output(y)
	cases := map[string]*core.Graph{
		"matmul": matmulGraph(t, dtype.Float16, core.Shape{96, 256}, core.Shape{256, 80}, nil, false),
		"attention": attentionCase{q: core.Shape{1, 1, 96, 64}, k: core.Shape{1, 1, 512, 64}, v: core.Shape{1, 1, 512, 64},
			dt: dtype.Float16, causal: true}.graph(t),
		"rows": rows.Graph(),
	}
	for name, g := range cases {
		t.Run(name, func(t *testing.T) {
			exe, err := Compile(g, Options{Chip: chip})
			require.NoError(t, err)
			tg := exe.exec.Blocks.Tiles
			op := tg.Ops[0]
			candidates := map[TileKind]func(*estimator, *TileGraph, *TileOp) []candidate{
				TileMatmul: matmulCandidates, TileAttention: attentionCandidates, TileRows: rowsCandidates}[op.Kind]
			cands := candidates(newEstimator(chip), tg, op)
			require.Greater(t, len(cands), 1)
			choice, err := searchTiling(newEstimator(chip), tg, op, candidates) // from the cache
			require.NoError(t, err)
			require.Equal(t, op.Tile, choice.tile)
			weighed := map[string]bool{}
			for _, tile := range choice.weighed {
				weighed[fmt.Sprint(tile)] = true
			}
			est := newEstimator(chip)
			est.whole = true
			chosen, err := candidateCycles(est, tg, op, op.Tile)
			require.NoError(t, err)
			faster := 0
			for _, c := range cands {
				cycles, err := candidateCycles(est, tg, op, c.tile)
				require.NoError(t, err)
				assert.LessOrEqual(t, c.bound, cycles, "the bound of %v is a lower bound", c.tile)
				if weighed[fmt.Sprint(c.tile)] {
					assert.LessOrEqual(t, chosen, cycles, "weighed %v runs faster than the choice %v", c.tile, op.Tile)
				} else if cycles < chosen {
					faster++
				}
			}
			t.Logf("%s: chose %v, %d cycles; %d of %d tilings weighed, %d faster ones untimed; %s",
				name, op.Tile, chosen, len(weighed), len(cands), faster, op.Reason)
		})
	}
}

// The search is a pass: O0, disable_passes and FixedTiles keep the fixed rules, and
// dumps and pass timings show it.
func TestSearchTilesIsAPass(t *testing.T) {
	chip := preset(t, "tiny")
	g := matmulGraph(t, dtype.Float16, core.Shape{300, 520}, core.Shape{520, 130}, nil, false)
	exe, err := Compile(g, Options{Chip: chip, Dump: true})
	require.NoError(t, err)
	assert.Contains(t, exe.exec.Blocks.Tiles.Ops[0].Reason, "timing model")
	assert.True(t, strings.Contains(strings.Join(exe.PassDumps(), "\n"), "== after search-tiles (tile) =="))
	var names []string
	for _, p := range exe.PassTimes() {
		names = append(names, p.Name)
	}
	assert.Contains(t, names, "search-tiles")
	for _, opts := range []Options{
		{Chip: chip, Disabled: map[string]bool{"search-tiles": true}},
		{Chip: chip, FixedTiles: true},
		{Chip: chip, OptLevel: O0},
	} {
		exe, err := Compile(g, opts)
		require.NoError(t, err)
		assert.Contains(t, exe.exec.Blocks.Tiles.Ops[0].Reason, "fixed rule", "%+v", opts)
		for _, p := range exe.PassTimes() {
			assert.NotEqual(t, "search-tiles", p.Name, "%+v", opts)
		}
	}
}

// An estimate from samples of a large task's blocks stays close to the whole task's
// simulated time: on the kernels of a GPT-2 layer, few queries over many keys, long
// rows of many tiles per core and a GEMM of several tiles per core.
func TestSampledEstimateTracksTheWholeTask(t *testing.T) {
	chip := preset(t, "a2")
	layerNorm := func(rows, cols int) *core.Graph {
		bl := core.NewBuilder("layer_norm")
		x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{rows, cols}})
		gamma := bl.Param("g", core.TensorType{DType: dtype.Float16, Shape: core.Shape{cols}})
		beta := bl.Param("b", core.TensorType{DType: dtype.Float16, Shape: core.Shape{cols}})
		y, err := bl.Op("layer_norm", []core.Value{x, gamma, beta}, nil, core.Location{})
		require.NoError(t, err)
		bl.Output(y)
		return bl.Graph()
	}
	heads := attentionCase{q: core.Shape{1, 12, 1024, 64}, k: core.Shape{1, 12, 1024, 64}, v: core.Shape{1, 12, 1024, 64}, dt: dtype.Float16}
	for name, g := range map[string]*core.Graph{
		"few queries": fewQueries.graph(t),
		"heads":       heads.graph(t),
		"mlp matmul":  matmulGraph(t, dtype.Float16, core.Shape{1024, 768}, core.Shape{768, 3072}, nil, false),
		"layer norm":  layerNorm(1024, 768),
		"long rows":   layerNorm(2048, 4096), // fourteen tiles of three rows per vector core
		"gemm":        matmulGraph(t, dtype.Float16, core.Shape{2048, 2048}, core.Shape{2048, 2048}, nil, false),
	} {
		t.Run(name, func(t *testing.T) {
			exe, err := Compile(g, Options{Chip: chip})
			require.NoError(t, err)
			tg := exe.exec.Blocks.Tiles
			op := tg.Ops[0]
			est, err := newEstimator(chip).cycles(tg, op)
			require.NoError(t, err)
			whole := taskCycles(t, exe)[0]
			t.Logf("%v: estimate %d, whole task %d (%.3f)", op.Tile, est, whole, float64(est)/float64(whole))
			assert.InDelta(t, 1, float64(est)/float64(whole), 0.10)
		})
	}
}
