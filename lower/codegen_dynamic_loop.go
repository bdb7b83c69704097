package lower

import "pypto/isa"

// groupedLoop emits a loop over count items (count a register), item j's work emitted
// by body(s, j) with j a register and s the item's position j mod group; body is
// called only for the positions want accepts (nil: all). With group > 1 the loop
// body is group consecutive items, so that work alternating by item (the load slots
// of a row kernel) keeps its place in the code, and the loop runs ceil(count/group)
// times: the items of the last group past count run too, and body must make them do
// nothing (windows of no rows).
//
// The backend brackets a loop whose trip count is a register with barriers (it may
// run no time, device/backend_loops.go), so a tail of the last count mod group items
// under loops of their own would stop the pipes twice per item; the items past count
// cost their compute on an empty tile instead.
func groupedLoop(e *emitter, reg func(name string) int, count, group int, want func(s int) bool, body func(s int, j isa.RegRef)) {
	ri, imm := isa.RegOp, func(v int) isa.Operand { return isa.ImmOp(float64(v)) }
	if want == nil {
		want = func(int) bool { return true }
	}
	if group == 1 {
		if !want(0) {
			return
		}
		j := reg("j")
		e.emit(isa.LOOP, ri(j), ri(count))
		body(0, isa.UseReg(j))
		e.emit(isa.ENDLOOP)
		return
	}
	groups, g, j := reg("groups"), reg("g"), reg("item")
	e.emit(isa.SADD, ri(groups), ri(count), imm(group-1))
	e.emit(isa.SDIV, ri(groups), ri(groups), imm(group))
	e.emit(isa.LOOP, ri(g), ri(groups))
	for s := range group {
		if want(s) {
			e.emit(isa.SMUL, ri(j), ri(g), imm(group))
			e.emit(isa.SADD, ri(j), ri(j), imm(s))
			body(s, isa.UseReg(j))
		}
	}
	e.emit(isa.ENDLOOP)
}
