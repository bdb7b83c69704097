package core

import "pypto/dtype"

// conv2d_5hd is a convolution in the cube's own way, made by the compiler from a
// conv2d (lower/conv_cube.go): the activations stay in GM as NCHW or NHWC (attr
// "layout") and the kernel's loads form the NC1HWC0 ("5HD") bands in L1 (channels cut
// into groups of C0 = 16, each pixel's 16 channels one 32-byte row, the missing
// channels of the last group zero), the padding ("pads": top, bottom, left, right) is
// applied on chip by TIMG2COL, the weight is the fractal matrix [C1*KH*KW*C0, O] whose
// rows run over (c1, kh, kw, c0), the order TIMG2COL writes a group's patches in, and
// the result is written as NCHW or NHWC ("out_layout"). An optional float32 bias [O]
// is added in the accumulator and relu is applied by the fixpipe.

// ConvC0 is the channel group of the 5HD layout for 2-byte dtypes: 32 bytes, one
// fractal row of the cube.
const ConvC0 = 16

func init() {
	Register(&OpDef{Name: "conv2d_5hd", Arity: 2, MaxArity: 3,
		Attrs: []AttrSpec{{"kernel", []int64{1, 1}}, {"stride", int64(1)}, {"pads", []int64{0, 0, 0, 0}}, {"relu", false},
			{"layout", "NCHW"}, {"out_layout", "NCHW"}},
		Doc:    "a conv2d as the cube runs it (made by the compiler): x [N, C, H, W] (layout NCHW) or [N, H, W, C] (NHWC), weight [C1*KH*KW*16, O] (fractal), optional f32 bias [O]; pads top, bottom, left, right; result NCHW or NHWC (out_layout), relu applied when set",
		NoGrad: "formed by the compiler after differentiation (conv2d is differentiable)",
		Infer:  inferConv5HD, Eval: evalConv5HD})
	concreteOnly["conv2d_5hd"] = true
}

// conv5HDGeom is a conv2d_5hd's sizes: batch, channels, input and output rows and
// columns, output channels, kernel, stride and pads.
type conv5HDGeom struct {
	n, c, h, w, oh, ow, o, kh, kw, s int
	pads                             []int
	nhwc, outNHWC                    bool
}

// Conv5HDLayoutNHWC reports whether a conv2d_5hd's attrs name the NHWC layout for its
// input (out false) or its result (out true).
func Conv5HDLayoutNHWC(attrs Attrs, out bool) bool {
	if out {
		return attrs.Str("out_layout", "NCHW") == "NHWC"
	}
	return attrs.Str("layout", "NCHW") == "NHWC"
}

func conv5HDGeometry(in []TensorType, attrs Attrs) (conv5HDGeom, *Error) {
	x, w := in[0], in[1]
	k, pads := attrs.Ints("kernel"), attrs.Ints("pads")
	s := attrs.Int("stride", 1)
	g := conv5HDGeom{s: s, pads: pads, nhwc: Conv5HDLayoutNHWC(attrs, false), outNHWC: Conv5HDLayoutNHWC(attrs, true)}
	for _, l := range []string{attrs.Str("layout", "NCHW"), attrs.Str("out_layout", "NCHW")} {
		if l != "NCHW" && l != "NHWC" {
			return g, Errorf(ValueError, "conv2d_5hd: layouts are NCHW or NHWC, got %q", l)
		}
	}
	if len(k) != 2 || k[0] < 1 || k[1] < 1 || s < 1 || len(pads) != 4 || min(pads[0], pads[1], pads[2], pads[3]) < 0 {
		return g, Errorf(ValueError, "conv2d_5hd: kernel must be two positive ints, stride positive and pads four non-negative ints, got %v, %d and %v", k, s, pads)
	}
	if len(x.Shape) != 4 || len(w.Shape) != 2 || x.DType != w.DType || x.DType.Size() != 2 {
		return g, Errorf(ShapeError, "conv2d_5hd: x must be 4-D and weight [C1*KH*KW*%d, O], of one 2-byte float dtype, got %s and %s", ConvC0, x, w)
	}
	g.n, g.c, g.h, g.w = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	if g.nhwc {
		g.c, g.h, g.w = x.Shape[3], x.Shape[1], x.Shape[2]
	}
	g.kh, g.kw, g.o = k[0], k[1], w.Shape[1]
	if c1 := (g.c + ConvC0 - 1) / ConvC0; w.Shape[0] != c1*g.kh*g.kw*ConvC0 {
		return g, Errorf(ShapeError, "conv2d_5hd: weight %s has %d rows, want C1*KH*KW*C0 = %d", w, w.Shape[0], c1*g.kh*g.kw*ConvC0)
	}
	if len(in) == 3 && (len(in[2].Shape) != 1 || in[2].Shape[0] != g.o || in[2].DType != dtype.Float32) {
		return g, Errorf(ShapeError, "conv2d_5hd: bias must be float32 [%d], got %s", g.o, in[2])
	}
	hp, wp := g.h+pads[0]+pads[1], g.w+pads[2]+pads[3]
	if hp < g.kh || wp < g.kw {
		return g, Errorf(ShapeError, "conv2d_5hd: the %dx%d kernel does not fit the %dx%d padded input", g.kh, g.kw, hp, wp)
	}
	g.oh, g.ow = (hp-g.kh)/s+1, (wp-g.kw)/s+1
	return g, nil
}

func inferConv5HD(in []TensorType, attrs Attrs) (TensorType, *Error) {
	g, err := conv5HDGeometry(in, attrs)
	if err != nil {
		return TensorType{}, err
	}
	if g.outNHWC {
		return TensorType{DType: in[0].DType, Shape: Shape{g.n, g.oh, g.ow, g.o}}, nil
	}
	return TensorType{DType: in[0].DType, Shape: Shape{g.n, g.o, g.oh, g.ow}}, nil
}

func evalConv5HD(in []*Array, attrs Attrs, out *Array) {
	types := make([]TensorType, len(in))
	for i, a := range in {
		types[i] = a.Type
	}
	g, _ := conv5HDGeometry(types, attrs)
	x, w := in[0], in[1]
	relu := attrs.Bool("relu", false)
	xAt := func(b, ch, y, xx int) float64 {
		if g.nhwc {
			return x.Data[((b*g.h+y)*g.w+xx)*g.c+ch]
		}
		return x.Data[((b*g.c+ch)*g.h+y)*g.w+xx]
	}
	for b := range g.n {
		for i := range g.oh {
			for j := range g.ow {
				for oc := range g.o {
					acc := 0.0
					if len(in) == 3 {
						acc = in[2].Data[oc]
					}
					for ch := range g.c {
						for u := range g.kh {
							for v := range g.kw {
								y, xx := i*g.s-g.pads[0]+u, j*g.s-g.pads[2]+v
								if y < 0 || y >= g.h || xx < 0 || xx >= g.w {
									continue
								}
								row := ((ch/ConvC0*g.kh+u)*g.kw+v)*ConvC0 + ch%ConvC0
								acc += xAt(b, ch, y, xx) * w.Data[row*g.o+oc]
							}
						}
					}
					if relu && !(acc > 0) && acc == acc {
						acc = 0
					}
					idx := ((b*g.o+oc)*g.oh+i)*g.ow + j
					if g.outNHWC {
						idx = ((b*g.oh+i)*g.ow+j)*g.o + oc
					}
					out.Data[idx] = roundTo(out, acc)
				}
			}
		}
	}
}

// fused_conv2d_5hd is a conv2d_5hd and the elementwise epilogue the compiler runs in
// the same kernel (a residual add, an activation, a cast, or a fused chain of them),
// as fused_matmul is for a matmul: inputs x, the fractal weight, the bias when attr
// "bias" is set, then the epilogue's other operands; the body's first param is the
// convolution's result. The reference interpreter runs it as the convolution followed
// by the body, so its meaning is exactly the unfused ops'.
func init() {
	Register(&OpDef{Name: "fused_conv2d_5hd", Arity: 2, MaxArity: Variadic,
		Attrs: []AttrSpec{{"kernel", []int64{1, 1}}, {"stride", int64(1)}, {"pads", []int64{0, 0, 0, 0}}, {"relu", false},
			{"layout", "NCHW"}, {"out_layout", "NCHW"}, {"bias", false}, {"body", ""}},
		Doc:    "conv2d_5hd(x, weight[, bias]) followed by an epilogue fused into its kernel by the compiler: the body graph (text form) applied to the convolution's result and the other inputs",
		NoGrad: "formed by the compiler after differentiation (conv2d is differentiable)",
		Infer:  inferFusedConv5HD, Eval: evalFusedConv5HD})
	concreteOnly["fused_conv2d_5hd"] = true
}

// FusedConvOperands is the number of a fused_conv2d_5hd's inputs that are the
// convolution's (x, weight and the bias when it has one); the rest are the epilogue's.
func FusedConvOperands(attrs Attrs) int {
	if attrs.Bool("bias", false) {
		return 3
	}
	return 2
}

func inferFusedConv5HD(in []TensorType, attrs Attrs) (TensorType, *Error) {
	k := FusedConvOperands(attrs)
	if len(in) < k {
		return TensorType{}, Errorf(ValueError, "fused_conv2d_5hd: want at least %d inputs, got %d", k, len(in))
	}
	conv, err := inferConv5HD(in[:k], attrs)
	if err != nil {
		return TensorType{}, err
	}
	return inferFused(append([]TensorType{conv}, in[k:]...), attrs)
}

func evalFusedConv5HD(in []*Array, attrs Attrs, out *Array) {
	k := FusedConvOperands(attrs)
	types := make([]TensorType, k)
	for i := range types {
		types[i] = in[i].Type
	}
	t, err := inferConv5HD(types, attrs)
	if err != nil {
		panic(err)
	}
	conv := NewArray(t)
	evalConv5HD(in[:k], attrs, conv)
	evalFused(append([]*Array{conv}, in[k:]...), attrs, out)
}
