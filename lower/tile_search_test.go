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
	_, st, err := exe.RunWith(inputs, device.RunOptions{NoValues: true})
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
	chip := preset(t, "a2")
	softmax := core.NewBuilder("softmax")
	x := softmax.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{1000, 512}})
	y, err := softmax.Op("softmax", []core.Value{x}, nil, core.Location{})
	require.NoError(t, err)
	softmax.Output(y)
	for name, g := range map[string]*core.Graph{
		"attention": fewQueries.graph(t),
		"matmul":    matmulGraph(t, dtype.Float16, core.Shape{300, 520}, core.Shape{520, 130}, nil, false),
		"split-k":   matmulGraph(t, dtype.Float16, core.Shape{16, 16384}, core.Shape{16384, 16}, nil, false),
		"rows":      softmax.Graph(),
	} {
		t.Run(name, func(t *testing.T) {
			exe, err := Compile(g, Options{Chip: chip})
			require.NoError(t, err)
			tg := exe.exec.Blocks.Tiles
			run := taskCycles(t, exe)
			op := tg.Ops[0]
			require.Contains(t, op.Reason, "timing model")
			est, err := newEstimator(chip).cycles(tg, op)
			require.NoError(t, err)
			assert.Equal(t, run[0], est, "the estimate is a timing-only run of the op's task")
			total := run[0]
			if len(run) > 1 { // the split K's sum
				total += run[1]
			}
			assert.Contains(t, op.Reason, fmt.Sprintf("est %d cycles", total), "the search chose by it")
		})
	}
}

// For each kind of kernel the search tiles, the tiling it picks runs no slower than
// any other it weighed, each simulated whole.
func TestSearchPicksTheFastestItWeighs(t *testing.T) {
	chip := preset(t, "a2")
	rows := core.NewBuilder("layer_norm")
	x := rows.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{3000, 768}})
	gamma := rows.Param("g", core.TensorType{DType: dtype.Float16, Shape: core.Shape{768}})
	beta := rows.Param("b", core.TensorType{DType: dtype.Float16, Shape: core.Shape{768}})
	y, err := rows.Op("layer_norm", []core.Value{x, gamma, beta}, nil, core.Location{})
	require.NoError(t, err)
	rows.Output(y)
	cases := map[string]*core.Graph{
		"matmul": matmulGraph(t, dtype.Float16, core.Shape{96, 512}, core.Shape{512, 80}, nil, false),
		"attention": attentionCase{q: core.Shape{1, 2, 200, 64}, k: core.Shape{1, 2, 640, 64}, v: core.Shape{1, 2, 640, 64},
			dt: dtype.Float16, causal: true}.graph(t),
		"rows": rows.Graph(),
	}
	for name, g := range cases {
		t.Run(name, func(t *testing.T) {
			exe, err := Compile(g, Options{Chip: chip})
			require.NoError(t, err)
			tg := exe.exec.Blocks.Tiles
			op := tg.Ops[0]
			var cands []candidate
			switch op.Kind {
			case TileMatmul, TileMatmulEpilogue:
				cands = matmulCandidates(chip, tg, op)
			case TileAttention:
				cands = attentionCandidates(chip, tg, op)
			case TileRows:
				cands = rowsCandidates(chip, tg, op)
			}
			require.Greater(t, len(cands), 1)
			est := newEstimator(chip)
			est.whole = true
			chosen, err := candidateCycles(est, tg, op, op.Tile)
			require.NoError(t, err)
			faster := 0
			for _, c := range cands {
				cycles, err := candidateCycles(est, tg, op, c.tile)
				require.NoError(t, err)
				assert.LessOrEqual(t, c.bound, cycles, "the bound of %v is a lower bound", c.tile)
				if cycles < chosen {
					faster++
					t.Logf("%v: %d cycles, the choice %v %d", c.tile, cycles, op.Tile, chosen)
				}
			}
			t.Logf("%s: chose %v, %d cycles, of %d tilings; %s", name, op.Tile, chosen, len(cands), op.Reason)
			assert.Zero(t, faster, "tilings faster than the choice")
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
