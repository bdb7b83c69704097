package lower

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/internal/linediff"
)

const vizGraph = `graph viz(%x: f16[40,64], %w: f16[64,48]) {
  %2 = matmul(%x, %w) {transpose_a=false, transpose_b=false} : f16[40,48]
  %3 = softmax(%2) {axis=-1} : f16[40,48]
  return %3
}
`

func vizCompile(t *testing.T) *Executable {
	g, err := core.Parse(vizGraph)
	require.NoError(t, err)
	exe, err := Compile(g, Options{Chip: tinyChip(t), Verify: true, Visualize: true})
	require.NoError(t, err)
	return exe
}

// The exports carry what each level's text form says, entry for entry.
func TestVisualizationLevelsFollowTheTextForms(t *testing.T) {
	exe := vizCompile(t)
	v, err := exe.Visualization()
	require.NoError(t, err)
	tg := exe.Exec().Blocks.Tiles

	text := core.Format(exe.graph)
	for _, n := range v.Input.Nodes {
		if n.Op != core.OpParam {
			assert.Contains(t, text, n.Name+" = "+n.Op+"(", "node %d", n.ID)
		}
	}
	assert.Equal(t, []int{3}, v.Input.Outputs)

	tileText := tg.Format()
	require.Len(t, v.Tile.Ops, len(tg.Ops))
	for i, op := range v.Tile.Ops {
		assert.Contains(t, tileText, "  op"+strconv.Itoa(i)+": t"+strconv.Itoa(op.Output)+" = "+op.Op+"(")
		assert.Contains(t, tileText, "kind="+op.Kind+" core="+op.Core+" problem="+intList(op.Problem)+" tile="+intList(op.Tile))
		assert.Equal(t, tg.Ops[i].NumTiles(), op.Tiles)
		assert.Positive(t, v.Estimates[i].Cycles)
	}
	blockText := exe.Exec().Blocks.Format()
	for _, k := range v.Block.Kernels {
		assert.Contains(t, blockText, "kernel k"+strconv.Itoa(k.ID)+" = op"+strconv.Itoa(k.Op)+" "+tg.Ops[k.Op].Op+" core="+k.Core+" blocks="+strconv.Itoa(len(k.Tiles)))
	}
	execText := exe.Exec().Format(false)
	for _, task := range v.Exec.Tasks {
		assert.Contains(t, execText, "task "+strconv.Itoa(task.ID)+" "+task.Name+" kernel=k"+strconv.Itoa(task.Kernel))
		assert.Contains(t, execText, "args="+tensorList(task.Args)+" deps="+intList(task.Deps))
	}
	for i, p := range v.Programs {
		task := exe.Exec().Tasks[i]
		assert.Equal(t, task.Programs[0].Name, p.Names[0])
		assert.Equal(t, task.Machine[0].String(), p.Machine[0])
	}
	_, err = json.Marshal(v)
	require.NoError(t, err)
}

// Each pass records the text it changed: replaying a tensor-level pass's diff on the
// text before it gives the text after it, and the tile pass starts a new level.
func TestVisualizationPassDiffs(t *testing.T) {
	exe := vizCompile(t)
	v, err := exe.Visualization()
	require.NoError(t, err)
	require.Len(t, v.Passes, len(exe.PassTimes()))
	text := core.Format(exe.graph)
	for _, p := range v.Passes {
		if p.Level != string(LevelTensor) {
			break
		}
		text, err = linediff.Apply(text, p.Diff)
		require.NoError(t, err, p.Name)
	}
	assert.Equal(t, core.Format(exe.lowered), text)
	byName := map[string]PassJSON{}
	for _, p := range v.Passes {
		byName[p.Name] = p
	}
	assert.Empty(t, byName["verify-tensor"].Diff.Hunks)
	tile := byName["tile"]
	assert.Equal(t, [2]string{"tensor", "tile"}, [2]string{tile.From, tile.Level})
	assert.Zero(t, tile.Diff.Removed)
	assert.Equal(t, strings.Count(exe.Exec().Blocks.Tiles.Format(), "\n"), tile.Diff.Added)
}

// Without Options.Visualize nothing is kept, and asking says how to get it.
func TestVisualizationNeedsTheOption(t *testing.T) {
	g, err := core.Parse(vizGraph)
	require.NoError(t, err)
	exe, err := Compile(g, Options{Chip: tinyChip(t)})
	require.NoError(t, err)
	_, err = exe.Visualization()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "without visualisation")
	assert.Nil(t, exe.passes)
}
