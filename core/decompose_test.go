package core

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// decomposeCases exercise every composite op: the decomposed graph must hold only
// primitives, verify, and compute what the op's reference Eval computes, within the
// float32 rounding the decomposition does along the way (a few float32 ulps relative
// to the values involved), then rounded to the result dtype.
var decomposeCases = []struct {
	op    string
	attrs Attrs
	in    []TensorType
}{
	{"mean", Attrs{"axis": []int64{1}}, []TensorType{{DType: tF32, Shape: Shape{3, 5}}}},
	{"mean", nil, []TensorType{{DType: i8, Shape: Shape{4, 3}}}},
	{"mean", Attrs{"axis": []int64{0}, "keepdims": true}, []TensorType{{DType: h16, Shape: Shape{0, 3}}}},
	{"var", Attrs{"axis": []int64{-1}, "ddof": 1.0}, []TensorType{{DType: bf16, Shape: Shape{2, 7}}}},
	{"std", Attrs{"keepdims": true}, []TensorType{{DType: tF32, Shape: Shape{2, 3, 4}}}},
	{"sigmoid", nil, []TensorType{{DType: tF32, Shape: Shape{40}}}},
	{"silu", nil, []TensorType{{DType: h16, Shape: Shape{4, 5}}}},
	{"gelu", nil, []TensorType{{DType: tF32, Shape: Shape{33}}}},
	{"gelu", Attrs{"approximate": "tanh"}, []TensorType{{DType: bf16, Shape: Shape{33}}}},
	{"clip", nil, []TensorType{{DType: tF32, Shape: Shape{3, 4}}, {DType: tF32, Shape: Shape{}}, {DType: tF32, Shape: Shape{4}}}},
	{"softmax", Attrs{"axis": int64(0)}, []TensorType{{DType: tF32, Shape: Shape{6, 2}}}},
	{"log_softmax", nil, []TensorType{{DType: h16, Shape: Shape{3, 9}}}},
	{"layer_norm", nil, []TensorType{{DType: tF32, Shape: Shape{4, 16}}, {DType: tF32, Shape: Shape{16}}, {DType: tF32, Shape: Shape{16}}}},
	{"layer_norm", Attrs{"axis": []int64{-2, -1}}, []TensorType{{DType: h16, Shape: Shape{2, 3, 8}}}},
	{"rms_norm", nil, []TensorType{{DType: bf16, Shape: Shape{5, 8}}, {DType: bf16, Shape: Shape{8}}}},
	{"squeeze", nil, []TensorType{{DType: i32, Shape: Shape{1, 3, 1}}}},
	{"unsqueeze", Attrs{"axis": []int64{1}}, []TensorType{{DType: boolT, Shape: Shape{2, 3}}}},
	{"stack", Attrs{"axis": int64(1)}, []TensorType{{DType: tF32, Shape: Shape{2, 3}}, {DType: h16, Shape: Shape{2, 3}}, {DType: tF32, Shape: Shape{2, 3}}}},
	{"conv2d", Attrs{"stride": []int64{2, 1}, "pads": []int64{1, 2, 0, 1}, "dilation": []int64{1, 2}, "groups": int64(2)},
		[]TensorType{{DType: tF32, Shape: Shape{2, 4, 7, 6}}, {DType: tF32, Shape: Shape{6, 2, 3, 2}}, {DType: tF32, Shape: Shape{6}}}},
	{"conv2d", nil, []TensorType{{DType: h16, Shape: Shape{1, 3, 5, 5}}, {DType: h16, Shape: Shape{4, 3, 1, 1}}}},
	{"batch_norm", Attrs{"eps": 1e-3}, []TensorType{{DType: tF32, Shape: Shape{2, 3, 4, 5}}, {DType: tF32, Shape: Shape{3}}, {DType: tF32, Shape: Shape{3}}, {DType: tF32, Shape: Shape{3}}, {DType: tF32, Shape: Shape{3}}}},
	{"batch_norm", nil, []TensorType{{DType: h16, Shape: Shape{2, 4, 3}}, {DType: h16, Shape: Shape{4}}, {DType: h16, Shape: Shape{4}}}},
	{"max_pool2d", Attrs{"kernel": []int64{3, 2}, "stride": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}},
		[]TensorType{{DType: tF32, Shape: Shape{2, 3, 7, 8}}}},
	{"avg_pool2d", Attrs{"kernel": []int64{3, 3}, "stride": []int64{2, 1}, "pads": []int64{1, 1, 1, 1}, "count_include_pad": false},
		[]TensorType{{DType: bf16, Shape: Shape{1, 2, 6, 5}}}},
	{"avg_pool2d", Attrs{"kernel": []int64{2, 2}, "stride": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}},
		[]TensorType{{DType: tF32, Shape: Shape{1, 2, 6, 5}}}},
	{"topk_values", Attrs{"k": int64(3)}, []TensorType{{DType: tF32, Shape: Shape{4, 6}}}},
	{"topk_indices", Attrs{"k": int64(2), "axis": int64(0), "largest": false}, []TensorType{{DType: i32, Shape: Shape{5, 3}}}},
	{"linear", nil, []TensorType{{DType: tF32, Shape: Shape{2, 3, 8}}, {DType: tF32, Shape: Shape{4, 8}}, {DType: tF32, Shape: Shape{4}}}},
	{"linear", nil, []TensorType{{DType: h16, Shape: Shape{8}}, {DType: h16, Shape: Shape{4, 8}}}},
	{"scaled_dot_product_attention", nil, []TensorType{{DType: tF32, Shape: Shape{2, 5, 8}}, {DType: tF32, Shape: Shape{2, 7, 8}}, {DType: tF32, Shape: Shape{2, 7, 3}}}},
	{"scaled_dot_product_attention", Attrs{"is_causal": true, "scale": 0.3}, []TensorType{{DType: h16, Shape: Shape{2, 1, 6, 4}}, {DType: h16, Shape: Shape{3, 6, 4}}, {DType: h16, Shape: Shape{1, 6, 4}}}},
	{"scaled_dot_product_attention", nil, []TensorType{{DType: bf16, Shape: Shape{4, 8}}, {DType: bf16, Shape: Shape{5, 8}}, {DType: bf16, Shape: Shape{5, 8}}, {DType: bf16, Shape: Shape{4, 5}}}},
	{"scaled_dot_product_attention", Attrs{"is_causal": true}, []TensorType{{DType: tF32, Shape: Shape{3, 4, 8}}, {DType: tF32, Shape: Shape{3, 6, 8}}, {DType: tF32, Shape: Shape{3, 6, 8}}, {DType: boolT, Shape: Shape{6}}}},
	{"layout_transform", Attrs{"layout": "NHWC"}, []TensorType{{DType: h16, Shape: Shape{2, 3, 4, 5}, Layout: Layout{Kind: NCHW}}}},
	{"layout_transform", Attrs{"layout": "CHWN"}, []TensorType{{DType: tF32, Shape: Shape{2, 3, 4, 5}, Layout: Layout{Kind: NHWC}}}},
	{"layout_transform", Attrs{"layout": "NCHW"}, []TensorType{{DType: i8, Shape: Shape{2, 3, 4, 5}}}},
	{"layout_transform", Attrs{"layout": "ND"}, []TensorType{{DType: i8, Shape: Shape{2, 3, 4, 5}, Layout: Layout{Kind: CHWN}}}},
	{"layout_transform", Attrs{"layout": "NZ"}, []TensorType{{DType: h16, Shape: Shape{30, 60}}}},
	{"layout_transform", Attrs{"layout": "NZ"}, []TensorType{{DType: tF32, Shape: Shape{2, 32, 16}}}},
	{"layout_transform", Attrs{"layout": "ND"}, []TensorType{{DType: h16, Shape: Shape{4, 2, 16, 16}, Layout: Layout{Kind: NZ, Rows: 30, Cols: 60}}}},
	{"layout_transform", Attrs{"layout": "NCHW"}, []TensorType{{DType: i8, Shape: Shape{2, 3, 2, 2, 16, 32}, Layout: Layout{Kind: NZ, Rows: 20, Cols: 40}}}},
	{"layout_transform", Attrs{"layout": "NZ"}, []TensorType{{DType: boolT, Shape: Shape{1, 2, 17, 33}, Layout: Layout{Kind: NHWC}}}},
	{"layout_transform", Attrs{"layout": "ND"}, []TensorType{{DType: i32, Shape: Shape{3, 5}}}},
}

func randomArray(r *rand.Rand, t TensorType) *Array {
	a := NewArray(t)
	for i := range a.Data {
		v := r.NormFloat64() * 3
		if t.DType.IsInt() {
			v = math.Round(v * 4)
		}
		a.Data[i] = dtype.Round(t.DType, v)
	}
	return a
}

func TestDecompositionsMatchTheReference(t *testing.T) {
	covered := map[string]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range decomposeCases {
		covered[c.op] = true
		t.Run(c.op, func(t *testing.T) {
			b := NewBuilder("comp")
			var ins []Value
			var data []*Array
			for i, typ := range c.in {
				ins = append(ins, b.Param(string(rune('a'+i)), typ))
				data = append(data, randomArray(r, typ))
			}
			loc := Location{File: "m.py", Line: 3}
			v, err := b.Op(c.op, ins, c.attrs, loc)
			require.NoError(t, err)
			b.Output(v)
			g := b.Graph()
			dg, err := DecomposeGraph(g)
			require.NoError(t, err)
			require.NoError(t, Verify(dg))
			for _, n := range dg.Nodes {
				assert.False(t, IsComposite(n.Op), "%s remains after decomposition", n.Op)
				if n.Op != OpParam {
					assert.Equal(t, loc, n.Loc, "%s keeps the composite's location", n.Op)
				}
			}
			assert.Equal(t, Format(g), Format(b.Graph()), "the input graph is not modified")
			want, err := Interpret(g, data)
			require.NoError(t, err)
			physical := make([]*Array, len(data)) // the decomposed graph drops layout tags
			for i, a := range data {
				physical[i] = &Array{Type: a.Type.withoutLayout(), Data: a.Data}
			}
			got, err := Interpret(dg, physical)
			require.NoError(t, err)
			require.Equal(t, want[0].Type.withoutLayout().String(), got[0].Type.String())
			scale := 0.0
			for _, a := range data {
				for _, x := range a.Data {
					scale = math.Max(scale, math.Abs(x))
				}
			}
			ulp := map[dtype.DType]float64{tF32: 0x1p-23, h16: 0x1p-10, bf16: 0x1p-7}[want[0].Type.DType]
			for i := range want[0].Data {
				w, g := want[0].Data[i], got[0].Data[i]
				if isNaN(w) {
					assert.True(t, isNaN(g), "element %d: want NaN, got %v", i, g)
					continue
				}
				tol := 2*ulp*math.Abs(w) + 64*0x1p-24*math.Max(scale, 1)
				assert.InDelta(t, w, g, tol, "element %d", i)
			}
		})
	}
	for _, name := range OpNames() {
		if IsComposite(name) {
			assert.True(t, covered[name], "composite op %s has no decomposition test case", name)
		}
	}
}

func TestDecomposeGraphKeepsPrimitivesAndParamOrder(t *testing.T) {
	g, err := Parse(`graph g(%y: f32[2], %x: f32[2]) {
  %2 = add(%x, %y) : f32[2]
  %3 = sigmoid(%2) : f32[2]
  return %3, %2
}`)
	require.NoError(t, err)
	dg, err := DecomposeGraph(g)
	require.NoError(t, err)
	text := Format(dg)
	assert.Contains(t, text, "graph g(%y: f32[2], %x: f32[2])")
	assert.Contains(t, text, "add(%x, %y)")
	assert.NotContains(t, text, "sigmoid")
	assert.Contains(t, text, "exp(")
	same, err := DecomposeGraph(dg)
	require.NoError(t, err)
	assert.Equal(t, text, Format(same), "a graph of primitives is returned as it is")
}
