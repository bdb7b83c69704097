package device

import (
	"fmt"

	"pypto/internal/checked"
	"pypto/isa"
)

// execCtx is what an exec function of opTable sees besides the core: the block's
// program and GM bindings, the queues it shares with the other cores of its group,
// its scalar unit, and when the instruction runs (start and end, in block cycles).
type execCtx struct {
	m        *MachineProgram
	blk      *Block
	queues   *queueSet
	run      *blockRun
	now, end int64
}

// exec computes the values of one instruction with its opTable entry (flags and
// barriers have none). Every buffer and GM access is bounds-checked by the kernels,
// whatever Compile and RunTask's checks already established, so a hand-edited machine
// program fails cleanly.
func (c *coreSim) exec(x *execCtx, in *Instr) error {
	impl := lookupOp(in.Op)
	if impl == nil {
		return fmt.Errorf("the simulator has no semantics for %s", in.Op)
	}
	if impl.exec == nil {
		return nil
	}
	return impl.exec(c, x, in)
}

// tile returns the bytes of a tile operand in this core's buffer.
func (c *coreSim) tile(o Operand) ([]byte, error) {
	if o.Kind != isa.KindTile || int(o.Loc) >= len(c.bufs) {
		return nil, fmt.Errorf("operand is not a placed tile")
	}
	buf := c.bufs[o.Loc]
	n := o.Bytes()
	if o.Addr < 0 || n < 0 || o.Addr+n > len(buf) {
		return nil, fmt.Errorf("tile bytes [%#x, %#x) lie outside the %s buffer (%d bytes in use, capacity %d)",
			o.Addr, o.Addr+n, o.Loc, len(buf), c.chip.Capacity(o.Loc))
	}
	return buf[o.Addr : o.Addr+n : o.Addr+n], nil
}

// gmBase checks that a view lies inside its param and the param inside GM, and
// returns the GM byte address of the param.
func (c *coreSim) gmBase(x *execCtx, o Operand) (int, error) {
	m, blk := x.m, x.blk
	v := o.GM
	if v.Param < 0 || v.Param >= len(m.Params) || v.Param >= len(blk.ParamAddrs) {
		return 0, fmt.Errorf("GM view names param %d; the block binds %d", v.Param, len(blk.ParamAddrs))
	}
	if msg := checkView(m.Params, v); msg != "" {
		return 0, fmt.Errorf("%s", msg)
	}
	prm := m.Params[v.Param]
	base := blk.ParamAddrs[v.Param]
	n, ok1 := prm.Bytes()
	if end, ok2 := checked.Add(base, n); !ok1 || !ok2 || end > len(c.gm) {
		return 0, fmt.Errorf("param %s at GM byte %d (%s[%d]) lies outside the %d-byte GM", prm.Name, base, prm.DType, prm.Elems, len(c.gm))
	}
	if o.DType != prm.DType {
		return 0, fmt.Errorf("GM operand dtype %s differs from param %s's %s", o.DType, prm.Name, prm.DType)
	}
	return base, nil
}

// grow returns s resized to n, reallocating only when it is too small.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
