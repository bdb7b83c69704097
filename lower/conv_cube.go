package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
)

// runConvToCube gives each conv2d the cube's formats, as the hardware runs one: the
// input converted from NCHW to 5HD (NC1HWC0: channels zero-padded to whole groups of
// C0 = 16, the spatial padding applied), the weight from OIHW to the fractal matrix
// whose rows follow TIMG2COL's patch order, and one conv2d_5hd kernel (codegen_conv.go)
// whose pixel-major result goes back to NCHW (a pointwise convolution, 1x1 of stride 1
// without padding, is the GEMM of its NHWC pixels instead, buildPointwiseConv); a relu that is the convolution's only
// reader becomes the fixpipe's relu in the same kernel, and the bias is added in the
// accumulator. The conversions are graph ops (a pad and a transpose each) and are
// reported with the program's layout conversions. Convolutions the kernel does not
// cover (other dtypes than fp16/bf16, groups, dilation, unequal strides, rows too wide
// for L0A) keep the img2col decomposition. The bias joins the fp32 sum before the one
// rounding, where the decomposition rounds the product first, so the pass is marked as
// reassociating.
func runConvToCube(c *compilation) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	absorbed := map[core.Value]bool{} // relu nodes folded into their convolution
	var conversions []LayoutConversion
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, ins []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if n.Op == "relu" && absorbed[v] {
			return ins[0], true, nil
		}
		if n.Op != "conv2d" || len(users[v]) == 0 && !isOut[v] || !cubeConvFits(c, g, n) {
			return -1, false, nil
		}
		relu := core.Value(-1)
		if us := users[v]; len(us) == 1 && !isOut[v] && g.Nodes[us[0]].Op == "relu" {
			relu = us[0]
			absorbed[relu] = true
		}
		out, conv, err := buildCubeConv(b, g, n, ins, relu >= 0)
		if err != nil {
			return -1, false, err
		}
		conversions = append(conversions, conv...)
		return out, true, nil
	})
	if err != nil {
		return err
	}
	c.graph = ng
	c.convLayouts = conversions
	return nil
}

// cubeConvFits reports whether conv2d node n runs as a conv2d_5hd kernel on the chip.
func cubeConvFits(c *compilation, g *core.Graph, n *core.Node) bool {
	x, w := g.Type(n.Inputs[0]), g.Type(n.Inputs[1])
	if x.DType != dtype.Float16 && x.DType != dtype.BFloat16 {
		return false
	}
	st, dil := n.Attrs.Ints("stride"), n.Attrs.Ints("dilation")
	if n.Attrs.Int("groups", 1) != 1 || dil[0] != 1 || dil[1] != 1 || st[0] != st[1] || c.chip == nil {
		return false
	}
	if isPointwise(w, n.Attrs) {
		return true
	}
	p := cubeConvProblem(x, w, n.Attrs)
	_, _, err := convTile(c.chip, p, x.DType)
	return err == nil
}

// isPointwise reports a 1x1 convolution of stride 1 without padding: a GEMM of the
// pixels by the channels, with nothing to expand.
func isPointwise(w core.TensorType, attrs core.Attrs) bool {
	p, s := attrs.Ints("pads"), attrs.Ints("stride")
	return w.Shape[2] == 1 && w.Shape[3] == 1 && s[0] == 1 && s[1] == 1 && p[0]+p[1]+p[2]+p[3] == 0
}

// buildPointwiseConv is a pointwise convolution as the GEMM it is: the pixels of the
// NHWC input [N*H*W, C] times the weight [O, C] transposed, the bias and relu after it
// (fuse-epilogue makes them one matmul kernel), and the result back to NCHW.
func buildPointwiseConv(b *core.Builder, g *core.Graph, n *core.Node, ins []core.Value, relu bool) (core.Value, []LayoutConversion, error) {
	x, w := g.Type(n.Inputs[0]), g.Type(n.Inputs[1])
	ob := &opBuilder{b: b, loc: n.Loc}
	op := ob.op
	nn, c, h, wd, o := int64(x.Shape[0]), int64(x.Shape[1]), int64(x.Shape[2]), int64(x.Shape[3]), int64(w.Shape[0])
	xm := op("reshape", core.Attrs{"shape": []int64{nn * h * wd, c}}, op("transpose", core.Attrs{"perm": []int64{0, 2, 3, 1}}, ins[0]))
	y := op("matmul", core.Attrs{"transpose_b": true}, xm, op("reshape", core.Attrs{"shape": []int64{o, c}}, ins[1]))
	if len(ins) == 3 {
		y = op("add", nil, y, ins[2])
	}
	if relu {
		y = op("relu", nil, y)
	}
	nhwc := op("reshape", core.Attrs{"shape": []int64{nn, h, wd, o}}, y)
	out := op("transpose", core.Attrs{"perm": []int64{0, 3, 1, 2}}, nhwc)
	if ob.err != nil {
		return -1, nil, ob.err
	}
	yt := b.Type(nhwc)
	return out, []LayoutConversion{convReport(n, "NCHW", "NHWC", x, x), convReport(n, "NHWC", "NCHW", yt, yt)}, nil
}

// convReport is the report of a conversion conv-to-cube made for node n, from t to u.
func convReport(n *core.Node, from, to string, t, u core.TensorType) LayoutConversion {
	where := ""
	if n.Loc.File != "" {
		where = fmt.Sprintf("%s:%d", n.Loc.File, n.Loc.Line)
	}
	return LayoutConversion{From: from, To: to, Shape: t.String(), Bytes: t.Bytes() + u.Bytes(), Loc: n.Loc, Where: where}
}

func cubeConvProblem(x, w core.TensorType, attrs core.Attrs) convProblem {
	pads, s := attrs.Ints("pads"), attrs.Ints("stride")[0]
	hp, wp := x.Shape[2]+pads[0]+pads[1], x.Shape[3]+pads[2]+pads[3]
	kh, kw := w.Shape[2], w.Shape[3]
	return convProblem{n: x.Shape[0], oh: (hp-kh)/s + 1, ow: (wp-kw)/s + 1, o: w.Shape[0],
		c1: ceilDiv(x.Shape[1], core.ConvC0), kh: kh, kw: kw, s: s, wp: wp}
}

// buildCubeConv adds the conversions, the conv2d_5hd and the conversion back for
// conv2d node n (inputs ins in the new graph) and returns the NCHW result with the
// conversions it made.
func buildCubeConv(b *core.Builder, g *core.Graph, n *core.Node, ins []core.Value, relu bool) (core.Value, []LayoutConversion, error) {
	x, w := g.Type(n.Inputs[0]), g.Type(n.Inputs[1])
	ob := &opBuilder{b: b, loc: n.Loc}
	op := ob.op
	pads := n.Attrs.Ints("pads")
	if isPointwise(w, n.Attrs) {
		return buildPointwiseConv(b, g, n, ins, relu)
	}
	c0 := int64(core.ConvC0)
	nn, c, h, wd := int64(x.Shape[0]), int64(x.Shape[1]), int64(x.Shape[2]), int64(x.Shape[3])
	o, kh, kw := int64(w.Shape[0]), int64(w.Shape[2]), int64(w.Shape[3])
	c1 := (c + c0 - 1) / c0
	hp, wp := h+int64(pads[0]+pads[1]), wd+int64(pads[2]+pads[3])
	// NCHW -> NC1HWC0: zero channels up to C1*C0 and the spatial padding, then the
	// channel group's C0 moves innermost.
	xp := op("pad", core.Attrs{"pads": []int64{0, 0, 0, c1*c0 - c, int64(pads[0]), int64(pads[1]), int64(pads[2]), int64(pads[3])}, "value": 0.0}, ins[0])
	x5 := op("transpose", core.Attrs{"perm": []int64{0, 1, 3, 4, 2}}, op("reshape", core.Attrs{"shape": []int64{nn, c1, c0, hp, wp}}, xp))
	// OIHW -> [C1*KH*KW*C0, O]: rows in (c1, kh, kw, c0) order, TIMG2COL's columns.
	wpad := op("pad", core.Attrs{"pads": []int64{0, 0, 0, c1*c0 - c, 0, 0, 0, 0}, "value": 0.0}, ins[1])
	w5 := op("reshape", core.Attrs{"shape": []int64{c1 * kh * kw * c0, o}},
		op("transpose", core.Attrs{"perm": []int64{1, 3, 4, 2, 0}}, op("reshape", core.Attrs{"shape": []int64{o, c1, c0, kh, kw}}, wpad)))
	convIns := []core.Value{x5, w5}
	if len(ins) == 3 {
		convIns = append(convIns, op("cast", core.Attrs{"dtype": dtype.Float32.LongName()}, ins[2]))
	}
	y := op("conv2d_5hd", core.Attrs{"kernel": []int64{kh, kw}, "stride": int64(n.Attrs.Ints("stride")[0]), "relu": relu}, convIns...)
	out := op("transpose", core.Attrs{"perm": []int64{0, 3, 1, 2}}, y)
	if ob.err != nil {
		return -1, nil, ob.err
	}
	yt := b.Type(y)
	return out, []LayoutConversion{
		convReport(n, "NCHW", "NC1HWC0", x, b.Type(x5)),
		convReport(n, "OIHW", "fractal [C1*KH*KW*C0, O]", w, b.Type(w5)),
		convReport(n, "NHWC", "NCHW", yt, yt),
	}, nil
}
