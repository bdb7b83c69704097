package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// residualGraph is relu(conv2d(x, w, b) + r) over x [n, c, h, h] with o output
// channels, a k x k kernel and "same" padding (or, with reluFirst, relu(conv2d(x, w,
// b)) + r: the fixpipe's relu then the add).
func residualGraph(t *testing.T, n, c, h, o, k int, reluFirst bool) *core.Graph {
	bl := core.NewBuilder("residual")
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: core.Shape(s)} }
	x, w, b := bl.Param("x", f16(n, c, h, h)), bl.Param("w", f16(o, c, k, k)), bl.Param("b", f16(o))
	pad := int64(k / 2)
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
	y := op("conv2d", core.Attrs{"pads": []int64{pad, pad, pad, pad}}, x, w, b)
	r := bl.Param("r", f16(n, o, h, h))
	if reluFirst {
		bl.Output(op("add", nil, op("relu", nil, y), r))
	} else {
		bl.Output(op("relu", nil, op("add", nil, y, r)))
	}
	return bl.Graph()
}

// A residual add and the relu after it join the convolution's kernel: one mixed task
// (fused_conv2d_5hd) whose vector cores add the residual to each accumulator tile,
// giving the same bytes as the unfused program (convolution, then the elementwise
// kernel), and whose GM traffic is its operands and result only: the convolution's
// result is never written.
func TestConvResidualFusesIntoKernel(t *testing.T) {
	cases := []struct {
		n, c, h, o, k int
		reluFirst     bool
	}{
		{2, 24, 9, 40, 3, false},
		{1, 20, 7, 33, 3, true},
		{3, 32, 6, 48, 1, false}, // the conv2d_5hd kernel (NCHW in and out) of a 1x1
	}
	for _, chip := range presets(t) {
		for i, cs := range cases {
			t.Run(fmt.Sprintf("%s/%d", chip.Name, i), func(t *testing.T) {
				g := residualGraph(t, cs.n, cs.c, cs.h, cs.o, cs.k, cs.reluFirst)
				fused, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				ops := taskOps(fused)
				require.Equal(t, 1, count(ops, "fused_conv2d_5hd"), "%v", ops)
				tg := fused.Exec().Blocks.Tiles
				back, err := ParseTileGraph(tg.Format())
				require.NoError(t, err, "the tile graph's text form parses back")
				require.Equal(t, tg.Format(), back.Format())
				for _, o := range ops { // besides it, only the weight's and the bias's conversions
					require.Contains(t, []string{"fused_conv2d_5hd", "full", "concat", "transpose", "cast"}, o, "%v", ops)
				}
				unfused, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-conv-epilogue": true}})
				require.NoError(t, err)
				require.Equal(t, 0, count(taskOps(unfused), "fused_conv2d_5hd"))
				_, raw := randomInputs(g)
				got, st, err := fused.Run(raw)
				require.NoError(t, err)
				want, stu, err := unfused.Run(raw)
				require.NoError(t, err)
				require.Equal(t, want, got, "the same bytes as the unfused program")
				compileAndCompare(t, chip, g, cs.c*cs.k*cs.k)
				out := int64(cs.n * cs.o * cs.h * cs.h * 2)
				require.Less(t, footprint(st), footprint(stu)-out, "the convolution's result is not written and read back")
				for j, task := range fused.Exec().Tasks {
					if ops[j] != "fused_conv2d_5hd" {
						continue
					}
					x, w5, r := int64(cs.n*cs.c*cs.h*cs.h*2), int64(ceilDiv(cs.c, 16)*16*cs.k*cs.k*cs.o*2), out
					ts := st.Tasks[j].Stats
					require.Equal(t, x+w5+int64(cs.o*4)+r, ts.FootprintRead, task.Name)
					require.Equal(t, out, ts.FootprintWritten, task.Name)
				}
			})
		}
	}
}

// A convolution whose result has another reader, or whose reader broadcasts an
// operand, keeps its own kernel.
func TestConvEpilogueNeedsOneReaderOfItsShape(t *testing.T) {
	chip := presets(t)[1]
	bl := core.NewBuilder("two")
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: core.Shape(s)} }
	x, w := bl.Param("x", f16(2, 16, 8, 8)), bl.Param("w", f16(16, 16, 3, 3))
	y, err := bl.Op("conv2d", []core.Value{x, w}, core.Attrs{"pads": []int64{1, 1, 1, 1}}, core.Location{})
	require.NoError(t, err)
	s := bl.Param("s", f16(16, 1, 1))
	z, err := bl.Op("mul", []core.Value{y, s}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(z)
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.Equal(t, 0, count(taskOps(exe), "fused_conv2d_5hd"), "%v", taskOps(exe))
	compileAndCompare(t, chip, g, 16*9)
}

// footprint is the distinct GM bytes the tasks of a run read and wrote.
func footprint(st *RunStats) int64 {
	var n int64
	for _, t := range st.Tasks {
		n += t.Stats.FootprintRead + t.Stats.FootprintWritten
	}
	return n
}

// Activations after a convolution join its kernel as its epilogue when their steps fit
// a vector core's UB at a tile the kernel allows (sigmoid; silu, the convolution's
// result read twice inside the epilogue; gelu's tanh form), with the same bytes as the
// unfused program; tanh and the erf gelu, whose steps need 256-column tiles (a packed
// mask) beside scratch for several intermediates, keep a kernel of their own and still
// compile (a tile narrower than their alignment once broke the vector program).
func TestConvActivationEpilogues(t *testing.T) {
	acts := []struct {
		name  string
		fuses bool
		build func(bl *core.Builder, y core.Value) (core.Value, error)
	}{
		{"sigmoid", true, func(bl *core.Builder, y core.Value) (core.Value, error) {
			return bl.Op("sigmoid", []core.Value{y}, nil, core.Location{})
		}},
		{"silu", true, func(bl *core.Builder, y core.Value) (core.Value, error) {
			s, err := bl.Op("sigmoid", []core.Value{y}, nil, core.Location{})
			if err != nil {
				return -1, err
			}
			return bl.Op("mul", []core.Value{y, s}, nil, core.Location{})
		}},
		{"tanh", false, func(bl *core.Builder, y core.Value) (core.Value, error) {
			return bl.Op("tanh", []core.Value{y}, nil, core.Location{})
		}},
		{"gelu_tanh", true, func(bl *core.Builder, y core.Value) (core.Value, error) {
			return bl.Op("gelu", []core.Value{y}, core.Attrs{"approximate": "tanh"}, core.Location{})
		}},
		{"gelu", false, func(bl *core.Builder, y core.Value) (core.Value, error) {
			return bl.Op("gelu", []core.Value{y}, nil, core.Location{})
		}},
	}
	for _, chip := range presets(t) {
		for _, a := range acts {
			t.Run(chip.Name+"/"+a.name, func(t *testing.T) {
				bl := core.NewBuilder("act")
				f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: core.Shape(s)} }
				y, err := bl.Op("conv2d", []core.Value{bl.Param("x", f16(2, 16, 9, 9)), bl.Param("w", f16(24, 16, 3, 3)), bl.Param("b", f16(24))},
					core.Attrs{"pads": []int64{1, 1, 1, 1}}, core.Location{})
				require.NoError(t, err)
				z, err := a.build(bl, y)
				require.NoError(t, err)
				bl.Output(z)
				g := bl.Graph()
				fused, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				require.Equal(t, a.fuses, count(taskOps(fused), "fused_conv2d_5hd") == 1, "%v", taskOps(fused))
				unfused, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-conv-epilogue": true}})
				require.NoError(t, err)
				_, raw := randomInputs(g)
				got, _, err := fused.Run(raw)
				require.NoError(t, err)
				want, _, err := unfused.Run(raw)
				require.NoError(t, err)
				require.Equal(t, want, got)
				compileAndCompare(t, chip, g, 16*9)
			})
		}
	}
}
