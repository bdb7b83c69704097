package lower

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

func taskOps(exe *Executable) []string {
	var ops []string
	for _, t := range exe.Exec().Tasks {
		ops = append(ops, exe.Exec().Blocks.Tiles.Ops[t.Kernel].Op)
	}
	return ops
}

// A chain of elementwise ops becomes one kernel, and a value read twice by one kernel
// stays on chip: the intermediates share slots by liveness and the constants are
// immediates, so even tiny's UB holds the tanh chain's group.
func TestElementwiseChainsFuse(t *testing.T) {
	chip := presets(t)[0]
	bl := core.NewBuilder("chain")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{17, 70}})
	b := bl.Param("b", core.TensorType{DType: dtype.Float16, Shape: core.Shape{70}})
	op := func(name string, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, nil, core.Location{})
		require.NoError(t, err)
		return v
	}
	y := op("tanh", op("mul", op("add", x, b), x)) // add, mul, tanh: one kernel
	z := op("add", y, y)                           // y is read twice
	bl.Output(op("relu", z))
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.Equal(t, []string{"fused"}, taskOps(exe), "add-mul-tanh-add-relu")
	compileAndCompare(t, chip, g, 0)
	a2 := presets(t)[1]
	one, err := Compile(g, Options{Chip: a2, Verify: true})
	require.NoError(t, err)
	require.Equal(t, []string{"fused"}, taskOps(one), "all five in one kernel")
	compileAndCompare(t, a2, g, 0)

	unfused, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-elementwise": true}})
	require.NoError(t, err)
	require.Len(t, taskOps(unfused), 5)
}

// Random elementwise graphs give the same bytes fused and unfused (every step rounds
// to its own dtype either way), and the reference's values.
func TestFusionIsExactOnRandomGraphs(t *testing.T) {
	chip := presets(t)[0]
	unary := []string{"neg", "abs", "exp", "relu", "rsqrt", "sqrt", "floor"} // each rounds once: the reference agrees exactly
	binary := []string{"add", "sub", "mul", "maximum", "minimum", "div"}
	for seed := uint64(0); seed < 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			bl := core.NewBuilder("rand")
			dts := []dtype.DType{dtype.Float32, dtype.Float16, dtype.BFloat16}
			vals := []core.Value{
				bl.Param("a", core.TensorType{DType: dts[rng.IntN(3)], Shape: core.Shape{9, 70}}),
				bl.Param("b", core.TensorType{DType: dts[rng.IntN(3)], Shape: core.Shape{70}}),
			}
			for i := 0; i < 8; i++ {
				var v core.Value
				var err error
				switch rng.IntN(4) {
				case 0:
					v, err = bl.Op(unary[rng.IntN(len(unary))], []core.Value{vals[rng.IntN(len(vals))]}, nil, core.Location{})
				case 1:
					v, err = bl.Op("cast", []core.Value{vals[rng.IntN(len(vals))]}, core.Attrs{"dtype": dts[rng.IntN(3)].LongName()}, core.Location{})
				default:
					v, err = bl.Op(binary[rng.IntN(len(binary))], []core.Value{vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]}, nil, core.Location{})
				}
				require.NoError(t, err)
				vals = append(vals, v)
			}
			bl.Output(vals[len(vals)-1])
			g := bl.Graph()
			fused, err := Compile(g, Options{Chip: chip, Verify: true})
			require.NoError(t, err)
			plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-elementwise": true}})
			require.NoError(t, err)
			_, raw := randomInputs(g)
			a, _, err := fused.Run(raw)
			require.NoError(t, err)
			b, _, err := plain.Run(raw)
			require.NoError(t, err)
			require.Equal(t, b[0], a[0], "fused %v vs %v", taskOps(fused), taskOps(plain))
			compileAndCompare(t, chip, g, 0)
		})
	}
}

// Scalar constants (full of shape []) fuse into the kernel that uses them.
func TestConstantsFuseIntoTheirConsumer(t *testing.T) {
	chip := presets(t)[0]
	bl := core.NewBuilder("scale")
	x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{17, 70}})
	c, err := bl.Op("full", nil, core.Attrs{"value": 0.125, "dtype": "float32", "shape": []int64{}}, core.Location{})
	require.NoError(t, err)
	y, err := bl.Op("mul", []core.Value{x, c}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	exe, err := Compile(bl.Graph(), Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.Equal(t, []string{"fused"}, taskOps(exe))
	compileAndCompare(t, chip, bl.Graph(), 0)
}
