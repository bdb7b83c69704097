package lower

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// convBNGraph is batch_norm(conv2d(x, w[, b])) with weight and bias on the norm; with
// alsoConv the convolution's own result is returned too.
func convBNGraph(t *testing.T, dt dtype.DType, bias, alsoConv bool) *core.Graph {
	bl := core.NewBuilder("conv_bn")
	x := bl.Param("x", core.TensorType{DType: dt, Shape: core.Shape{2, 3, 40, 37}})
	ins := []core.Value{x, bl.Param("w", core.TensorType{DType: dt, Shape: core.Shape{5, 3, 3, 3}})}
	if bias {
		ins = append(ins, bl.Param("b", core.TensorType{DType: dt, Shape: core.Shape{5}}))
	}
	y, err := bl.Op("conv2d", ins, core.Attrs{"stride": []int64{2, 1}, "pads": []int64{1, 1, 0, 2}}, core.Location{})
	require.NoError(t, err)
	var stats []core.Value
	for _, name := range []string{"mean", "var", "gamma", "beta"} {
		stats = append(stats, bl.Param(name, core.TensorType{DType: dt, Shape: core.Shape{5}}))
	}
	z, err := bl.Op("batch_norm", append([]core.Value{y}, stats...), core.Attrs{"eps": 1e-3}, core.Location{})
	require.NoError(t, err)
	bl.Output(z)
	if alsoConv {
		bl.Output(y)
	}
	return bl.Graph()
}

// bnInputs are random inputs with a positive variance.
func bnInputs(g *core.Graph) ([]*core.Array, [][]byte) {
	rng := rand.New(rand.NewPCG(3, 5))
	var ins []*core.Array
	var raw [][]byte
	for _, p := range g.Params {
		a := randomArray(rng, g.Type(p))
		if g.Nodes[p].Name == "var" {
			for i := range a.Data {
				a.Data[i] = dtype.Round(a.Type.DType, 0.25+math.Abs(a.Data[i]))
			}
		}
		ins = append(ins, a)
		raw = append(raw, a.Bytes())
	}
	return ins, raw
}

func countOps(g *core.Graph, op string) int {
	n := 0
	for _, node := range g.Nodes {
		if node.Op == op {
			n++
		}
	}
	return n
}

// The folded graph has no batch norm, only a convolution with a new weight and bias,
// and computes what the unfolded one does (in float32, to float32 rounding).
func TestFoldBatchNormComputesTheUnfoldedResult(t *testing.T) {
	for _, bias := range []bool{false, true} {
		g := convBNGraph(t, dtype.Float32, bias, false)
		c := &compilation{graph: g}
		require.NoError(t, runFoldBatchNorm(c))
		folded := core.EliminateDeadCode(c.graph)
		require.NoError(t, core.Verify(folded))
		require.Equal(t, 0, countOps(folded, "batch_norm"))
		require.Equal(t, 1, countOps(folded, "conv2d"))
		ins, _ := bnInputs(g)
		want, err := core.Interpret(g, ins)
		require.NoError(t, err)
		got, err := core.Interpret(folded, ins)
		require.NoError(t, err)
		scale := maxAbs(want[0].Data)
		for i, w := range want[0].Data {
			require.InDelta(t, w, got[0].Data[i], 1e-5*scale, "element %d", i)
		}
	}
}

// A convolution whose own result is needed as well is not folded.
func TestFoldBatchNormKeepsAConvolutionReadElsewhere(t *testing.T) {
	g := convBNGraph(t, dtype.Float16, true, true)
	c := &compilation{graph: g}
	require.NoError(t, runFoldBatchNorm(c))
	require.Equal(t, 1, countOps(c.graph, "batch_norm"))
}

// Compiled with and without the pass, in fp16 on the device, both stay within fp16
// rounding of the reference interpreter's exact result.
func TestFoldBatchNormOnTheDevice(t *testing.T) {
	chip := presets(t)[0]
	g := convBNGraph(t, dtype.Float16, true, false)
	ins, raw := bnInputs(g)
	want, err := core.Interpret(g, ins)
	require.NoError(t, err)
	scale := maxAbs(want[0].Data)
	for _, disabled := range []map[string]bool{nil, {"fold-batch-norm": true}} {
		exe, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: disabled})
		require.NoError(t, err)
		out, _, err := exe.Run(raw)
		require.NoError(t, err)
		got := core.ArrayFromBytes(want[0].Type, out[0])
		for j, w := range want[0].Data {
			// fp16 weights, products and normalisation each round once, relative to
			// the largest value.
			require.InDelta(t, w, got.Data[j], 8*0x1p-10*scale, "disabled %v, element %d", disabled, j)
		}
	}
}
