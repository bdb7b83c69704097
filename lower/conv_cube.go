package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
)

// runConvToCube gives each conv2d the cube's formats, as the hardware runs one: one
// conv2d_5hd kernel (codegen_conv.go) that reads the NCHW activations itself, its
// loads forming the 5HD (NC1HWC0) bands in L1 and TIMG2COL applying the padding, with
// the weight converted from OIHW to the fractal matrix whose rows follow TIMG2COL's
// patch order (a pointwise convolution, 1x1 of stride 1 without padding, is the GEMM
// of its NHWC pixels instead, buildPointwiseConv); a relu that is the convolution's
// only reader becomes the fixpipe's relu in the same kernel, and the bias is added in
// the accumulator. Between convolutions the activations stay pixel-major (NHWC, as
// the accumulator leaves the cube): a convolution whose result only cube
// convolutions read writes NHWC and its readers load it as such, so a chain converts
// nowhere; the result goes back to NCHW (a transpose, reported) only for other
// readers, and the chain's last convolution writes NCHW itself. The conversions that
// remain graph ops are reported with the program's layout conversions. Convolutions
// the kernel does not cover (other dtypes than fp16/bf16, groups, dilation, unequal
// strides, rows too wide for L0A) keep the img2col decomposition. The bias joins the
// fp32 sum before the one rounding, where the decomposition rounds the product first,
// so the pass is marked as reassociating.
func runConvToCube(c *compilation) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	absorbed := map[core.Value]bool{} // relu nodes folded into their convolution
	// nhwcOf maps a new-graph value that stands for a convolution's NCHW result to the
	// NHWC tensor holding it (the value itself when only cube convolutions read it).
	nhwcOf := map[core.Value]core.Value{}
	var conversions []LayoutConversion
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, ins []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if n.Op == "relu" && absorbed[v] {
			return ins[0], true, nil
		}
		if n.Op != "conv2d" || len(users[v]) == 0 && !isOut[v] || !cubeConvFits(c, g, n) {
			return -1, false, nil
		}
		res := v
		if us := users[v]; len(us) == 1 && !isOut[v] && g.Nodes[us[0]].Op == "relu" {
			res = us[0]
			absorbed[res] = true
		}
		nhwcIn, fromNHWC := nhwcOf[ins[0]]
		cv := cubeConv{n: n, x: g.Type(n.Inputs[0]), w: g.Type(n.Inputs[1]), ins: ins, relu: res != v,
			fromNHWC: fromNHWC, nhwcIn: nhwcIn, toNHWC: readByCubeConvs(c, g, users, res), needNCHW: isOut[res] || !onlyCubeConvsRead(c, g, users, res)}
		// A pointwise convolution is a GEMM of NHWC pixels: the GEMM when it reads and
		// writes NHWC only (or the kernel cannot take it), else the kernel, which reads
		// and writes NCHW without a conversion.
		cv.gemm = isPointwise(cv.w, n.Attrs) && (fromNHWC && !cv.needNCHW || !convKernelFits(c, cv.x, cv.w, n.Attrs))
		out, nhwc, conv, err := cv.build(b)
		if err != nil {
			return -1, false, err
		}
		if nhwc >= 0 {
			nhwcOf[out] = nhwc
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

// readByCubeConvs reports whether some cube convolution reads v as its input.
func readByCubeConvs(c *compilation, g *core.Graph, users [][]core.Value, v core.Value) bool {
	for _, u := range users[v] {
		if n := g.Nodes[u]; n.Op == "conv2d" && n.Inputs[0] == v && n.Inputs[1] != v && cubeConvFits(c, g, n) {
			return true
		}
	}
	return false
}

// onlyCubeConvsRead reports whether every reader of v is a cube convolution reading it
// as its input (and only so).
func onlyCubeConvsRead(c *compilation, g *core.Graph, users [][]core.Value, v core.Value) bool {
	for _, u := range users[v] {
		n := g.Nodes[u]
		if n.Op != "conv2d" || n.Inputs[0] != v || n.Inputs[1] == v || len(n.Inputs) == 3 && n.Inputs[2] == v || !cubeConvFits(c, g, n) {
			return false
		}
	}
	return true
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
	return isPointwise(w, n.Attrs) || convKernelFits(c, x, w, n.Attrs)
}

// convKernelFits reports whether a tile of the conv2d_5hd kernel fits the chip for a
// convolution of x by w with attrs.
func convKernelFits(c *compilation, x, w core.TensorType, attrs core.Attrs) bool {
	p := newConvProblem(x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3], w.Shape[0], w.Shape[2], w.Shape[3], attrs.Ints("stride")[0], attrs.Ints("pads"))
	_, _, err := convTile(c.chip, p, x.DType, convEpilogue{})
	return err == nil
}

// isPointwise reports a 1x1 convolution of stride 1 without padding: a GEMM of the
// pixels by the channels, with nothing to expand.
func isPointwise(w core.TensorType, attrs core.Attrs) bool {
	p, s := attrs.Ints("pads"), attrs.Ints("stride")
	return w.Shape[2] == 1 && w.Shape[3] == 1 && s[0] == 1 && s[1] == 1 && p[0]+p[1]+p[2]+p[3] == 0
}

// cubeConv is one conv2d node n going to the cube: its input and weight types, its
// inputs in the new graph, whether a relu joins it, whether its input is an NHWC
// tensor (nhwcIn) instead of ins[0], and which layouts its result must come in.
type cubeConv struct {
	n                *core.Node
	x, w             core.TensorType
	ins              []core.Value
	relu             bool
	fromNHWC         bool
	nhwcIn           core.Value
	toNHWC, needNCHW bool
	gemm             bool // a pointwise convolution run as the GEMM of its pixels
}

// build adds the convolution to b: it returns the value standing for the NCHW result
// (the NHWC tensor itself when nothing needs NCHW), the NHWC tensor when there is one
// (else -1) and the conversions it made.
func (cv cubeConv) build(b *core.Builder) (core.Value, core.Value, []LayoutConversion, error) {
	if cv.gemm {
		return cv.buildPointwise(b)
	}
	n, x, w := cv.n, cv.x, cv.w
	ob := &opBuilder{b: b, loc: n.Loc}
	op := ob.op
	c0 := int64(core.ConvC0)
	c, o, kh, kw := int64(x.Shape[1]), int64(w.Shape[0]), int64(w.Shape[2]), int64(w.Shape[3])
	c1 := (c + c0 - 1) / c0
	// OIHW -> [C1*KH*KW*C0, O]: rows in (c1, kh, kw, c0) order, TIMG2COL's columns.
	wpad := op("pad", core.Attrs{"pads": []int64{0, 0, 0, c1*c0 - c, 0, 0, 0, 0}, "value": 0.0}, cv.ins[1])
	w5 := op("reshape", core.Attrs{"shape": []int64{c1 * kh * kw * c0, o}},
		op("transpose", core.Attrs{"perm": []int64{1, 3, 4, 2, 0}}, op("reshape", core.Attrs{"shape": []int64{o, c1, c0, kh, kw}}, wpad)))
	xin, layout := cv.ins[0], "NCHW"
	if cv.fromNHWC {
		xin, layout = cv.nhwcIn, "NHWC"
	}
	convIns := []core.Value{xin, w5}
	if len(cv.ins) == 3 {
		convIns = append(convIns, op("cast", core.Attrs{"dtype": dtype.Float32.LongName()}, cv.ins[2]))
	}
	outLayout := "NCHW"
	if cv.toNHWC {
		outLayout = "NHWC"
	}
	pads := n.Attrs.Ints("pads")
	attrs := core.Attrs{"kernel": []int64{kh, kw}, "stride": int64(n.Attrs.Ints("stride")[0]), "pads": int64s(pads), "relu": cv.relu,
		"layout": layout, "out_layout": outLayout}
	if shape, ok := n.Attrs[core.AttrTileShape]; ok { // the program's tile for the kernel
		attrs[core.AttrTileShape] = shape
	}
	y := op("conv2d_5hd", attrs, convIns...)
	if ob.err != nil {
		return -1, -1, nil, ob.err
	}
	conv := []LayoutConversion{convReport(n, "OIHW", "fractal [C1*KH*KW*C0, O]", w, b.Type(w5))}
	if !cv.toNHWC {
		return y, -1, conv, nil
	}
	return cv.nchwFor(b, y, conv)
}

// nchwFor is the NCHW value of NHWC result y: y itself when only cube convolutions
// read it, else a transpose (a reported conversion).
func (cv cubeConv) nchwFor(b *core.Builder, y core.Value, conv []LayoutConversion) (core.Value, core.Value, []LayoutConversion, error) {
	if !cv.needNCHW {
		return y, y, conv, nil
	}
	ob := &opBuilder{b: b, loc: cv.n.Loc}
	out := ob.op("transpose", core.Attrs{"perm": []int64{0, 3, 1, 2}}, y)
	if ob.err != nil {
		return -1, -1, nil, ob.err
	}
	yt := b.Type(y)
	return out, y, append(conv, convReport(cv.n, "NHWC", "NCHW", yt, yt)), nil
}

// buildPointwise is a pointwise convolution as the GEMM it is: the pixels of the NHWC
// input [N*H*W, C] times the weight [O, C] transposed, the bias and relu after it
// (fuse-epilogue makes them one matmul kernel). An NCHW input is transposed first (a
// reported conversion); the result is NHWC.
func (cv cubeConv) buildPointwise(b *core.Builder) (core.Value, core.Value, []LayoutConversion, error) {
	n, x, w := cv.n, cv.x, cv.w
	ob := &opBuilder{b: b, loc: n.Loc}
	op := ob.op
	nn, c, h, wd, o := int64(x.Shape[0]), int64(x.Shape[1]), int64(x.Shape[2]), int64(x.Shape[3]), int64(w.Shape[0])
	var conv []LayoutConversion
	xin := cv.nhwcIn
	if !cv.fromNHWC {
		xin = op("transpose", core.Attrs{"perm": []int64{0, 2, 3, 1}}, cv.ins[0])
		conv = append(conv, convReport(n, "NCHW", "NHWC", x, x))
	}
	xm := op("reshape", core.Attrs{"shape": []int64{nn * h * wd, c}}, xin)
	y := op("matmul", core.Attrs{"transpose_b": true}, xm, op("reshape", core.Attrs{"shape": []int64{o, c}}, cv.ins[1]))
	if len(cv.ins) == 3 {
		y = op("add", nil, y, cv.ins[2])
	}
	if cv.relu {
		y = op("relu", nil, y)
	}
	nhwc := op("reshape", core.Attrs{"shape": []int64{nn, h, wd, o}}, y)
	if ob.err != nil {
		return -1, -1, nil, ob.err
	}
	cv.needNCHW = cv.needNCHW || !cv.toNHWC
	return cv.nchwFor(b, nhwc, conv)
}

// convReport is the report of a conversion conv-to-cube made for node n, from t to u.
func convReport(n *core.Node, from, to string, t, u core.TensorType) LayoutConversion {
	where := ""
	if n.Loc.File != "" {
		where = fmt.Sprintf("%s:%d", n.Loc.File, n.Loc.Line)
	}
	return LayoutConversion{From: from, To: to, Shape: t.String(), Bytes: t.Bytes() + u.Bytes(), Loc: n.Loc, Where: where}
}
