package lower

import (
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// Two independent chains x -> relu -> neg and y -> relu -> neg: in list order the second
// chain's intermediate could take the first's bytes, but no dependency orders the two
// chains' tasks, so a dispatcher may run them at once: the plan keeps them apart. In one
// chain the bytes are reused.
func TestWorkspaceIsSharedOnlyByOrderedTasks(t *testing.T) {
	chip := presets(t)[0]
	typ := core.TensorType{DType: dtype.Float32, Shape: core.Shape{64, 64}}
	bl := core.NewBuilder("branches")
	for _, name := range []string{"x", "y"} {
		v := bl.Param(name, typ)
		for _, op := range []string{"relu", "neg", "relu", "neg"} {
			var err error
			v, err = bl.Op(op, []core.Value{v}, nil, core.Location{})
			require.NoError(t, err)
		}
		bl.Output(v)
	}
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true, OptLevel: O0}) // one task per op
	require.NoError(t, err)
	eg := exe.Exec()
	buf := roundUp(typ.Bytes(), gmAlign)
	require.Equal(t, 6*buf, eg.WorkspaceNoReuse)
	// Each chain has three intermediates, two live at a time; the chains share nothing.
	require.Equal(t, 4*buf, eg.WorkspaceBytes)
	order := newTaskOrder(eg)
	tg := eg.Blocks.Tiles
	for i := range tg.Tensors {
		for j := i + 1; j < len(tg.Tensors); j++ {
			if tg.Tensors[i].Role == RoleTemp && tg.Tensors[j].Role == RoleTemp && tg.Tensors[i].Alias == 0 && tg.Tensors[j].Alias == 0 &&
				overlaps(eg.Buffers[i], eg.Buffers[j]) {
				require.True(t, order.apart(i, j), "t%d and t%d share bytes without an order", i, j)
			}
		}
	}
	compileAndCompare(t, chip, g, 0)
}

// A pool too small names the bytes needed, the pool's size and the largest tensors live
// at the peak with the lines that made them.
func TestMemoryPoolErrorNamesTheLargestLiveTensors(t *testing.T) {
	chip := presets(t)[0]
	small := core.TensorType{DType: dtype.Float32, Shape: core.Shape{8, 8}}
	bl := core.NewBuilder("wide")
	x := bl.Param("x", small)
	w := bl.Param("w", core.TensorType{DType: dtype.Float32, Shape: core.Shape{8, 1024}})
	loc := core.Location{File: "model.py", Line: 12, Func: "model"}
	h, err := bl.Op("matmul", []core.Value{x, w}, core.Attrs{"transpose_a": false, "transpose_b": false}, loc)
	require.NoError(t, err)
	r, err := bl.Op("relu", []core.Value{h}, nil, core.Location{File: "model.py", Line: 13, Func: "model"})
	require.NoError(t, err)
	s, err := bl.Op("sum", []core.Value{r}, core.Attrs{"axis": []int64{1}, "keepdims": false}, core.Location{File: "model.py", Line: 14, Func: "model"})
	require.NoError(t, err)
	bl.Output(s)
	_, err = Compile(bl.Graph(), Options{Chip: chip, OptLevel: O0, MemoryPoolBytes: 4096})
	require.Error(t, err)
	var e *core.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, core.CompileError, e.Kind)
	require.Contains(t, e.Message, "but the memory pool holds 4096")
	causes := ""
	for _, c := range e.Causes {
		causes += c + "\n"
	}
	require.Contains(t, causes, "the largest tensors then")
	require.Contains(t, causes, "intermediate f32[8,1024], 32768 bytes, made by matmul at model.py:12")
	require.Contains(t, causes, "input f32[8,1024], 32768 bytes")
}
