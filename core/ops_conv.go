package core

import (
	"math"

	"pypto/dtype"
)

// 2-D convolution and pooling over NCHW tensors, with torch's semantics. Attributes
// arrive resolved by the front end: stride [sh, sw], dilation [dh, dw], pads [top,
// bottom, left, right] (so "same" with an even kernel pads one more after than before,
// as torch does), kernel [kh, kw] for the pools.
//
// Each is a composite: Eval computes it directly (the exact reference: float64
// accumulation, rounded once); Decompose rewrites it as an explicit img2col, a strided
// slice of the padded input for every kernel tap stacked into a [N, C, KH*KW, OH, OW]
// tensor, followed by a batched matmul with the reshaped weights (convolution) or a
// reduction over the taps (pooling).

var convAttrs = []AttrSpec{{"stride", []int64{1, 1}}, {"pads", []int64{0, 0, 0, 0}}, {"dilation", []int64{1, 1}}, {"groups", int64(1)}}

var poolAttrs = []AttrSpec{{"kernel", []int64{1, 1}}, {"stride", []int64{1, 1}}, {"pads", []int64{0, 0, 0, 0}}, {"dilation", []int64{1, 1}},
	{"count_include_pad", true}}

func init() {
	Register(&OpDef{Name: "conv2d", Arity: 2, MaxArity: 3, Attrs: convAttrs,
		Doc:   "2-D cross-correlation of x [N, C, H, W] with weight [O, C/groups, KH, KW] (+ bias [O]), torch's conv2d; compiled for the cube as 5HD activations, a fractal weight and one TIMG2COL kernel (conv-to-cube), or else as img2col and a batched matmul",
		Infer: inferConv2d, Eval: evalConv2d, Decompose: decomposeConv2d})
	Register(&OpDef{Name: "max_pool2d", Arity: 1, Attrs: poolAttrs,
		Doc:   "the maximum of each KH x KW window of x [N, C, H, W] (padding never wins), torch's max_pool2d",
		Infer: inferPool("max_pool2d"), Eval: evalPool(true), Decompose: decomposePool(true)})
	Register(&OpDef{Name: "avg_pool2d", Arity: 1, Attrs: poolAttrs,
		Doc:   "the mean of each KH x KW window of x [N, C, H, W]; padding counts when count_include_pad, torch's avg_pool2d",
		Infer: inferPool("avg_pool2d"), Eval: evalPool(false), Decompose: decomposePool(false)})
}

type window struct {
	kh, kw, sh, sw, dh, dw, pt, pb, pl, pr int
}

func windowOf(attrs Attrs, kh, kw int) window {
	s, d, p := attrs.Ints("stride"), attrs.Ints("dilation"), attrs.Ints("pads")
	return window{kh, kw, s[0], s[1], d[0], d[1], p[0], p[1], p[2], p[3]}
}

// out is the output extent of an axis of size n.
func (w window) out(n, k, s, d, before, after int) int {
	span := n + before + after - d*(k-1) - 1
	if span < 0 {
		return 0
	}
	return span/s + 1
}

func (w window) outHW(h, wd int) (int, int) {
	return w.out(h, w.kh, w.sh, w.dh, w.pt, w.pb), w.out(wd, w.kw, w.sw, w.dw, w.pl, w.pr)
}

func checkWindowAttrs(op string, attrs Attrs) *Error {
	for _, name := range []string{"stride", "dilation"} {
		v := attrs.Ints(name)
		if len(v) != 2 || v[0] < 1 || v[1] < 1 {
			return Errorf(ValueError, "%s: %s must be two positive ints, got %v", op, name, v)
		}
	}
	p := attrs.Ints("pads")
	if len(p) != 4 || p[0] < 0 || p[1] < 0 || p[2] < 0 || p[3] < 0 {
		return Errorf(ValueError, "%s: pads must be four non-negative ints (top, bottom, left, right), got %v", op, p)
	}
	return nil
}

func inferConv2d(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x, w := in[0], in[1]
	if err := checkWindowAttrs("conv2d", attrs); err != nil {
		return TensorType{}, err
	}
	if len(x.Shape) != 4 || len(w.Shape) != 4 {
		return TensorType{}, Errorf(ShapeError, "conv2d: x must be [N, C, H, W] and weight [O, C/groups, KH, KW], got shapes %v and %v", x.Shape, w.Shape).
			Suggest("add a batch axis with unsqueeze(x, 0) for a single image")
	}
	if x.DType != w.DType || !x.DType.IsFloat() {
		return TensorType{}, Errorf(DTypeError, "conv2d: x and weight must share a float dtype, got %s and %s", x.DType.LongName(), w.DType.LongName()).
			Suggest("cast both to float16 (the cube's type) or float32")
	}
	g := attrs.Int("groups", 1)
	n, c, h, wd := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	o, cg, kh, kw := w.Shape[0], w.Shape[1], w.Shape[2], w.Shape[3]
	if g < 1 || c%g != 0 || o%g != 0 {
		return TensorType{}, Errorf(ValueError, "conv2d: groups=%d must divide the %d input channels and the %d output channels", g, c, o)
	}
	if cg*g != c {
		return TensorType{}, Errorf(ShapeError, "conv2d: weight %v has %d input channels per group, x has %d channels in %d groups (%d each)", w.Shape, cg, c, g, c/g)
	}
	if len(in) == 3 && (len(in[2].Shape) != 1 || in[2].Shape[0] != o || in[2].DType != x.DType) {
		return TensorType{}, Errorf(ShapeError, "conv2d: bias must be [%d] of %s, got %v of %s", o, x.DType.LongName(), in[2].Shape, in[2].DType.LongName())
	}
	win := windowOf(attrs, kh, kw)
	oh, ow := win.outHW(h, wd)
	if oh < 1 || ow < 1 {
		return TensorType{}, Errorf(ShapeError, "conv2d: the %dx%d kernel (dilation %v) does not fit the padded %dx%d input", kh, kw, attrs.Ints("dilation"), h, wd).
			Suggest("pad the input or use a smaller kernel")
	}
	return TensorType{DType: x.DType, Shape: Shape{n, o, oh, ow}}, nil
}

func evalConv2d(in []*Array, attrs Attrs, out *Array) {
	x, w := in[0], in[1]
	g := attrs.Int("groups", 1)
	n, c, h, wd := x.Type.Shape[0], x.Type.Shape[1], x.Type.Shape[2], x.Type.Shape[3]
	o, cg, kh, kw := w.Type.Shape[0], w.Type.Shape[1], w.Type.Shape[2], w.Type.Shape[3]
	win := windowOf(attrs, kh, kw)
	oh, ow := out.Type.Shape[2], out.Type.Shape[3]
	og := o / g
	for b := range n {
		for oc := range o {
			grp := oc / og
			bias := 0.0
			if len(in) == 3 {
				bias = in[2].Data[oc]
			}
			for i := range oh {
				for j := range ow {
					acc := bias
					for ci := range cg {
						ch := grp*cg + ci
						for u := range kh {
							y := i*win.sh - win.pt + u*win.dh
							if y < 0 || y >= h {
								continue
							}
							for v := range kw {
								xx := j*win.sw - win.pl + v*win.dw
								if xx < 0 || xx >= wd {
									continue
								}
								acc += x.Data[((b*c+ch)*h+y)*wd+xx] * w.Data[((oc*cg+ci)*kh+u)*kw+v]
							}
						}
					}
					out.Data[((b*o+oc)*oh+i)*ow+j] = roundTo(out, acc)
				}
			}
		}
	}
}

// taps pads x (value pad) and stacks one strided slice per kernel tap: [N, C, KH*KW, OH, OW].
func taps(d *dec, x Value, win window, oh, ow int, pad float64) Value {
	t := d.typ(x)
	if d.err != nil {
		return -1
	}
	n, c := t.Shape[0], t.Shape[1]
	if win.pt+win.pb+win.pl+win.pr > 0 {
		x = d.op("pad", Attrs{"pads": []int64{0, 0, 0, 0, int64(win.pt), int64(win.pb), int64(win.pl), int64(win.pr)}, "value": pad}, x)
	}
	parts := make([]Value, 0, win.kh*win.kw)
	for u := range win.kh {
		for v := range win.kw {
			y0, x0 := u*win.dh, v*win.dw
			parts = append(parts, d.op("slice", Attrs{
				"starts": []int64{0, 0, int64(y0), int64(x0)},
				"stops":  []int64{int64(n), int64(c), int64(y0 + win.sh*(oh-1) + 1), int64(x0 + win.sw*(ow-1) + 1)},
				"steps":  []int64{1, 1, int64(win.sh), int64(win.sw)},
			}, x))
		}
	}
	if len(parts) == 1 {
		return d.op("unsqueeze", Attrs{"axis": []int64{2}}, parts[0])
	}
	return d.op("stack", Attrs{"axis": int64(2)}, parts...)
}

func decomposeConv2d(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	xt, wt := d.typ(in[0]), d.typ(in[1])
	g := attrs.Int("groups", 1)
	n := xt.Shape[0]
	o, cg, kh, kw := wt.Shape[0], wt.Shape[1], wt.Shape[2], wt.Shape[3]
	win := windowOf(attrs, kh, kw)
	oh, ow := win.outHW(xt.Shape[2], xt.Shape[3])
	k := int64(cg * kh * kw)
	cols := taps(d, in[0], win, oh, ow, 0)                                                       // [N, C, KH*KW, OH, OW]
	cols = d.op("reshape", Attrs{"shape": []int64{int64(n), int64(g), k, int64(oh * ow)}}, cols) // channels major, then taps
	wm := d.op("reshape", Attrs{"shape": []int64{int64(g), int64(o / g), k}}, in[1])             // [G, O/G, Cg*KH*KW]
	y := d.op("batch_matmul", nil, wm, cols)                                                     // [N, G, O/G, OH*OW]
	y = d.op("reshape", Attrs{"shape": []int64{int64(n), int64(o), int64(oh), int64(ow)}}, y)    // NCHW
	if len(in) == 3 {
		y = d.op("add", nil, y, d.op("reshape", Attrs{"shape": []int64{int64(o), 1, 1}}, in[2]))
	}
	return d.done(y)
}

func inferPool(op string) func(in []TensorType, attrs Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		x := in[0]
		if err := checkWindowAttrs(op, attrs); err != nil {
			return TensorType{}, err
		}
		k := attrs.Ints("kernel")
		if len(k) != 2 || k[0] < 1 || k[1] < 1 {
			return TensorType{}, Errorf(ValueError, "%s: kernel must be two positive ints, got %v", op, k)
		}
		if len(x.Shape) != 4 {
			return TensorType{}, Errorf(ShapeError, "%s: x must be [N, C, H, W], got shape %v", op, x.Shape).
				Suggest("add a batch axis with unsqueeze(x, 0) for a single image")
		}
		if !x.DType.IsFloat() {
			return TensorType{}, Errorf(DTypeError, "%s: x must be a float tensor, got %s", op, x.DType.LongName())
		}
		win := windowOf(attrs, k[0], k[1])
		if win.pt > k[0]/2 || win.pb > k[0]/2+win.sh || win.pl > k[1]/2 || win.pr > k[1]/2+win.sw {
			return TensorType{}, Errorf(ValueError, "%s: padding %v is more than half the %dx%d kernel", op, attrs.Ints("pads"), k[0], k[1]).
				Because("torch requires pad <= kernel_size / 2: a window of padding alone has no value")
		}
		oh, ow := win.outHW(x.Shape[2], x.Shape[3])
		if oh < 1 || ow < 1 {
			return TensorType{}, Errorf(ShapeError, "%s: the %dx%d window does not fit the padded %v input", op, k[0], k[1], x.Shape)
		}
		return TensorType{DType: x.DType, Shape: Shape{x.Shape[0], x.Shape[1], oh, ow}}, nil
	}
}

func evalPool(isMax bool) func(in []*Array, attrs Attrs, out *Array) {
	return func(in []*Array, attrs Attrs, out *Array) {
		x := in[0]
		k := attrs.Ints("kernel")
		win := windowOf(attrs, k[0], k[1])
		includePad := attrs.Bool("count_include_pad", true)
		n, c, h, wd := x.Type.Shape[0], x.Type.Shape[1], x.Type.Shape[2], x.Type.Shape[3]
		oh, ow := out.Type.Shape[2], out.Type.Shape[3]
		for p := range n * c {
			for i := range oh {
				for j := range ow {
					acc, cnt := 0.0, 0
					if isMax {
						acc = math.Inf(-1)
					}
					nan := false
					for u := range win.kh {
						y := i*win.sh - win.pt + u*win.dh
						for v := range win.kw {
							xx := j*win.sw - win.pl + v*win.dw
							inside := y >= 0 && y < h && xx >= 0 && xx < wd
							if !inside {
								// torch's avg_pool2d counts the padding [-pad, size+pad) only.
								if !isMax && includePad && y < h+win.pb && xx < wd+win.pr {
									cnt++
								}
								continue
							}
							val := x.Data[(p*h+y)*wd+xx]
							cnt++
							if isMax {
								if val != val {
									nan = true
								}
								acc = math.Max(acc, val)
							} else {
								acc += val
							}
						}
					}
					switch {
					case isMax && nan:
						acc = math.NaN()
					case !isMax:
						acc /= float64(cnt)
					}
					out.Data[(p*oh+i)*ow+j] = roundTo(out, acc)
				}
			}
		}
	}
}

func decomposePool(isMax bool) func(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
	return func(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
		d := newDec(b, loc)
		xt := d.typ(in[0])
		k := attrs.Ints("kernel")
		win := windowOf(attrs, k[0], k[1])
		oh, ow := win.outHW(xt.Shape[2], xt.Shape[3])
		if isMax {
			return d.done(d.op("max", Attrs{"axis": []int64{2}}, taps(d, in[0], win, oh, ow, math.Inf(-1))))
		}
		sum := d.op("sum", Attrs{"axis": []int64{2}}, d.cast(taps(d, in[0], win, oh, ow, 0), dtype.Float32))
		// The divisor of each output: the taps that fall inside the input (and, with
		// count_include_pad, in the padding before the input's end plus pad), as torch.
		ones := d.op("full", Attrs{"value": 1.0, "dtype": dtype.Float32.LongName(), "shape": []int64{1, 1, int64(xt.Shape[2]), int64(xt.Shape[3])}})
		cwin := win
		if attrs.Bool("count_include_pad", true) {
			ones = d.op("pad", Attrs{"pads": []int64{0, 0, 0, 0, int64(win.pt), int64(win.pb), int64(win.pl), int64(win.pr)}, "value": 1.0}, ones)
			cwin.pt, cwin.pb, cwin.pl, cwin.pr = 0, 0, 0, 0
		}
		count := d.op("sum", Attrs{"axis": []int64{2}}, taps(d, ones, cwin, oh, ow, 0))
		return d.done(d.cast(d.op("div", nil, sum, count), xt.DType))
	}
}
