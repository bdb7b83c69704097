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

// attentionCase is a scaled_dot_product_attention of q [..., l, e], k [..., s, e],
// v [..., s, ev] (batch dims as given) with an optional mask of maskShape.
type attentionCase struct {
	name      string
	q, k, v   core.Shape
	dt        dtype.DType
	mask      dtype.DType // dtype.Invalid: none
	maskShape core.Shape
	causal    bool
	scale     float64
	tinyToo   bool // run on the tiny preset too (every case runs on a2)
}

func (c attentionCase) graph(t testing.TB) *core.Graph {
	bl := core.NewBuilder("attention")
	ins := []core.Value{
		bl.Param("q", core.TensorType{DType: c.dt, Shape: c.q}),
		bl.Param("k", core.TensorType{DType: c.dt, Shape: c.k}),
		bl.Param("v", core.TensorType{DType: c.dt, Shape: c.v}),
	}
	if c.mask != dtype.Invalid {
		ins = append(ins, bl.Param("mask", core.TensorType{DType: c.mask, Shape: c.maskShape}))
	}
	o, err := bl.Op("scaled_dot_product_attention", ins, core.Attrs{"is_causal": c.causal, "scale": c.scale}, core.Location{})
	require.NoError(t, err)
	bl.Output(o)
	return bl.Graph()
}

// attentionInputs are uniform in [-1, 1) (bool masks keep about 3 keys in 4, and
// always key 0, so that no row is wholly masked); a 0-d input is 1/8 (a scale) or
// -1e4 (a fill).
func attentionInputs(g *core.Graph, seed uint64) ([]*core.Array, [][]byte) {
	r := rand.New(rand.NewPCG(seed, 7))
	var ins []*core.Array
	var raw [][]byte
	for _, p := range g.Params {
		typ := g.Type(p)
		a := core.NewArray(typ)
		if len(typ.Shape) == 0 { // a scale, or a where's fill
			a.Data[0] = 0.125
			if g.Nodes[p].Name == "fill" {
				a.Data[0] = -1e4
			}
			ins, raw = append(ins, a), append(raw, a.Bytes())
			continue
		}
		last := typ.Shape[len(typ.Shape)-1]
		for i := range a.Data {
			if typ.DType == dtype.Bool {
				if r.Float64() < 0.75 || i%last == 0 {
					a.Data[i] = 1
				}
				continue
			}
			a.Data[i] = dtype.Round(typ.DType, 2*r.Float64()-1)
		}
		ins = append(ins, a)
		raw = append(raw, a.Bytes())
	}
	return ins, raw
}

// checkAttention runs g on chip and compares with the reference interpreter. Each
// output is a convex combination of values of v (|v| < 1): the kernel's fp32
// statistics and the probabilities rounded to the dtype for the product with v keep it
// within a few units in the last place of the dtype of |ref| + 1.
func checkAttention(t *testing.T, chip *device.Chip, g *core.Graph) *RunStats {
	t.Helper()
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.Equal(t, []string{"flash_attention"}, taskOps(exe), "one fused task")
	require.Equal(t, chip.VectorCores/chip.CubeCores, exe.Exec().Tasks[0].Vectors, "a mixed task")
	ins, raw := attentionInputs(g, uint64(len(g.Nodes)))
	want, err := core.Interpret(g, ins)
	require.NoError(t, err)
	got, stats, err := exe.Run(raw)
	require.NoError(t, err)
	ulp := map[dtype.DType]float64{dtype.Float32: 0x1p-23, dtype.Float16: 0x1p-10, dtype.BFloat16: 0x1p-7}[want[0].Type.DType]
	out := core.ArrayFromBytes(want[0].Type, got[0])
	for i, w := range want[0].Data {
		tol := 4 * ulp * (math.Abs(w) + 1)
		if d := math.Abs(out.Data[i] - w); !(d <= tol) {
			t.Fatalf("element %d: device %v, reference %v (tolerance %g)", i, out.Data[i], w, tol)
		}
	}
	return stats
}

func TestAttentionIsOneFusedKernel(t *testing.T) {
	cases := []attentionCase{
		{name: "heads_d64", q: core.Shape{2, 3, 40, 64}, k: core.Shape{2, 3, 70, 64}, v: core.Shape{2, 3, 70, 64}, dt: dtype.Float16, tinyToo: true},
		{name: "causal_d128_odd", q: core.Shape{1, 2, 200, 128}, k: core.Shape{1, 2, 200, 128}, v: core.Shape{1, 2, 200, 128}, dt: dtype.Float16, causal: true, tinyToo: true},
		{name: "causal_long_q", q: core.Shape{3, 300, 64}, k: core.Shape{3, 260, 64}, v: core.Shape{3, 260, 32}, dt: dtype.BFloat16, causal: true},
		{name: "bool_mask_broadcast", q: core.Shape{2, 2, 33, 64}, k: core.Shape{1, 2, 150, 64}, v: core.Shape{2, 1, 150, 64}, dt: dtype.Float16,
			mask: dtype.Bool, maskShape: core.Shape{2, 1, 33, 150}, tinyToo: true},
		{name: "float_mask_scale", q: core.Shape{4, 17, 128}, k: core.Shape{4, 129, 128}, v: core.Shape{4, 129, 128}, dt: dtype.Float16,
			mask: dtype.Float16, maskShape: core.Shape{129}, scale: 0.05},
		{name: "f32_mask_causal", q: core.Shape{2, 130, 64}, k: core.Shape{2, 130, 64}, v: core.Shape{2, 130, 64}, dt: dtype.Float16,
			mask: dtype.Float32, maskShape: core.Shape{2, 130, 130}, causal: true},
		{name: "float32", q: core.Shape{50, 64}, k: core.Shape{90, 64}, v: core.Shape{90, 48}, dt: dtype.Float32},
		{name: "odd_head_dims", q: core.Shape{3, 70, 40}, k: core.Shape{3, 50, 40}, v: core.Shape{3, 50, 24}, dt: dtype.Float16, causal: true, tinyToo: true},
		{name: "one_query", q: core.Shape{1, 4, 1, 64}, k: core.Shape{1, 4, 300, 64}, v: core.Shape{1, 4, 300, 64}, dt: dtype.Float16},
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			if chip.Name == "tiny" && !c.tinyToo {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", chip.Name, c.name), func(t *testing.T) {
				checkAttention(t, chip, c.graph(t))
			})
		}
	}
}

// The chain written by hand (k transposed by the matmul or by a transpose, scaled by a
// bound scalar or a constant, masked by an add or a where) is one fused kernel too.
func TestHandWrittenAttentionFuses(t *testing.T) {
	chips := presets(t)
	shape := func(l, e int) core.TensorType {
		return core.TensorType{DType: dtype.Float16, Shape: core.Shape{2, 3, l, e}}
	}
	build := func(t *testing.T, transposeOp, scaleParam, where bool) *core.Graph {
		bl := core.NewBuilder("hand")
		op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
			v, err := bl.Op(name, in, attrs, core.Location{})
			require.NoError(t, err)
			return v
		}
		q, k, v := bl.Param("q", shape(45, 64)), bl.Param("k", shape(140, 64)), bl.Param("v", shape(140, 64))
		var s core.Value
		if transposeOp {
			s = op("batch_matmul", nil, q, op("transpose", core.Attrs{"perm": []int64{0, 1, 3, 2}}, k))
		} else {
			s = op("batch_matmul", core.Attrs{"transpose_b": true}, q, k)
		}
		if scaleParam {
			s = op("mul", nil, bl.Param("scale", core.TensorType{DType: dtype.Float16}), s)
		} else {
			s = op("div", nil, s, op("full", core.Attrs{"value": 8.0, "dtype": "float16", "shape": []int64{}}))
		}
		if where {
			keep := bl.Param("keep", core.TensorType{DType: dtype.Bool, Shape: core.Shape{45, 140}})
			fill := op("full", core.Attrs{"value": math.Inf(-1), "dtype": "float16", "shape": []int64{}})
			if scaleParam { // as the GPT demo: a Python scalar, a bound 0-d input
				fill = bl.Param("fill", core.TensorType{DType: dtype.Float16})
			}
			s = op("where", nil, keep, s, fill)
		} else {
			s = op("add", nil, s, bl.Param("bias", core.TensorType{DType: dtype.Float16, Shape: core.Shape{3, 1, 140}}))
		}
		bl.Output(op("batch_matmul", nil, op("softmax", nil, s), v))
		return bl.Graph()
	}
	for _, chip := range chips {
		for _, variant := range []struct{ transposeOp, scaleParam, where bool }{{false, true, false}, {true, false, true}, {true, true, true}} {
			t.Run(fmt.Sprintf("%s/%+v", chip.Name, variant), func(t *testing.T) {
				checkAttention(t, chip, build(t, variant.transposeOp, variant.scaleParam, variant.where))
			})
		}
	}
}

// Switched off, or with an intermediate read elsewhere, the chain runs unfused.
func TestAttentionFusionIsOptional(t *testing.T) {
	chip := presets(t)[1]
	c := attentionCase{q: core.Shape{2, 40, 64}, k: core.Shape{2, 70, 64}, v: core.Shape{2, 70, 64}, dt: dtype.Float16, causal: true}
	exe, err := Compile(c.graph(t), Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-attention": true}})
	require.NoError(t, err)
	require.NotContains(t, taskOps(exe), "flash_attention")
	require.Greater(t, len(taskOps(exe)), 2)

	bl := core.NewBuilder("shared")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{32, 64}})
	s, err := bl.Op("matmul", []core.Value{x, x}, core.Attrs{"transpose_b": true}, core.Location{})
	require.NoError(t, err)
	p, err := bl.Op("softmax", []core.Value{s}, nil, core.Location{})
	require.NoError(t, err)
	o, err := bl.Op("matmul", []core.Value{p, x}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(o)
	bl.Output(p) // the probabilities are a result: nothing to fuse
	exe, err = Compile(bl.Graph(), Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.NotContains(t, taskOps(exe), "flash_attention")
}

// The lowered levels of an attention print and parse back.
func TestAttentionTextRoundTrip(t *testing.T) {
	c := attentionCase{q: core.Shape{2, 40, 64}, k: core.Shape{2, 70, 64}, v: core.Shape{2, 70, 64}, dt: dtype.Float16, causal: true}
	chip := presets(t)[0]
	exe, err := Compile(c.graph(t), Options{Chip: chip, Verify: true, StopAfter: "plan-exec"})
	require.NoError(t, err)
	text := exe.Exec().Format(true)
	require.Contains(t, text, "kind=attention")
	back, err := ParseExecGraph(text)
	require.NoError(t, err)
	require.Equal(t, text, back.Format(true))
	require.NoError(t, back.Verify(chip))
}
