package lower

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// rowGraph builds a graph of one composite op (softmax, layer_norm, ...) over x of
// the given shape, with the extra params it takes (weight, bias of shape [C]).
func rowGraph(t testing.TB, op string, dt dtype.DType, shape core.Shape, extra int, attrs core.Attrs) *core.Graph {
	t.Helper()
	bl := core.NewBuilder(op)
	ins := []core.Value{bl.Param("x", core.TensorType{DType: dt, Shape: shape})}
	for i := 0; i < extra; i++ {
		ins = append(ins, bl.Param(fmt.Sprintf("w%d", i), core.TensorType{DType: dt, Shape: shape[len(shape)-1:]}))
	}
	y, err := bl.Op(op, ins, attrs, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	return bl.Graph()
}

// handSoftmax is softmax as a user writes it: in the input's dtype, max and sum kept
// as [..., 1], no casts.
func handSoftmax(t *testing.T, dt dtype.DType, shape core.Shape) *core.Graph {
	t.Helper()
	bl := core.NewBuilder("hand_softmax")
	x := bl.Param("x", core.TensorType{DType: dt, Shape: shape})
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
	last := core.Attrs{"axis": []int64{-1}, "keepdims": true}
	e := op("exp", nil, op("sub", nil, x, op("max", last, x)))
	bl.Output(op("div", nil, e, op("sum", last, e)))
	return bl.Graph()
}

// runRandom compiles g with opts and runs it on random inputs in [-scale, scale),
// returning the reference's outputs and the device's.
func runRandom(t *testing.T, g *core.Graph, opts Options, seed uint64, scale float64) (want []*core.Array, got []*core.Array) {
	t.Helper()
	exe, err := Compile(g, opts)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 7))
	var ins []*core.Array
	var raw [][]byte
	for _, p := range g.Params {
		a := core.NewArray(g.Type(p))
		for i := range a.Data {
			a.Data[i] = dtype.Round(a.Type.DType, (rng.Float64()*2-1)*scale)
		}
		ins = append(ins, a)
		raw = append(raw, a.Bytes())
	}
	want, err = core.Interpret(g, ins)
	require.NoError(t, err)
	out, _, err := exe.Run(raw)
	require.NoError(t, err)
	for i, w := range want {
		got = append(got, core.ArrayFromBytes(w.Type, out[i]))
	}
	return want, got
}

// maxError is the largest |got - want| over the elements, NaN where only one is NaN.
func maxError(want, got *core.Array) float64 {
	worst := 0.0
	for j, w := range want.Data {
		d := math.Abs(got.Data[j] - w)
		if math.IsNaN(w) && math.IsNaN(got.Data[j]) {
			d = 0
		}
		if !(d <= worst) {
			worst = d
		}
	}
	return worst
}

// compareFusedRows checks that g fused into one row kernel is as close to the
// reference as g compiled without row fusion (whose reductions accumulate the same
// way in fp32 tile by tile), element by element within one unit in the last place of
// the output, and reports the share of bytes the two programs agree on.
func compareFusedRows(t *testing.T, g *core.Graph, chip *device.Chip, seed uint64, scale float64) float64 {
	t.Helper()
	fusedOpts := Options{Chip: chip, Verify: true}
	plainOpts := Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-rows": true}}
	want, fused := runRandom(t, g, fusedOpts, seed, scale)
	_, plain := runRandom(t, g, plainOpts, seed, scale)
	same, total := 0, 0
	for i, w := range want {
		ulp := map[dtype.DType]float64{dtype.Float32: 0x1p-23, dtype.Float16: 0x1p-10, dtype.BFloat16: 0x1p-7}[w.Type.DType]
		bound := maxError(w, plain[i])
		for j, ref := range w.Data {
			tol := bound + ulp*math.Abs(ref)
			if d := math.Abs(fused[i].Data[j] - ref); !(d <= tol) && !(math.IsNaN(fused[i].Data[j]) && math.IsNaN(ref)) {
				t.Fatalf("output %d element %d: fused %v, reference %v, unfused %v (the unfused program is off by up to %g)",
					i, j, fused[i].Data[j], ref, plain[i].Data[j], bound)
			}
			if fused[i].Data[j] == plain[i].Data[j] || (math.IsNaN(fused[i].Data[j]) && math.IsNaN(plain[i].Data[j])) {
				same++
			}
			total++
		}
	}
	return float64(same) / float64(max(total, 1))
}

func tasksOf(t *testing.T, g *core.Graph, opts Options) []string {
	t.Helper()
	exe, err := Compile(g, opts)
	require.NoError(t, err)
	return taskOps(exe)
}

func chipNamed(t *testing.T, name string) *device.Chip {
	c, err := device.Preset(name)
	require.NoError(t, err)
	return c
}

// Each normalisation is one row kernel, and matches the reference as closely as the
// unfused program does.
func TestRowOpsAreOneKernel(t *testing.T) {
	cases := []struct {
		name string
		g    func(dt dtype.DType, s core.Shape) *core.Graph
	}{
		{"softmax", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "softmax", dt, s, 0, nil) }},
		{"log_softmax", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "log_softmax", dt, s, 0, nil) }},
		{"layer_norm", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "layer_norm", dt, s, 0, nil) }},
		{"layer_norm_affine", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "layer_norm", dt, s, 2, nil) }},
		{"rms_norm", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "rms_norm", dt, s, 1, nil) }},
		{"hand_softmax", func(dt dtype.DType, s core.Shape) *core.Graph { return handSoftmax(t, dt, s) }},
	}
	for _, chip := range []string{"tiny", "a2"} {
		for _, c := range cases {
			for _, dt := range []dtype.DType{dtype.Float16, dtype.Float32} {
				shape := core.Shape{37, 70}
				if chip == "a2" {
					shape = core.Shape{3, 50, 300}
				}
				t.Run(fmt.Sprintf("%s/%s/%s", chip, c.name, dt), func(t *testing.T) {
					g := c.g(dt, shape)
					opts := Options{Chip: chipNamed(t, chip), Verify: true}
					require.Equal(t, []string{"fused_rows"}, tasksOf(t, g, opts))
					same := compareFusedRows(t, g, opts.Chip, 1, 4)
					t.Logf("identical to the unfused program: %.4f", same)
				})
			}
		}
	}
}
