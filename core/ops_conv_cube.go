package core

import "pypto/dtype"

// conv2d_5hd is a convolution in the cube's own formats, made by the compiler from a
// conv2d (lower/conv_cube.go): the activations in NC1HWC0 ("5HD": channels cut into
// C1 groups of C0 = 16, each group an H x W image of C0-channel pixels, the padding
// already applied), the weight as the fractal matrix [C1*KH*KW*C0, O] whose rows run
// over (c1, kh, kw, c0), the order TIMG2COL writes a group's patches in, and the
// result pixel-major [N, OH, OW, O] as the accumulator leaves the cube. An optional
// float32 bias [O] is added in the accumulator and relu is applied by the fixpipe.

// ConvC0 is the channel group of the 5HD layout for 2-byte dtypes: 32 bytes, one
// fractal row of the cube.
const ConvC0 = 16

func init() {
	Register(&OpDef{Name: "conv2d_5hd", Arity: 2, MaxArity: 3,
		Attrs:  []AttrSpec{{"kernel", []int64{1, 1}}, {"stride", int64(1)}, {"relu", false}},
		Doc:    "a conv2d in the cube's formats (made by the compiler): x [N, C1, Hp, Wp, C0] (5HD, padded), weight [C1*KH*KW*C0, O] (fractal), optional f32 bias [O]; result [N, OH, OW, O], relu applied when set",
		NoGrad: "formed by the compiler after differentiation (conv2d is differentiable)",
		Infer:  inferConv5HD, Eval: evalConv5HD})
	concreteOnly["conv2d_5hd"] = true
}

func inferConv5HD(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x, w := in[0], in[1]
	k := attrs.Ints("kernel")
	s := attrs.Int("stride", 1)
	if len(k) != 2 || k[0] < 1 || k[1] < 1 || s < 1 {
		return TensorType{}, Errorf(ValueError, "conv2d_5hd: kernel must be two positive ints and stride positive, got %v and %d", k, s)
	}
	if len(x.Shape) != 5 || x.Shape[4] != ConvC0 || len(w.Shape) != 2 || x.DType != w.DType || x.DType.Size() != 2 {
		return TensorType{}, Errorf(ShapeError, "conv2d_5hd: x must be [N, C1, H, W, %d] and weight [C1*KH*KW*%d, O] of one 2-byte float dtype, got %s and %s", ConvC0, ConvC0, x, w)
	}
	if w.Shape[0] != x.Shape[1]*k[0]*k[1]*ConvC0 {
		return TensorType{}, Errorf(ShapeError, "conv2d_5hd: weight %s has %d rows, want C1*KH*KW*C0 = %d", w, w.Shape[0], x.Shape[1]*k[0]*k[1]*ConvC0)
	}
	o := w.Shape[1]
	if len(in) == 3 && (len(in[2].Shape) != 1 || in[2].Shape[0] != o || in[2].DType != dtype.Float32) {
		return TensorType{}, Errorf(ShapeError, "conv2d_5hd: bias must be float32 [%d], got %s", o, in[2])
	}
	if x.Shape[2] < k[0] || x.Shape[3] < k[1] {
		return TensorType{}, Errorf(ShapeError, "conv2d_5hd: the %dx%d kernel does not fit the %dx%d padded input", k[0], k[1], x.Shape[2], x.Shape[3])
	}
	oh, ow := (x.Shape[2]-k[0])/s+1, (x.Shape[3]-k[1])/s+1
	return TensorType{DType: x.DType, Shape: Shape{x.Shape[0], oh, ow, o}}, nil
}

func evalConv5HD(in []*Array, attrs Attrs, out *Array) {
	x, w := in[0], in[1]
	k := attrs.Ints("kernel")
	s := attrs.Int("stride", 1)
	relu := attrs.Bool("relu", false)
	n, c1, h, wd := x.Type.Shape[0], x.Type.Shape[1], x.Type.Shape[2], x.Type.Shape[3]
	oh, ow, o := out.Type.Shape[1], out.Type.Shape[2], out.Type.Shape[3]
	for b := range n {
		for i := range oh {
			for j := range ow {
				for oc := range o {
					acc := 0.0
					if len(in) == 3 {
						acc = in[2].Data[oc]
					}
					for g := range c1 {
						for u := range k[0] {
							for v := range k[1] {
								px := (((b*c1+g)*h+i*s+u)*wd + j*s + v) * ConvC0
								row := ((g*k[0]+u)*k[1] + v) * ConvC0
								for ch := range ConvC0 {
									acc += x.Data[px+ch] * w.Data[(row+ch)*o+oc]
								}
							}
						}
					}
					if relu && !(acc > 0) && acc == acc {
						acc = 0
					}
					out.Data[((b*oh+i)*ow+j)*o+oc] = roundTo(out, acc)
				}
			}
		}
	}
}
