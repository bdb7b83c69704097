package ptoas

import (
	"fmt"

	"pypto/isa"
)

// Scalar control. Our registers are signed 64-bit integers that instructions update
// in place, so each is an emitc.variable of i64 and each scalar instruction an emitc
// operation whose result is assigned to it: the C++ declares an int64_t per register
// and updates it where the program does. (The dialect's own index arithmetic would
// need SSA values carried through loops, and the arith lowering of ptoas 0.1.1 knows
// only addi and muli.) A register's value becomes an index, for a loop bound, a view
// or a valid size, through emitc.cast where it is used.

// emitcOps are the emitc operations of the register arithmetic.
var emitcOps = map[isa.Opcode]string{
	isa.SADD: "emitc.add", isa.SSUB: "emitc.sub", isa.SMUL: "emitc.mul", isa.SDIV: "emitc.div", isa.SREM: "emitc.rem",
}

func writeScalar() {
	for op, name := range emitcOps {
		opWriters[op] = func(w *writer, in isa.Instr) {
			v := w.value("v")
			w.line(`%s = "%s"(%s, %s) : (i64, i64) -> i64`, v, name, w.regValue(in.Args[1]), w.regValue(in.Args[2]))
			w.assign(in.Args[0].Reg, v, "")
		}
	}
	for op, pred := range map[isa.Opcode]string{isa.SMIN: "lt", isa.SMAX: "gt"} {
		opWriters[op] = func(w *writer, in isa.Instr) {
			a, b := w.regValue(in.Args[1]), w.regValue(in.Args[2])
			g := w.group(in)
			c := w.value("p")
			w.line(`%s = "emitc.cmp"(%s, %s) <{predicate = %d : i64}> {%s} : (i64, i64) -> i1`, c, a, b, cmpPredicates[pred], g(0))
			v := w.value("v")
			w.line(`%s = "emitc.conditional"(%s, %s, %s) {%s} : (i1, i64, i64) -> i64`, v, c, a, b, g(1))
			w.assign(in.Args[0].Reg, v, g(2))
		}
	}
	opWriters[isa.SMOV] = func(w *writer, in isa.Instr) {
		w.assign(in.Args[0].Reg, w.regValue(in.Args[1]), "")
	}
	opWriters[isa.SLD] = func(w *writer, in isa.Instr) {
		v := in.Args[1].GM
		arg := w.scalarNames[w.sldArg[[2]int{v.Param, v.Offset}]]
		x := w.value("v")
		w.line(`%s = "emitc.cast"(%s) {pypto.sld} : (index) -> i64`, x, arg)
		w.assign(in.Args[0].Reg, x, "")
	}
	opWriters[isa.LOOP] = writeLoop
	opWriters[isa.ENDLOOP] = writeEndLoop
}

// cmpPredicates are emitc.cmp's predicate numbers (eq 0, ne 1, lt 2, le 3, gt 4, ge 5).
var cmpPredicates = map[string]int{"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}

// assign writes value v to register r.
func (w *writer) assign(r int, v, attrs string) {
	if attrs != "" {
		attrs = " {" + attrs + "}"
	}
	w.line(`"emitc.assign"(%s, %s)%s : (i64, i64) -> ()`, w.reg[r], v, attrs)
}

// loops is the stack of open loops: their counter register and trip count (an index).
type openLoop struct {
	counter int
	count   string
}

// writeLoop opens `scf.for %iv = 0 to count step 1` (count read once, here) and sets
// the counter register from the induction variable at the top of the body.
func writeLoop(w *writer, in isa.Instr) {
	// The bounds are all emitc casts of i64 values: ptoas 0.1.1 wants the three of
	// one C++ type, and a register's cast is not of the type it gives index constants.
	var count string
	switch a := in.Args[1]; a.Kind {
	case isa.KindImm:
		count = w.castIndex(w.i64(int64(a.Imm)))
	case isa.KindReg:
		count = w.castIndex(w.reg[a.Reg])
	default:
		w.fail("loop count is a %s", a.Kind)
	}
	iv := w.fresh("%", "iv_"+w.p.Regs[in.Args[0].Reg].Name)
	w.line("scf.for %s = %s to %s step %s {", iv, w.castIndex(w.i64(0)), count, w.castIndex(w.i64(1)))
	w.depth++
	x := w.value("v")
	w.line(`%s = "emitc.cast"(%s) : (index) -> i64`, x, iv)
	w.assign(in.Args[0].Reg, x, "")
	w.loops = append(w.loops, openLoop{counter: in.Args[0].Reg, count: count})
}

// writeEndLoop closes the loop; the counter then holds the trip count, as ours does.
func writeEndLoop(w *writer, _ isa.Instr) {
	if len(w.loops) == 0 {
		w.fail("endloop without a loop")
	}
	l := w.loops[len(w.loops)-1]
	w.loops = w.loops[:len(w.loops)-1]
	w.depth--
	w.line("}")
	x := w.value("v")
	w.line(`%s = "emitc.cast"(%s) : (index) -> i64`, x, l.count)
	w.assign(l.counter, x, "pypto.endloop")
}

// view writes a GM operand: a subview of the param's tensor view (one per param and
// pair of strides, declared at the top) at the view's offset and of its size. A flat
// offset becomes (row, col) offsets: split by the row stride when the columns are
// contiguous and the offset is fixed, else put on the dimension whose stride is 1
// (the subview's address is base + row*rowStride + col*colStride either way). tile is
// the tile on the other side, whose shape bounds a register-given size.
func (w *writer) view(v isa.GMView, tile int) operand {
	p := w.p
	prm := p.Params[v.Param]
	el, _ := elemType(prm.DType)
	tv := w.tensorView(v)
	d := ""
	if v.Param >= 0 && v.Param < len(p.Params) {
		d = w.delta(v.Param)
	}
	fixed := v.OffsetReg == 0 && d == ""
	var row, col string
	switch {
	case fixed && v.ColStride == 1 && v.RowStride > 0:
		row, col = w.index(v.Offset/v.RowStride), w.index(v.Offset%v.RowStride)
	case v.ColStride == 1:
		row, col = w.index(0), w.offsetIndex(v.OffsetReg, v.Offset, d)
	case v.RowStride == 1:
		row, col = w.offsetIndex(v.OffsetReg, v.Offset, d), w.index(0)
	case fixed && v.ColStride > 0 && v.Offset%v.ColStride == 0:
		row, col = w.index(0), w.index(v.Offset/v.ColStride)
	case fixed && v.RowStride > 0 && v.Offset%v.RowStride == 0:
		row, col = w.index(v.Offset/v.RowStride), w.index(0)
	case fixed && v.Offset == 0:
		row, col = w.index(0), w.index(0)
	default:
		return w.view3(v, d)
	}
	rows, cols := w.size(v.RowsReg, v.Rows), w.size(v.ColsReg, v.Cols)
	typ := fmt.Sprintf("!pto.tile_view<%dx%dx%s>", v.Rows, v.Cols, el)
	sv := w.value("sv")
	w.line("%s = pto.subview %s, offsets = [%s, %s], sizes = [%s, %s] : !pto.tensor_view<2x%s> -> %s", sv, tv, row, col, rows, cols, el, typ)
	return operand{sv, typ}
}

// offsetIndex is the index of a window's offset: c, plus register r's value, plus
// the class's delta d of its param (an SSA i64, or "").
func (w *writer) offsetIndex(r isa.RegRef, c int, d string) string {
	if d == "" {
		return w.regIndex(r, c)
	}
	acc := d
	if c != 0 {
		sum := w.value("o")
		w.line(`%s = "emitc.add"(%s, %s) : (i64, i64) -> i64`, sum, acc, w.i64(int64(c)))
		acc = sum
	}
	if i, ok := r.Index(); ok {
		sum := w.value("o")
		w.line(`%s = "emitc.add"(%s, %s) : (i64, i64) -> i64`, sum, acc, w.reg[i])
		acc = sum
	}
	return w.castIndex(acc)
}

// size is a view's row or col count: register r's value, or n.
func (w *writer) size(r isa.RegRef, n int) string {
	if r != 0 {
		return w.regIndex(r, 0)
	}
	return w.index(n)
}

// view3 writes a view that has no unit stride to put its offset on as a subview of a
// rank-3 tensor view of the param with strides (1, rowStride, colStride): offsets
// (offset, 0, 0) and sizes (1, rows, cols) address element offset + r*rowStride +
// c*colStride for any strides.
func (w *writer) view3(v isa.GMView, d string) operand {
	prm := w.p.Params[v.Param]
	el, _ := elemType(prm.DType)
	key := viewKey{v.Param, v.RowStride, v.ColStride}
	tv, ok := w.views3[key]
	if !ok {
		tv = w.fresh("%", fmt.Sprintf("%s_view3", w.param[v.Param][1:]))
		w.views3[key] = tv
		w.viewDefs = append(w.viewDefs, fmt.Sprintf("%s = pto.make_tensor_view %s, shape = [%s, %s, %s] strides = [%s, %s, %s] : !pto.tensor_view<3x%s>",
			tv, w.param[v.Param], w.index(max(prm.Elems, 1)), w.index(max(v.Rows, 1)), w.index(max(v.Cols, 1)), w.index(1), w.index(v.RowStride), w.index(v.ColStride), el))
	}
	off := w.offsetIndex(v.OffsetReg, v.Offset, d)
	rows, cols := w.size(v.RowsReg, v.Rows), w.size(v.ColsReg, v.Cols)
	typ := fmt.Sprintf("!pto.tile_view<%dx%dx%s>", v.Rows, v.Cols, el)
	sv := w.value("sv")
	w.line("%s = pto.subview %s, offsets = [%s, %s, %s], sizes = [%s, %s, %s] : !pto.tensor_view<3x%s> -> %s", sv, tv, off, w.index(0), w.index(0), w.index(1), rows, cols, el, typ)
	return operand{sv, typ}
}

// tensorView is the tensor view of v's param with v's strides, declared at the top.
// Its shape covers the param: rows of the row stride when the columns are
// contiguous, else the param as one row or column.
func (w *writer) tensorView(v isa.GMView) string {
	key := viewKey{v.Param, v.RowStride, v.ColStride}
	if s, ok := w.views[key]; ok {
		return s
	}
	prm := w.p.Params[v.Param]
	el, _ := elemType(prm.DType)
	rows, cols := 1, max(prm.Elems, 1)
	switch {
	case v.ColStride == 1 && v.RowStride > 0:
		cols = v.RowStride
		rows = max((prm.Elems+cols-1)/cols, 1)
	case v.RowStride == 1:
		rows, cols = max(prm.Elems, 1), 1
	}
	name := w.fresh("%", fmt.Sprintf("%s_view", w.param[v.Param][1:]))
	w.views[key] = name
	w.viewDefs = append(w.viewDefs, fmt.Sprintf("%s = pto.make_tensor_view %s, shape = [%s, %s] strides = [%s, %s] : !pto.tensor_view<2x%s>",
		name, w.param[v.Param], w.index(rows), w.index(cols), w.index(v.RowStride), w.index(v.ColStride), el))
	return name
}
