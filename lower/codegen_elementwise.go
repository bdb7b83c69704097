package lower

import (
	"fmt"

	"pypto/core"
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

// emitElementwise generates a vector block: per output tile, load each input window
// (converting it to the output dtype if needed), apply the op and store the valid
// window. Ops without a vector instruction are copies (view ops): the loaded tile is
// stored as it is. Tiles alternate between two buffer sets so loads overlap compute.
func emitElementwise(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	out := tg.Tensors[op.Output].Type
	tr, tc := op.Tile[0], op.Tile[1]
	rows, cols := op.Problem[1], op.Problem[2]
	low := lowerings[op.Op]

	type operand struct {
		view      flatView
		loaded    [2]int
		converted [2]int // -1 when the input already has the output dtype
	}
	maps := inputMaps(tg, op)
	ins := make([]operand, len(op.Inputs))
	for i, t := range op.Inputs {
		typ := tg.Tensors[t].Type
		ins[i].view = newFlatView(e.params[t], maps[i], out.Shape)
		ins[i].loaded = e.pingPong(fmt.Sprintf("in%d", i), isa.Vec, typ.DType, tr, tc)
		ins[i].converted = [2]int{-1, -1}
		if typ.DType != out.DType {
			ins[i].converted = e.pingPong(fmt.Sprintf("in%d_cvt", i), isa.Vec, out.DType, tr, tc)
		}
	}
	isCopy := low.vector == isa.OpInvalid
	var res [2]int
	if !isCopy {
		res = e.pingPong("out", isa.Vec, out.DType, tr, tc)
	}
	ov := newFlatView(e.params[op.Output], reshapeMap(out.Shape), out.Shape)

	perOuter := op.Grid[1] * op.Grid[2]
	for step, t := range tiles {
		s := step % 2
		o, rest := t/perOuter, t%perOuter
		r0, c0 := (rest/op.Grid[2])*tr, (rest%op.Grid[2])*tc
		vr, vc := min(tr, rows-r0), min(tc, cols-c0)
		var args []isa.Operand
		for i := range ins {
			in := &ins[i]
			e.emit(isa.TLOAD, isa.TileOp(in.loaded[s]), isa.GMOp(in.view.window(o, r0, c0, vr, vc)))
			src := in.loaded[s]
			if in.converted[s] >= 0 {
				e.emit(isa.TCVT, isa.TileOp(in.converted[s]), isa.TileOp(src))
				src = in.converted[s]
			}
			args = append(args, isa.TileOp(src))
		}
		result := args[0].Tile
		if !isCopy {
			e.emit(low.vector, append([]isa.Operand{isa.TileOp(res[s])}, args...)...)
			result = res[s]
		}
		e.emit(isa.TSTORE, isa.GMOp(ov.window(o, r0, c0, vr, vc)), isa.TileOp(result))
	}
}

// inputMaps says how each input of an elementwise tile op is indexed from the output:
// by the op's own map (view ops) or by numpy broadcasting.
func inputMaps(tg *TileGraph, op *TileOp) []affineMap {
	out := tg.Tensors[op.Output].Type.Shape
	ins := make([]core.Shape, len(op.Inputs))
	for i, t := range op.Inputs {
		ins[i] = tg.Tensors[t].Type.Shape
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
