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

// A convolution runs as one conv2d_5hd kernel reading the NCHW input and writing the
// NCHW result itself (only the weight is converted, in the graph), and matches the reference interpreter's
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
		// 1x1 kernels take every channel group in one step (K 48, 40 of it channels).
		{core.Shape{2, 40, 5, 7}, core.Shape{24, 40, 1, 1}, core.Attrs{"stride": []int64{2, 2}}, true, true},
		{core.Shape{1, 48, 6, 6}, core.Shape{20, 48, 1, 1}, nil, false, true},
	}
	for _, chip := range presets(t) {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", chip.Name, i), func(t *testing.T) {
				g := convGraph(t, dtype.Float16, c.x, c.w, c.attrs, c.bias, c.relu)
				exe, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				switch {
				case chip.Name == "a2" || i != 3: // a pointwise one alone too: NCHW in and out // tiny's L0A cannot hold a row of 5x5 patches
					require.Contains(t, taskOps(exe), "conv2d_5hd")
					require.Equal(t, 1, count(taskOps(exe), "transpose"), "the weight's conversion only: %v", taskOps(exe))
					require.Len(t, exe.LayoutConversions(), 1)
					require.Equal(t, "OIHW", exe.LayoutConversions()[0].From)
				}
				k := c.w[1] * c.w[2] * c.w[3]
				compileAndCompare(t, chip, g, k)
			})
		}
	}
}

// The kernel writes no im2col matrix to GM: its distinct GM bytes are its operands and
// its result, the NCHW input read where it lies (no padded copy). It reads the input
// rows of a tile (6 for 4 output rows of a 3x3 kernel: 1.5 times the input) and each
// core the weight once.
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
		x5 := 8 * 64 * 28 * 28 * 2
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

// chainGraph is a chain of convolutions over x [2, 20, 10, 9] with relu after each but
// the last: a 3x3 (20 -> 24 channels, pad 1), a pointwise 24 -> 32, a 3x3 of stride 2
// (32 -> 17, pads 1, 0, 2, 1) and a 1x3 (17 -> 8, pads 0, 0, 1, 1). tap, when >= 0,
// also returns the result of convolution tap.
func chainGraph(t *testing.T, tap int) *core.Graph {
	bl := core.NewBuilder("chain")
	y := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{2, 20, 10, 9}})
	convs := []struct {
		o, c, kh, kw int
		attrs        core.Attrs
	}{
		{24, 20, 3, 3, core.Attrs{"pads": []int64{1, 1, 1, 1}}},
		{32, 24, 1, 1, nil},
		{17, 32, 3, 3, core.Attrs{"stride": []int64{2, 2}, "pads": []int64{1, 0, 2, 1}}},
		{8, 17, 1, 3, core.Attrs{"pads": []int64{0, 0, 1, 1}}},
	}
	var taps []core.Value
	for i, cv := range convs {
		w := bl.Param(fmt.Sprintf("w%d", i), core.TensorType{DType: dtype.Float16, Shape: core.Shape{cv.o, cv.c, cv.kh, cv.kw}})
		b := bl.Param(fmt.Sprintf("b%d", i), core.TensorType{DType: dtype.Float16, Shape: core.Shape{cv.o}})
		var err error
		y, err = bl.Op("conv2d", []core.Value{y, w, b}, cv.attrs, core.Location{})
		require.NoError(t, err)
		if i < len(convs)-1 {
			y, err = bl.Op("relu", []core.Value{y}, nil, core.Location{})
			require.NoError(t, err)
		}
		if i == tap {
			taps = append(taps, y)
		}
	}
	bl.Output(y)
	for _, v := range taps {
		bl.Output(v)
	}
	return bl.Graph()
}

// A chain of convolutions keeps its activations pixel-major between the kernels: each
// reads its predecessor's NHWC result where it lies and only the last writes NCHW, so
// no activation is converted by a kernel of its own (the pointwise convolution's GEMM
// reads the NHWC pixels as its A), and the result matches the reference interpreter.
func TestCubeConvChainKeepsLayout(t *testing.T) {
	for _, chip := range presets(t) {
		t.Run(chip.Name, func(t *testing.T) {
			g := chainGraph(t, -1)
			exe, err := Compile(g, Options{Chip: chip, Verify: true})
			require.NoError(t, err)
			ops := taskOps(exe)
			require.Equal(t, 3, count(ops, "transpose"), "the three non-pointwise weights' conversions only: %v", ops)
			for _, lc := range exe.LayoutConversions() {
				require.Equal(t, "OIHW", lc.From, "only the weights are converted: %v", exe.LayoutConversions())
			}
			compileAndCompare(t, chip, g, 32*9)
		})
	}
}

// A convolution result that the program also returns goes back to NCHW for that
// reader (one reported conversion) while the next convolution still reads it NHWC.
func TestCubeConvChainTapConverts(t *testing.T) {
	chip := presets(t)[1]
	g := chainGraph(t, 0)
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	var back int
	for _, lc := range exe.LayoutConversions() {
		if lc.From == "NHWC" && lc.To == "NCHW" {
			back++
		}
	}
	require.Equal(t, 1, back, "%v", exe.LayoutConversions())
	compileAndCompare(t, chip, g, 32*9)
}

// count is the number of times s occurs in xs.
func count(xs []string, s string) int {
	n := 0
	for _, x := range xs {
		if x == s {
			n++
		}
	}
	return n
}
