package lower

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
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
// rows of a sub-block (rb+2 for rb output rows of a 3x3 kernel) and the weight once
// per core (resident in L1) or once per tile (streamed).
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
		// Each sub-block of rb output rows reads its rb+2 input rows (the halo), and the
		// weight comes once per core when resident, else once per tile.
		op := exe.Exec().Blocks.Tiles.Ops[exe.Exec().Blocks.Kernels[task.Kernel].Op]
		ct, p := convTilingOf(op.Tile), convProblemOf(op.Problem)
		loads := st.ActiveCores
		if !ct.resident(p) {
			loads = op.NumTiles()
		}
		halo := float64(p.inRows(ct.rb)) / float64(ct.rb)
		require.LessOrEqual(t, st.GMBytesRead, int64(float64(x5)*halo)+int64(loads*w5+st.ActiveCores*64*4), "halo rows and the weight's loads only (tile %v)", op.Tile)
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

// Every way the kernel cuts its work computes the reference's values: sub-blocks
// sharing a step's weight operand (ra), the weight streamed through rings of two or
// three steps or resident in L1, several channel groups a step (a 1x1 kernel), and a
// last tile of an image with fewer rows than the others.
func TestCubeConvTilingsMatchReference(t *testing.T) {
	chip := preset(t, "a2")
	cases := []struct {
		x, w  core.Shape
		attrs core.Attrs
		tile  []int64
	}{
		{core.Shape{2, 40, 7, 9}, core.Shape{40, 40, 3, 3}, core.Attrs{"pads": []int64{1, 1, 1, 1}}, []int64{2, 32, 1, 2, 3}},
		{core.Shape{2, 40, 7, 9}, core.Shape{40, 40, 3, 3}, core.Attrs{"pads": []int64{1, 1, 1, 1}}, []int64{1, 16, 1, 3, 3}},
		{core.Shape{2, 40, 7, 9}, core.Shape{40, 40, 3, 3}, core.Attrs{"pads": []int64{1, 1, 1, 1}}, []int64{3, 48, 1, 1, 3}},
		{core.Shape{1, 33, 8, 8}, core.Shape{24, 33, 3, 3}, core.Attrs{"stride": []int64{2, 2}, "pads": []int64{1, 0, 1, 0}}, []int64{1, 16, 1, 4, 3}},
		{core.Shape{2, 64, 5, 6}, core.Shape{40, 64, 1, 1}, core.Attrs{"stride": []int64{2, 2}}, []int64{2, 16, 2, 2, 3}},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			attrs := core.Attrs{core.AttrTileShape: c.tile}
			for k, v := range c.attrs {
				attrs[k] = v
			}
			g := convGraph(t, dtype.Float16, c.x, c.w, attrs, true, true)
			exe, err := Compile(g, Options{Chip: chip, Verify: true})
			require.NoError(t, err)
			var tiles [][]int
			for _, op := range exe.Exec().Blocks.Tiles.Ops {
				if op.Kind == TileConv {
					tiles = append(tiles, op.Tile)
				}
			}
			require.Equal(t, [][]int{toInts(c.tile)}, tiles, "the given tile")
			compileAndCompare(t, chip, g, c.w[1]*c.w[2]*c.w[3])
		})
	}
	// A tile that does not fit is refused with the buffer it overflows.
	g := convGraph(t, dtype.Float16, core.Shape{1, 16, 8, 64}, core.Shape{128, 16, 3, 3}, core.Attrs{"pads": []int64{1, 1, 1, 1}, core.AttrTileShape: []int64{2, 128, 1, 1, 3}}, false, false)
	_, err := Compile(g, Options{Chip: chip})
	require.ErrorContains(t, err, "exceed L0A")
}

func toInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// Where straight-line code would not fit the instruction cache (always on tiny, which
// models none), a tile's steps run as a loop whose windows move by registers: rings of
// two and three steps (iterations of two and six steps), and the same values.
func TestCubeConvStepLoopMatchesReference(t *testing.T) {
	chip := preset(t, "tiny")
	for _, tile := range [][]int64{{2, 16, 1, 2, 2}, {1, 16, 1, 1, 3}} {
		t.Run(fmt.Sprint(tile), func(t *testing.T) {
			g := convGraph(t, dtype.Float16, core.Shape{2, 400, 6, 8}, core.Shape{40, 400, 3, 3}, core.Attrs{"pads": []int64{1, 1, 1, 1}, core.AttrTileShape: tile}, true, true)
			exe, err := Compile(g, Options{Chip: chip, Verify: true})
			require.NoError(t, err)
			loops := 0
			for _, task := range exe.Exec().Tasks {
				for _, prog := range task.Programs {
					for _, in := range prog.Body {
						if in.Op == isa.LOOP {
							loops++
						}
					}
				}
			}
			require.Positive(t, loops, "the steps run as a loop")
			compileAndCompare(t, chip, g, 400*9)
		})
	}
}

// The tile search times a convolution's tilings as a matmul's: its reason names the
// tilings weighed and the estimate, a timed run of the task alone (whole: a
// convolution's task is timed whole up to convExactBudget instructions; the program's
// run finds the weight in L2, where its conversion just left it, and is a little
// faster); without the search the fixed rule stands.
func TestCubeConvTileIsSearched(t *testing.T) {
	chip := preset(t, "a2")
	g := convGraph(t, dtype.Float16, core.Shape{2, 64, 12, 16}, core.Shape{96, 64, 3, 3}, core.Attrs{"pads": []int64{1, 1, 1, 1}}, true, true)
	for _, fixed := range []bool{false, true} {
		exe, err := Compile(g, Options{Chip: chip, Verify: true, FixedTiles: fixed})
		require.NoError(t, err)
		for i, op := range exe.Exec().Blocks.Tiles.Ops {
			if op.Kind != TileConv {
				continue
			}
			if fixed {
				require.Contains(t, op.Reason, "fixed rule")
				continue
			}
			require.Contains(t, op.Reason, "[rb,tn,gs,ra,sk] tilings by the timing model of a2")
			est := taskCycles(t, exe)
			k := slices.IndexFunc(exe.Exec().Tasks, func(task *Task) bool { return exe.Exec().Blocks.Kernels[task.Kernel].Op == i })
			var cycles int64
			_, err := fmt.Sscanf(op.Reason[strings.Index(op.Reason, "] est ")+6:], "%d", &cycles)
			require.NoError(t, err)
			require.GreaterOrEqual(t, cycles, est[k])
			require.InEpsilon(t, float64(est[k]), float64(cycles), 0.06, "the estimate is the task's timed run")
		}
	}
}
