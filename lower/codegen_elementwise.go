package lower

import (
	"fmt"

	"pypto/core"
	"pypto/isa"
)

// flatView addresses a tensor through the [outer, rows, cols] flattening of the output.
type flatView struct {
	param        int
	outer        []int // output dims of the leading axes
	outerStrides []int
	rowStride    int
	colStride    int
}

func newFlatView(param int, in, out core.Shape) flatView {
	st := core.BroadcastStrides(in, out)
	v := flatView{param: param}
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
	off := 0
	for ax := len(v.outer) - 1; ax >= 0; ax-- {
		off += (o % v.outer[ax]) * v.outerStrides[ax]
		o /= v.outer[ax]
	}
	off += r0*v.rowStride + c0*v.colStride
	return isa.GMView{Param: v.param, Offset: off, Rows: rows, Cols: cols, RowStride: v.rowStride, ColStride: v.colStride}
}

// emitElementwise generates a vector block: per output tile, load each input window
// (converting it to the output dtype if needed), apply the op and store the valid
// window. Tiles alternate between two buffer sets so loads overlap compute.
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
	ins := make([]operand, len(op.Inputs))
	for i, t := range op.Inputs {
		typ := tg.Tensors[t].Type
		ins[i].view = newFlatView(i, typ.Shape, out.Shape)
		ins[i].loaded = e.pingPong(fmt.Sprintf("in%d", i), isa.Vec, typ.DType, tr, tc)
		ins[i].converted = [2]int{-1, -1}
		if typ.DType != out.DType {
			ins[i].converted = e.pingPong(fmt.Sprintf("in%d_cvt", i), isa.Vec, out.DType, tr, tc)
		}
	}
	res := e.pingPong("out", isa.Vec, out.DType, tr, tc)
	ov := newFlatView(len(op.Inputs), out.Shape, out.Shape)

	perOuter := op.Grid[1] * op.Grid[2]
	for step, t := range tiles {
		s := step % 2
		o, rest := t/perOuter, t%perOuter
		r0, c0 := (rest/op.Grid[2])*tr, (rest%op.Grid[2])*tc
		vr, vc := min(tr, rows-r0), min(tc, cols-c0)
		args := []isa.Operand{isa.TileOp(res[s])}
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
		e.emit(low.vector, args...)
		e.emit(isa.TSTORE, isa.GMOp(ov.window(o, r0, c0, vr, vc)), isa.TileOp(res[s]))
	}
}
