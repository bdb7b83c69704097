package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// flatView addresses a tensor through the [outer, rows, cols] flattening of the output.
type flatView struct {
	param        int
	base         int   // element offset of output element (0, ..., 0)
	outer        []int // output dims of the leading axes
	outerStrides []int
	rowStride    int
	colStride    int
}

func newFlatView(param int, m affineMap, out core.Shape) flatView {
	st := m.strides
	v := flatView{param: param, base: m.offset}
	switch len(out) {
	case 0:
	case 1:
		v.colStride = st[0]
	default:
		n := len(out)
		v.outer, v.outerStrides = out[:n-2], st[:n-2]
		v.rowStride, v.colStride = st[n-2], st[n-1]
	}
	return v
}

func (v flatView) window(o, r0, c0, rows, cols int) isa.GMView {
	off := v.base
	for ax := len(v.outer) - 1; ax >= 0; ax-- {
		off += (o % v.outer[ax]) * v.outerStrides[ax]
		o /= v.outer[ax]
	}
	off += r0*v.rowStride + c0*v.colStride
	return isa.GMView{Param: v.param, Offset: off, Rows: rows, Cols: cols, RowStride: v.rowStride, ColStride: v.colStride}
}

// emitElementwise generates a vector block: per output tile, load each input window,
// convert it to the dtype the op computes in (if it differs), run the op's body and
// store the valid window. Ops without a body are copies (view ops, casts): the loaded,
// converted tile is stored as it is. Tiles alternate between two buffer sets so loads
// overlap compute.
func emitElementwise(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	out := tg.Tensors[op.Output].Type
	tr, tc := op.Tile[0], op.Tile[1]
	rows, cols := op.Problem[1], op.Problem[2]
	low := lowerings[op.Op]

	type operand struct {
		view      flatView
		loaded    [2]int
		converted [2]int // -1 when the input already has the dtype the op computes in
	}
	space, maps, outMap := elementwiseSpace(tg.Tensors, op)
	inTypes := make([]dtype.DType, len(op.Inputs))
	for i, t := range op.Inputs {
		inTypes[i] = tg.Tensors[t].Type.DType
	}
	computeIn := low.operandTypes(inTypes, out.DType)
	ins := make([]operand, len(op.Inputs))
	for i, t := range op.Inputs {
		ins[i].view = newFlatView(e.params[t], maps[i], space)
		if low.indirect && i == 0 {
			continue // read by the body's gather
		}
		ins[i].loaded = e.pingPong(fmt.Sprintf("in%d", i), isa.Vec, inTypes[i], tr, tc)
		ins[i].converted = [2]int{-1, -1}
		if inTypes[i] != computeIn[i] {
			ins[i].converted = e.pingPong(fmt.Sprintf("in%d_cvt", i), isa.Vec, computeIn[i], tr, tc)
		}
	}
	isCopy := low.body == nil
	var res [2]int
	if !isCopy {
		res = e.pingPong("out", isa.Vec, out.DType, tr, tc)
	}
	body := &vecBody{e: e, attrs: op.Attrs, tr: tr, tc: tc, space: space}
	if low.indirect {
		src := tg.Tensors[op.Inputs[0]].Type
		body.source = ins[0].view
		body.sourceElems = src.Shape.NumElements()
		axis := gatherAxis(op.Attrs, 0, len(src.Shape)) // the attribute is always set (registry defaults)
		body.gatherLen, body.gatherStride = src.Shape[axis], src.Shape.Strides()[axis]
	}
	ov := newFlatView(e.params[op.Output], outMap, space)

	perOuter := op.Grid[1] * op.Grid[2]
	for step, t := range tiles {
		s := step % 2
		o, rest := t/perOuter, t%perOuter
		r0, c0 := (rest/op.Grid[2])*tr, (rest%op.Grid[2])*tc
		vr, vc := min(tr, rows-r0), min(tc, cols-c0)
		var srcs []int
		for i := range ins {
			in := &ins[i]
			if low.indirect && i == 0 {
				srcs = append(srcs, -1)
				continue
			}
			src := loadWindow(e, s, in.loaded[s], in.view.window(o, r0, c0, vr, vc))
			if in.converted[s] >= 0 {
				e.emit(isa.TCVT, isa.TileOp(in.converted[s]), isa.TileOp(src))
				src = in.converted[s]
			}
			srcs = append(srcs, src)
		}
		var result int
		if isCopy {
			result = srcs[0]
		} else {
			body.o, body.r0, body.c0, body.vr, body.vc = o, r0, c0, vr, vc
			low.body(body, res[s], srcs)
			result = res[s]
		}
		e.emit(isa.TSTORE, isa.GMOp(ov.window(o, r0, c0, vr, vc)), isa.TileOp(result))
	}
}

// inputMaps says how each input of an elementwise tile op is indexed from the output:
// by the op's own map (view ops) or by numpy broadcasting.
func inputMaps(tensors []GMTensor, op *TileOp) []affineMap {
	out := iterationType(tensors, op).Shape
	ins := make([]core.Shape, len(op.Inputs))
	for i, t := range op.Inputs {
		ins[i] = tensors[t].Type.Shape
	}
	if m := lowerings[op.Op].maps; m != nil {
		return m(ins, out, op.Attrs)
	}
	maps := make([]affineMap, len(ins))
	for i, in := range ins {
		maps[i] = broadcastMap(in, out)
	}
	return maps
}

// outputMap says where each element of the iteration space goes in the output: its
// row-major place, or, for ops that write a part of their output (concat), the map the
// lowering gives.
func outputMap(tensors []GMTensor, op *TileOp) affineMap {
	out := tensors[op.Output].Type.Shape
	low := lowerings[op.Op]
	if !low.partial {
		return reshapeMap(out)
	}
	return low.outMap(tensors[op.Inputs[0]].Type.Shape, out, op.Attrs)
}

// iterationType is the type whose elements an elementwise tile op visits: its output's,
// or, for ops writing a part of their output, their one input's.
func iterationType(tensors []GMTensor, op *TileOp) core.TensorType {
	t := tensors[op.Output].Type
	if lowerings[op.Op].partial {
		t.Shape = tensors[op.Inputs[0]].Type.Shape
	}
	return t
}
