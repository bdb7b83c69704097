package lower

import (
	"pypto/dtype"
	"pypto/isa"
)

// scanAccumulator is the dtype a running sum accumulates in: fp32 for floats (as
// numpy's float32 cumsum), int32 for integers and bool (core's result type).
func scanAccumulator(in, out dtype.DType) dtype.DType {
	if in.IsFloat() {
		return dtype.Float32
	}
	return out
}

// emitScan generates a vector block of a running sum: per tile of lanes, step through
// the scanned axis, adding each row of lanes to the accumulator and storing it.
func emitScan(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	inT, outT := tg.Tensors[op.Inputs[0]].Type, tg.Tensors[op.Output].Type
	outer, a, inner := op.Problem[0], op.Problem[1], op.Problem[2]
	tc := op.Tile[1]
	acc := scanAccumulator(inT.DType, outT.DType)
	src, dst := e.params[op.Inputs[0]], e.params[op.Output]
	x := e.pingPong("x", isa.Vec, inT.DType, 1, tc)
	xc := [2]int{-1, -1}
	if inT.DType != acc {
		xc = e.pingPong("x_acc", isa.Vec, acc, 1, tc)
	}
	accs := e.pingPong("acc", isa.Vec, acc, 1, tc)
	out := [2]int{-1, -1}
	if outT.DType != acc {
		out = e.pingPong("out", isa.Vec, outT.DType, 1, tc)
	}
	step := 0
	for _, t := range tiles {
		// window(i) addresses position i of the tile's lanes
		var window func(param, i int) isa.GMView
		if inner == 1 { // lanes run over outer: element (o, i) is at o*a + i
			o0 := t / op.Grid[1] * tc
			vc := min(tc, outer-o0)
			window = func(param, i int) isa.GMView {
				return isa.GMView{Param: param, Offset: o0*a + i, Rows: 1, Cols: vc, RowStride: a, ColStride: a}
			}
		} else { // lanes run over inner for one outer index
			o, c0 := t/op.Grid[1], t%op.Grid[1]*tc
			vc := min(tc, inner-c0)
			window = func(param, i int) isa.GMView {
				return isa.GMView{Param: param, Offset: o*a*inner + i*inner + c0, Rows: 1, Cols: vc, RowStride: inner, ColStride: 1}
			}
		}
		cur := accs[1]
		e.emit(isa.TEXPANDS, isa.TileOp(cur), isa.ImmOp(0))
		for i := 0; i < a; i++ {
			s := step % 2
			step++
			e.emit(isa.TLOAD, isa.TileOp(x[s]), isa.GMOp(window(src, i)))
			v := x[s]
			if xc[s] >= 0 {
				e.emit(isa.TCVT, isa.TileOp(xc[s]), isa.TileOp(v))
				v = xc[s]
			}
			next := accs[i%2]
			e.emit(isa.TADD, isa.TileOp(next), isa.TileOp(cur), isa.TileOp(v))
			cur = next
			res := cur
			if out[s] >= 0 {
				e.emit(isa.TCVT, isa.TileOp(out[s]), isa.TileOp(cur))
				res = out[s]
			}
			e.emit(isa.TSTORE, isa.GMOp(window(dst, i)), isa.TileOp(res))
		}
	}
}
