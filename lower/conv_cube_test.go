package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// convGraph is conv2d(x, w[, b]) with torch's attributes, optionally followed by relu.
func convGraph(t *testing.T, dt dtype.DType, x, w core.Shape, attrs core.Attrs, bias, relu bool) *core.Graph {
	bl := core.NewBuilder("conv")
	ins := []core.Value{bl.Param("x", core.TensorType{DType: dt, Shape: x}), bl.Param("w", core.TensorType{DType: dt, Shape: w})}
	if bias {
		ins = append(ins, bl.Param("b", core.TensorType{DType: dt, Shape: core.Shape{w[0]}}))
	}
	y, err := bl.Op("conv2d", ins, attrs, core.Location{})
	require.NoError(t, err)
	if relu {
		y, err = bl.Op("relu", []core.Value{y}, nil, core.Location{})
		require.NoError(t, err)
	}
	bl.Output(y)
	return bl.Graph()
}

// A convolution runs as one conv2d_5hd kernel and matches the reference interpreter's
// exact convolution within the cube's fp32 accumulation and the one rounding.
func TestCubeConvMatchesReference(t *testing.T) {
	cases := []struct {
		x, w  core.Shape
		attrs core.Attrs
		bias  bool
		relu  bool
	}{
		{core.Shape{2, 3, 9, 7}, core.Shape{5, 3, 3, 3}, core.Attrs{"pads": []int64{1, 1, 1, 1}}, true, true},
		{core.Shape{1, 20, 11, 13}, core.Shape{33, 20, 3, 2}, core.Attrs{"stride": []int64{2, 2}, "pads": []int64{0, 1, 2, 0}}, false, false},
		{core.Shape{3, 16, 6, 6}, core.Shape{17, 16, 1, 1}, nil, true, false},
		{core.Shape{2, 7, 12, 10}, core.Shape{8, 7, 5, 5}, core.Attrs{"pads": []int64{2, 2, 2, 2}}, true, true},
	}
	for _, chip := range presets(t) {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", chip.Name, i), func(t *testing.T) {
				g := convGraph(t, dtype.Float16, c.x, c.w, c.attrs, c.bias, c.relu)
				exe, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				switch {
				case i == 2: // pointwise: the GEMM of the NHWC pixels, bias and relu fused
					require.Contains(t, taskOps(exe), "fused_matmul")
					require.Len(t, exe.LayoutConversions(), 2)
				case chip.Name == "a2" || i != 3: // tiny's L0A cannot hold a row of 5x5 patches
					require.Contains(t, taskOps(exe), "conv2d_5hd")
					require.Len(t, exe.LayoutConversions(), 3)
				}
				k := c.w[1] * c.w[2] * c.w[3]
				compileAndCompare(t, chip, g, k)
			})
		}
	}
}

// The kernel writes no im2col matrix to GM: its distinct GM bytes are its operands and
// its result. It reads the input rows of a tile (6 for 4 output rows of a 3x3 kernel:
// 1.5 times the input) and each core the weight once.
func TestCubeConvKernelTouchesOnlyItsOperands(t *testing.T) {
	chip := presets(t)[1]
	g := convGraph(t, dtype.Float16, core.Shape{8, 64, 28, 28}, core.Shape{64, 64, 3, 3}, core.Attrs{"pads": []int64{1, 1, 1, 1}}, true, true)
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	_, raw := randomInputs(g)
	_, stats, err := exe.Run(raw)
	require.NoError(t, err)
	for i, task := range exe.Exec().Tasks {
		if taskOps(exe)[i] != "conv2d_5hd" {
			continue
		}
		x5 := 8 * 4 * 30 * 30 * 16 * 2
		w5 := 4 * 9 * 16 * 64 * 2
		out := 8 * 28 * 28 * 64 * 2
		st := stats.Tasks[i].Stats
		require.Equal(t, int64(x5+w5+64*4), st.FootprintRead, task.Name)
		require.Equal(t, int64(out), st.FootprintWritten, task.Name)
		require.LessOrEqual(t, st.GMBytesRead, int64(x5*3/2+st.ActiveCores*(w5+64*4)), "halo rows and one weight load per core only")
		return
	}
	t.Fatal("no conv2d_5hd task")
}
