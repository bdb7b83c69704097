package lower

import (
	"fmt"
	"math"
	"testing"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// BenchmarkCompileGPTSmall measures a cold compile, all passes and the backend, of
// GPT-2-small decoders (seq 1024, hidden 768, 12 heads, MLP 3072) of two layers and of
// the twelve of cmd/pto-kernels. Besides the wall time it reports the process's CPU
// time per compile, the steadier figure on a shared machine:
//
//	go test ./lower -run '^$' -bench CompileGPTSmall -benchmem
func BenchmarkCompileGPTSmall(b *testing.B) {
	chip, err := device.Preset("a2")
	if err != nil {
		b.Fatal(err)
	}
	for _, layers := range []int{2, 12} {
		b.Run(fmt.Sprintf("layers=%d", layers), func(b *testing.B) {
			g := gptDecoderGraph(b, layers)
			start := processCPU()
			for b.Loop() {
				if _, err := Compile(g, Options{Chip: chip}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// gptDecoderGraph is the pre-norm decoder stack of GPT-2 small with the given number
// of layers, as cmd/pto-kernels builds it with twelve.
func gptDecoderGraph(tb testing.TB, layers int) *core.Graph {
	return decoderGraph(tb, layers, 1024, 768, 12, 3072)
}

// decoderGraph is a pre-norm decoder stack of GPT-2's layers at the given sizes.
func decoderGraph(tb testing.TB, layers, seq, hidden, heads, mlp int) *core.Graph {
	hd := hidden / heads
	bl := core.NewBuilder("gpt_decoder")
	param := func(name string, shape ...int) core.Value {
		return bl.Param(name, core.TensorType{DType: dtype.Float16, Shape: core.Shape(shape)})
	}
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		if err != nil {
			tb.Fatalf("building %s: %v", name, err)
		}
		return v
	}
	split := func(t core.Value) core.Value { // [seq, hidden] -> [heads, seq, hd]
		t = op("reshape", core.Attrs{"shape": []int64{int64(seq), int64(heads), int64(hd)}}, t)
		return op("transpose", core.Attrs{"perm": []int64{1, 0, 2}}, t)
	}
	x := param("x", seq, hidden)
	scale := op("full", core.Attrs{"value": 1 / math.Sqrt(float64(hd)), "dtype": "float16", "shape": []int64{}})
	mask := param("causal_mask", seq, seq)
	for l := range layers {
		p := func(name string, shape ...int) core.Value { return param(fmt.Sprintf("l%d_%s", l, name), shape...) }
		h := op("layer_norm", nil, x, p("ln1_g", hidden), p("ln1_b", hidden))
		q := split(op("linear", nil, h, p("wq", hidden, hidden), p("bq", hidden)))
		k := split(op("linear", nil, h, p("wk", hidden, hidden), p("bk", hidden)))
		v := split(op("linear", nil, h, p("wv", hidden, hidden), p("bv", hidden)))
		s := op("mul", nil, op("batch_matmul", core.Attrs{"transpose_b": true}, q, k), scale)
		a := op("batch_matmul", nil, op("softmax", nil, op("add", nil, s, mask)), v)
		a = op("reshape", core.Attrs{"shape": []int64{int64(seq), int64(hidden)}}, op("transpose", core.Attrs{"perm": []int64{1, 0, 2}}, a))
		x = op("add", nil, x, op("linear", nil, a, p("wo", hidden, hidden), p("bo", hidden)))
		h = op("layer_norm", nil, x, p("ln2_g", hidden), p("ln2_b", hidden))
		h = op("gelu", core.Attrs{"approximate": "tanh"}, op("linear", nil, h, p("w1", mlp, hidden), p("b1", mlp)))
		x = op("add", nil, x, op("linear", nil, h, p("w2", hidden, mlp), p("b2", hidden)))
	}
	bl.Output(op("layer_norm", nil, x, param("lnf_g", hidden), param("lnf_b", hidden)))
	return bl.Graph()
}
