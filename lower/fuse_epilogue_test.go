package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// linearGraph is act(x @ w + bias) (+ residual when given), the shapes of a linear
// layer; epilogue names the ops applied after the bias add.
func linearGraph(t *testing.T, dt dtype.DType, m, k, n int, epilogue []string, residual bool) *core.Graph {
	bl := core.NewBuilder("linear")
	x := bl.Param("x", core.TensorType{DType: dt, Shape: core.Shape{m, k}})
	w := bl.Param("w", core.TensorType{DType: dt, Shape: core.Shape{k, n}})
	bias := bl.Param("bias", core.TensorType{DType: dt, Shape: core.Shape{n}})
	op := func(name string, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, nil, core.Location{})
		require.NoError(t, err)
		return v
	}
	y := op("add", op("matmul", x, w), bias)
	for _, e := range epilogue {
		y = op(e, y)
	}
	if residual {
		y = op("add", y, bl.Param("r", core.TensorType{DType: dt, Shape: core.Shape{m, n}}))
	}
	bl.Output(y)
	return bl.Graph()
}

// A matmul with a bias, an activation and a residual add is one mixed task whose
// values are the unfused program's, byte for byte, on every preset and for edge tiles.
func TestMatmulEpilogueIsOneExactKernel(t *testing.T) {
	cases := []struct {
		m, k, n  int
		dt       dtype.DType
		epilogue []string
		residual bool
	}{
		{64, 96, 80, dtype.Float16, []string{"relu"}, false},
		{130, 70, 300, dtype.Float16, []string{"neg"}, true},
		{33, 40, 48, dtype.BFloat16, nil, true},
		{40, 64, 40, dtype.Float32, []string{"relu", "neg"}, false},
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%dx%dx%d_%s_%v", chip.Name, c.m, c.k, c.n, c.dt, c.epilogue), func(t *testing.T) {
				g := linearGraph(t, c.dt, c.m, c.k, c.n, c.epilogue, c.residual)
				fused, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				require.Equal(t, []string{"fused_matmul"}, taskOps(fused))
				require.Greater(t, fused.Exec().Tasks[0].Vectors, 0, "a mixed task")
				plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-epilogue": true}})
				require.NoError(t, err)
				require.Greater(t, len(taskOps(plain)), 1)
				_, raw := randomInputs(g)
				a, sa, err := fused.Run(raw)
				require.NoError(t, err)
				b, sb, err := plain.Run(raw)
				require.NoError(t, err)
				require.Equal(t, b[0], a[0])
				assert.Less(t, footprint(sa), footprint(sb), "the product never goes through GM")
				compileAndCompare(t, chip, g, c.k)
			})
		}
	}
}

// A product read by two ops, or returned, is not folded into an epilogue.
func TestMatmulWithSeveralUsersStaysPlain(t *testing.T) {
	chip := presets(t)[1]
	bl := core.NewBuilder("two")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{32, 32}})
	p, err := bl.Op("matmul", []core.Value{x, x}, nil, core.Location{})
	require.NoError(t, err)
	r, err := bl.Op("relu", []core.Value{p}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(r)
	bl.Output(p)
	exe, err := Compile(bl.Graph(), Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.Equal(t, []string{"matmul", "relu"}, taskOps(exe))
}

// The text forms print and parse back a mixed task.
func TestMixedTaskTextRoundTrip(t *testing.T) {
	g := linearGraph(t, dtype.Float16, 40, 32, 48, []string{"relu"}, false)
	exe, err := Compile(g, Options{Chip: presets(t)[1], Verify: true, StopAfter: "plan-exec"})
	require.NoError(t, err)
	text := exe.Exec().Format(true)
	require.Contains(t, text, "vectors=2")
	back, err := ParseExecGraph(text)
	require.NoError(t, err)
	require.Equal(t, text, back.Format(true))
	require.NoError(t, back.Verify(presets(t)[1]))
}

// The sum of two products (an accumulation over K tiles) fuses one matmul with the add
// and keeps the other as the add's operand.
func TestSumOfTwoProductsFusesOne(t *testing.T) {
	bl := core.NewBuilder("two")
	f32 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float32, Shape: s} }
	a, b := bl.Param("a", f32(16, 16)), bl.Param("b", f32(16, 16))
	c, d := bl.Param("c", f32(16, 16)), bl.Param("d", f32(16, 16))
	m1, err := bl.Op("matmul", []core.Value{a, b}, nil, core.Location{})
	require.NoError(t, err)
	m2, err := bl.Op("matmul", []core.Value{c, d}, nil, core.Location{})
	require.NoError(t, err)
	s, err := bl.Op("add", []core.Value{m1, m2}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(s)
	compileAndCompare(t, preset(t, "tiny"), bl.Graph(), 16)
}
