package main

import (
	"fmt"
	"math"

	"pypto/core"
	"pypto/dtype"
)

// benchCase builds one benchmark program.
type benchCase struct {
	name  string
	build func(b *graphBuilder)
	// cached also measures a compile of the same graph through the session's compile
	// cache (the GPT case).
	cached bool
	// runtimes also measures the case with the plain runtime (lower.PlainRuntime: the
	// scheduling features off), a second row beside the default's.
	runtimes bool
	// conv, for a convolution case, is its GEMM's m, k, n (the convolution's output
	// pixels, C*KH*KW and output channels): the row also gives the convolution
	// kernel's own cube busy and GM bytes, and the cube busy of that GEMM.
	conv *[3]int
	// between, for a chain of convolutions, is the bytes of the activations passed
	// between its kernels: the row's chain_floor_gm_bytes counts each written once and
	// read once beside the compulsory bytes, and reread once more (an input that a
	// later kernel reads again: a residual).
	between, reread int64
}

func benchCases() []benchCase {
	return []benchCase{
		{name: "gemm_fp16_4096", build: gemm(4096)},
		{name: "gemm_fp16_6144", build: gemm(6144)},
		{name: "matmul_bias_relu_fp16_4096", build: matmulBiasRelu(4096)},
		{name: "softmax_fp16_8192x4096", build: rowOp("softmax")},
		{name: "layer_norm_fp16_8192x4096", build: rowOp("layer_norm")},
		{name: "attention_fp16_1x32x4096x128", build: attention(false)},
		{name: "attention_causal_fp16_1x32x4096x128", build: attention(true)},
		{name: "gpt2_small_decoder_seq1024", build: gpt2Small, cached: true, runtimes: true},
		// conv2d + bias + relu, fp16, batch 8: a ResNet-50 stage (conv3_x, 28x28: the
		// 3x3 of its bottleneck and the 1x1 that expands it) and a UNet encoder block's
		// 3x3 at 64x64.
		convCase("conv_resnet50_3x3_b8_128x28x28", 8, 128, 28, 28, 128, 3),
		convCase("conv_resnet50_1x1_b8_128x28x28_to512", 8, 128, 28, 28, 512, 1),
		convCase("conv_unet_3x3_b8_64x64x64", 8, 64, 64, 64, 64, 3),
		// 3x3 convolutions with many channels over small images, batch 4 (implicit
		// GEMMs of M = 4*H*W 1.5K to 8K, K = C*9, N = O): the convolutions of a
		// diffusion UNet's low-resolution stages and of wide classifier heads.
		convCase("conv_3x3_b4_128x16x24_to1536", 4, 128, 16, 24, 1536, 3),
		convCase("conv_3x3_b4_256x24x32_to2560", 4, 256, 24, 32, 2560, 3),
		convCase("conv_3x3_b4_320x32x32_to3840", 4, 320, 32, 32, 3840, 3),
		convCase("conv_3x3_b4_512x32x48_to5120", 4, 512, 32, 48, 5120, 3),
		convCase("conv_3x3_b4_640x32x64_to7680", 4, 640, 32, 64, 7680, 3),
		convCase("conv_3x3_b4_640x16x24_to7680", 4, 640, 16, 24, 7680, 3),
		// The bottleneck's last 1x1 (128 -> 512) with its residual add and the relu
		// after it, which join the convolution's kernel.
		convResidualCase("conv_resnet50_1x1_res_b8_128x28x28_to512", 8, 128, 28, 512, 1),
		// Chains: a UNet block (two 3x3 + relu at 64x64, 64 channels) and a ResNet-50
		// conv3_x bottleneck (1x1 512 -> 128, 3x3, 1x1 -> 512, the residual add, relu:
		// the add and relu join the last convolution's kernel, which reads the block's
		// input again as the residual).
		{name: "conv_unet_block_b8_64x64x64", build: unetBlock, between: 8 * 64 * 64 * 64 * 2},
		{name: "conv_resnet50_bottleneck_b8_512x28x28", build: bottleneck, between: 2 * 8 * 128 * 28 * 28 * 2, reread: 8 * 512 * 28 * 28 * 2},
	}
}

// graphBuilder wraps core.Builder, panicking on errors: the cases are fixed programs,
// so an error is a bug in this command (reported by measure).
type graphBuilder struct {
	*core.Builder
	weights []int // the params that are weights (the same bytes every run)
}

// weight is a param holding a weight: the program prepares what reads only weights
// once (lower.Options.Weights), as a model's captured tensors are.
func (b *graphBuilder) weight(name string, shape ...int) core.Value {
	b.weights = append(b.weights, len(b.Graph().Params))
	return b.param(name, shape...)
}

func (b *graphBuilder) param(name string, shape ...int) core.Value {
	return b.Param(name, core.TensorType{DType: dtype.Float16, Shape: core.Shape(shape)})
}

func (b *graphBuilder) op(name string, attrs core.Attrs, in ...core.Value) core.Value {
	v, err := b.Op(name, in, attrs, core.Location{})
	if err != nil {
		panic(fmt.Errorf("building %s: %v", name, err))
	}
	return v
}

func gemm(n int) func(b *graphBuilder) {
	return func(b *graphBuilder) {
		b.Output(b.op("matmul", nil, b.param("a", n, n), b.param("b", n, n)))
	}
}

func matmulBiasRelu(n int) func(b *graphBuilder) {
	return func(b *graphBuilder) {
		y := b.op("add", nil, b.op("matmul", nil, b.param("a", n, n), b.param("b", n, n)), b.param("bias", n))
		b.Output(b.op("relu", nil, y))
	}
}

// convCase is relu(conv2d(x, w, b)) over x [n, c, h, w] with o output channels, a
// k x k kernel, stride 1 and "same" padding.
func convCase(name string, n, c, h, w, o, k int) benchCase {
	pad := int64(k / 2)
	build := func(b *graphBuilder) {
		y := b.op("conv2d", core.Attrs{"pads": []int64{pad, pad, pad, pad}}, b.param("x", n, c, h, w), b.weight("w", o, c, k, k), b.weight("b", o))
		b.Output(b.op("relu", nil, y))
	}
	return benchCase{name: name, build: build, conv: &[3]int{n * h * w, c * k * k, o}}
}

// convResidualCase is relu(conv2d(x, w, b) + r), r of the convolution's shape, with
// the sizes of convCase.
func convResidualCase(name string, n, c, hw, o, k int) benchCase {
	pad := int64(k / 2)
	build := func(b *graphBuilder) {
		y := b.op("conv2d", core.Attrs{"pads": []int64{pad, pad, pad, pad}}, b.param("x", n, c, hw, hw), b.weight("w", o, c, k, k), b.weight("b", o))
		b.Output(b.op("relu", nil, b.op("add", nil, y, b.param("r", n, o, hw, hw))))
	}
	return benchCase{name: name, build: build, conv: &[3]int{n * hw * hw, c * k * k, o}}
}

// convRelu is relu(conv2d(x, w, b)) with "same" padding for a k x k kernel of o
// output channels over the c channels of x; the parameters are named after i.
func convRelu(b *graphBuilder, x core.Value, i, c, o, k int, relu bool) core.Value {
	pad := int64(k / 2)
	y := b.op("conv2d", core.Attrs{"pads": []int64{pad, pad, pad, pad}}, x, b.weight(fmt.Sprintf("w%d", i), o, c, k, k), b.weight(fmt.Sprintf("b%d", i), o))
	if relu {
		y = b.op("relu", nil, y)
	}
	return y
}

func unetBlock(b *graphBuilder) {
	x := b.param("x", 8, 64, 64, 64)
	b.Output(convRelu(b, convRelu(b, x, 0, 64, 64, 3, true), 1, 64, 64, 3, true))
}

func bottleneck(b *graphBuilder) {
	x := b.param("x", 8, 512, 28, 28)
	y := convRelu(b, convRelu(b, convRelu(b, x, 0, 512, 128, 1, true), 1, 128, 128, 3, true), 2, 128, 512, 1, false)
	b.Output(b.op("relu", nil, b.op("add", nil, y, x)))
}

func rowOp(name string) func(b *graphBuilder) {
	return func(b *graphBuilder) {
		x := b.param("x", 8192, 4096)
		if name == "layer_norm" {
			b.Output(b.op(name, nil, x, b.param("gamma", 4096), b.param("beta", 4096)))
			return
		}
		b.Output(b.op(name, nil, x))
	}
}

// attention is softmax(q k^T / sqrt(d) [+ causal mask]) v over [1, 32, 4096, 128]:
// the registry's scaled_dot_product_attention when it exists, else the same chain of
// ops (the causal mask then a [4096, 4096] input of 0 and -inf).
func attention(causal bool) func(b *graphBuilder) {
	return func(b *graphBuilder) {
		const heads, seq, d = 32, 4096, 128
		q, k, v := b.param("q", 1, heads, seq, d), b.param("k", 1, heads, seq, d), b.param("v", 1, heads, seq, d)
		if _, ok := core.LookupOp("scaled_dot_product_attention"); ok {
			b.Output(b.op("scaled_dot_product_attention", core.Attrs{"is_causal": causal}, q, k, v))
			return
		}
		s := b.op("batch_matmul", core.Attrs{"transpose_b": true}, q, k)
		scale := b.op("full", core.Attrs{"value": 1 / math.Sqrt(d), "dtype": "float16", "shape": []int64{}})
		s = b.op("mul", nil, s, scale)
		if causal {
			s = b.op("add", nil, s, b.param("mask", seq, seq))
		}
		b.Output(b.op("batch_matmul", nil, b.op("softmax", nil, s), v))
	}
}

// gpt2Small is the decoder stack of GPT-2 small (12 layers, hidden 768, 12 heads, MLP
// 3072) over one sequence of 1024 tokens: pre-norm attention and MLP blocks with
// residuals, then the final layer norm. Token embedding and the LM head are left out.
func gpt2Small(b *graphBuilder) {
	const layers, seq, hidden, heads, mlp = 12, 1024, 768, 12, 3072
	hd := hidden / heads
	x := b.param("x", seq, hidden)
	split := func(t core.Value) core.Value { // [seq, hidden] -> [heads, seq, hd]
		t = b.op("reshape", core.Attrs{"shape": []int64{seq, heads, int64(hd)}}, t)
		return b.op("transpose", core.Attrs{"perm": []int64{1, 0, 2}}, t)
	}
	scale := b.op("full", core.Attrs{"value": 1 / math.Sqrt(float64(hd)), "dtype": "float16", "shape": []int64{}})
	mask := b.param("causal_mask", seq, seq)
	for l := range layers {
		p := func(name string, shape ...int) core.Value { return b.param(fmt.Sprintf("l%d_%s", l, name), shape...) }
		h := b.op("layer_norm", nil, x, p("ln1_g", hidden), p("ln1_b", hidden))
		q := split(b.op("linear", nil, h, p("wq", hidden, hidden), p("bq", hidden)))
		k := split(b.op("linear", nil, h, p("wk", hidden, hidden), p("bk", hidden)))
		v := split(b.op("linear", nil, h, p("wv", hidden, hidden), p("bv", hidden)))
		s := b.op("mul", nil, b.op("batch_matmul", core.Attrs{"transpose_b": true}, q, k), scale)
		a := b.op("batch_matmul", nil, b.op("softmax", nil, b.op("add", nil, s, mask)), v)
		a = b.op("reshape", core.Attrs{"shape": []int64{seq, hidden}}, b.op("transpose", core.Attrs{"perm": []int64{1, 0, 2}}, a))
		x = b.op("add", nil, x, b.op("linear", nil, a, p("wo", hidden, hidden), p("bo", hidden)))
		h = b.op("layer_norm", nil, x, p("ln2_g", hidden), p("ln2_b", hidden))
		h = b.op("gelu", core.Attrs{"approximate": "tanh"}, b.op("linear", nil, h, p("w1", mlp, hidden), p("b1", mlp)))
		x = b.op("add", nil, x, b.op("linear", nil, h, p("w2", hidden, mlp), p("b2", hidden)))
	}
	b.Output(b.op("layer_norm", nil, x, b.param("lnf_g", hidden), b.param("lnf_b", hidden)))
}
