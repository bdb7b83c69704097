package device

import (
	"cmp"
	"container/heap"
	"fmt"
	"iter"

	"pypto/internal/checked"
	"pypto/isa"
)

// Checks RunTask makes before any core starts, so that what they catch is reported
// the same way however the cores are scheduled.

// checkMachine checks a machine program's structure against the chip and returns the
// bytes of each buffer it uses (its own extent, not trusting HighWater).
func checkMachine(chip *Chip, kind isa.CoreKind, m *MachineProgram) (map[isa.Location]int, error) {
	fail := func(pc int, format string, args ...any) error {
		e := &SimError{Core: -1, Block: -1, PC: pc, Msg: fmt.Sprintf("program %q: ", m.Name) + fmt.Sprintf(format, args...)}
		if pc >= 0 {
			e.Instr = m.InstrString(pc)
		}
		return e
	}
	if m.Chip != chip.Name {
		return nil, fail(-1, "compiled for chip %q, run on %q", m.Chip, chip.Name)
	}
	if m.Core != kind {
		return nil, fail(-1, "is a %s program, run as a %s task", m.Core, kind)
	}
	extent := map[isa.Location]int{}
	for pc := range m.Instrs {
		in := &m.Instrs[pc]
		if in.Op == isa.OpInvalid || int(in.Op) >= isa.NumOpcodes() {
			return nil, fail(pc, "invalid opcode %d", in.Op)
		}
		if in.Pipe != isa.PipeS && !HasPipe(kind, in.Pipe) {
			return nil, fail(pc, "pipe %s does not exist on a %s core", in.Pipe, kind)
		}
		info := in.Op.Info()
		if len(in.Args) != len(info.Operands) {
			return nil, fail(pc, "%s takes %d operands, got %d", info.Name, len(info.Operands), len(in.Args))
		}
		for i, a := range in.Args {
			if !info.Operands[i].Accepts(a.Kind) {
				return nil, fail(pc, "operand %d must be a %s, got a %s", i, info.Operands[i], a.Kind)
			}
			switch a.Kind {
			case isa.KindTile:
				if !chip.HasLocation(kind, a.Loc) || !a.DType.Valid() || a.Rows < 1 || a.Cols < 1 {
					return nil, fail(pc, "operand %d is not a valid %s tile", i, kind)
				}
				if a.Addr < 0 || a.Addr%chip.Alignment(a.Loc) != 0 || a.Addr+a.Bytes() > chip.Capacity(a.Loc) {
					return nil, fail(pc, "tile at %s+%#x (%d bytes) is misaligned or outside the %d-byte buffer (alignment %d)",
						a.Loc, a.Addr, a.Bytes(), chip.Capacity(a.Loc), chip.Alignment(a.Loc))
				}
				extent[a.Loc] = max(extent[a.Loc], a.Addr+a.Bytes())
			case isa.KindGM:
				if a.GM.Param < 0 || a.GM.Param >= len(m.Params) {
					return nil, fail(pc, "GM view names param %d; the program has %d", a.GM.Param, len(m.Params))
				}
			}
		}
		if in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG {
			for _, o := range in.Args[:2] {
				if int(o.Pipe) <= 0 || int(o.Pipe) >= numPipes {
					return nil, fail(pc, "flag pipe %d is not a pipe", o.Pipe)
				}
			}
			if id := in.Args[2].Imm; id < 0 || int(id) >= chip.FlagEventIDs || id != float64(int(id)) {
				return nil, fail(pc, "event id %g is not one of the chip's %d ids", id, chip.FlagEventIDs)
			}
		}
	}
	return extent, nil
}

// gmInterval is a GM byte range one block reads or writes, for the cross-block check.
type gmInterval struct {
	lo, hi int
	block  int
	pc     int
	write  bool
}

// blockGM checks a block's params and views against GM and returns the GM ranges the
// block reads and writes (merged per kind).
func blockGM(gm []byte, core, bi int, blk *Block) ([]gmInterval, error) {
	m := blk.Prog
	fail := func(pc int, format string, args ...any) error {
		e := &SimError{Core: core, Block: bi, PC: pc, Msg: fmt.Sprintf(format, args...)}
		if pc >= 0 {
			e.Instr = m.InstrString(pc)
		}
		return e
	}
	if len(blk.ParamAddrs) != len(m.Params) {
		return nil, fail(-1, "program %q has %d params, the block binds %d addresses", m.Name, len(m.Params), len(blk.ParamAddrs))
	}
	type prange struct{ lo, hi int }
	pr := make([]prange, len(m.Params))
	for i, p := range m.Params {
		lo := blk.ParamAddrs[i]
		n, ok1 := p.Bytes()
		hi, ok2 := checked.Add(lo, n)
		if !ok1 || !ok2 || hi > len(gm) {
			return nil, fail(-1, "param %d (%s %s[%d]) at GM bytes [%d, %d) lies outside the %d-byte GM", i, p.Name, p.DType, p.Elems, lo, hi, len(gm))
		}
		pr[i] = prange{lo, hi}
	}
	var ivs []gmInterval
	written := make([]bool, len(m.Params))
	for pc := range m.Instrs {
		in := &m.Instrs[pc]
		for gi, o := range in.Args {
			if o.Kind != isa.KindGM || in.Op == isa.TPREFETCH {
				continue
			}
			if msg := checkView(m.Params, o.GM); msg != "" {
				return nil, fail(pc, "%s", msg)
			}
			write := writesGM(in.Op, gi)
			written[o.GM.Param] = written[o.GM.Param] || write
			if o.GM.OffsetReg != 0 {
				continue // moved at run time: recorded as it runs (blockRun.resolve)
			}
			ivs = appendViewIntervals(ivs, o.GM, o.DType.Size(), blk.ParamAddrs[o.GM.Param], bi, pc, write)
		}
	}
	// Hazards are tracked per param, so two params of one block must not share bytes
	// when either is written.
	for i := range pr {
		for j := i + 1; j < len(pr); j++ {
			if (written[i] || written[j]) && pr[i].lo < pr[j].hi && pr[j].lo < pr[i].hi && pr[i].lo < pr[i].hi && pr[j].lo < pr[j].hi {
				return nil, fail(-1, "params %s and %s overlap in GM and one is written; pass one param instead", m.Params[i].Name, m.Params[j].Name)
			}
		}
	}
	return mergeIntervals(ivs), nil
}

// writesGM reports whether operand gi of an instruction with opcode op is a GM
// window it writes (the stores' destinations; every other GM operand is read).
func writesGM(op isa.Opcode, gi int) bool {
	return gi == 0 && (op == isa.TSTORE || op == isa.TSTORE_FP || op == isa.MSCATTER)
}

// appendViewIntervals appends the GM byte runs of a view to ivs, for the cross-block
// check.
func appendViewIntervals(ivs []gmInterval, v isa.GMView, size, base, bi, pc int, write bool) []gmInterval {
	for lo, hi := range viewRuns(v, size) {
		ivs = append(ivs, gmInterval{lo: base + lo, hi: base + hi, block: bi, pc: pc, write: write})
	}
	return ivs
}

// viewRuns yields the contiguous byte runs [lo, hi) (relative to the param) a view
// touches: a run per row when one axis has unit stride, per element otherwise; rows
// repeated by a zero stride are yielded once.
func viewRuns(v isa.GMView, size int) iter.Seq2[int, int] {
	return func(yield func(lo, hi int) bool) {
		if v.Rows <= 0 || v.Cols <= 0 {
			return
		}
		rows, cols, rs, cs := v.Rows, v.Cols, v.RowStride, v.ColStride
		if abs(rs) == 1 && abs(cs) != 1 { // contiguous columns: walk them as rows
			rows, cols, rs, cs = cols, rows, cs, rs
		}
		if rs == 0 {
			rows = 1
		}
		for r := 0; r < rows; r++ {
			start := v.Offset + r*rs
			switch {
			case cs == 0 || cols == 1:
				if !yield(start*size, (start+1)*size) {
					return
				}
			case abs(cs) == 1:
				lo := min(start, start+(cols-1)*cs)
				if !yield(lo*size, (lo+cols)*size) {
					return
				}
			default:
				for c := 0; c < cols; c++ {
					e := start + c*cs
					if !yield(e*size, (e+1)*size) {
						return
					}
				}
			}
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// mergeIntervals sorts one block's intervals as sortedIntervals orders them and
// merges touching ones of the same kind (the first keeps its place and pc).
func mergeIntervals(ivs []gmInterval) []gmInterval {
	ivs = sortedIntervals([][]gmInterval{ivs})
	out := ivs[:0]
	last := [2]int{-1, -1} // the latest read and write in out
	for _, iv := range ivs {
		k := 0
		if iv.write {
			k = 1
		}
		if j := last[k]; j >= 0 && iv.lo <= out[j].hi {
			out[j].hi = max(out[j].hi, iv.hi)
			continue
		}
		last[k] = len(out)
		out = append(out, iv)
	}
	return out
}

// compareIntervals orders intervals by start, then block and pc (a total order, so
// errors do not depend on the sort algorithm).
func compareIntervals(a, b gmInterval) int {
	switch {
	case a.lo != b.lo:
		return cmp.Compare(a.lo, b.lo)
	case a.block != b.block:
		return cmp.Compare(a.block, b.block)
	case a.pc != b.pc:
		return cmp.Compare(a.pc, b.pc)
	case a.hi != b.hi:
		return cmp.Compare(a.hi, b.hi)
	}
	return boolOrder(a.write, b.write)
}

// boolOrder compares booleans, false first.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// top2 keeps the two intervals reaching furthest right among distinct blocks, so the
// sweep can ask "how far does any other block's interval reach?".
type top2 struct{ a, b gmInterval }

func newTop2() top2 { return top2{a: gmInterval{block: -1, hi: -1}, b: gmInterval{block: -1, hi: -1}} }

func (t *top2) add(x gmInterval) {
	switch {
	case x.block == t.a.block:
		if x.hi > t.a.hi {
			t.a = x
		}
	case x.hi > t.a.hi:
		t.b, t.a = t.a, x
	case x.hi > t.b.hi:
		t.b = x
	}
}

func (t *top2) other(block int) gmInterval {
	if t.a.block != block {
		return t.a
	}
	return t.b
}

// checkCrossBlock rejects a task whose blocks share GM bytes that one of them writes.
// Blocks of a task run in parallel on different cores (or in an order that depends on
// the core count), so such sharing would make results depend on scheduling; the
// compiler hands data between cores through separate tasks instead.
func checkCrossBlock(coreOf func(block int) int, blocks []Block, per [][]gmInterval) error {
	return checkSortedCrossBlock(coreOf, blocks, sortedIntervals(per))
}

// sortedIntervals flattens the blocks' intervals into a new list in compareIntervals'
// order, the order the cross-block sweep takes them. Each list is cut into its
// ascending runs, which are merged through a heap of their heads: the lists come
// sorted (mergeIntervals) or in a few ascending runs (a window's rows, as recorded),
// so this costs little more than a copy.
func sortedIntervals(per [][]gmInterval) []gmInterval {
	var h intervalHeads
	n := 0
	for _, ivs := range per {
		n += len(ivs)
		start := 0
		for i := 1; i <= len(ivs); i++ {
			if i == len(ivs) || compareIntervals(ivs[i-1], ivs[i]) > 0 {
				h = append(h, ivs[start:i])
				start = i
			}
		}
	}
	heap.Init(&h)
	all := make([]gmInterval, 0, n)
	for len(h) > 0 {
		all = append(all, h[0][0])
		if h[0] = h[0][1:]; len(h[0]) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	return all
}

// intervalHeads is a heap of sorted interval lists by their first interval.
type intervalHeads [][]gmInterval

func (h intervalHeads) Len() int           { return len(h) }
func (h intervalHeads) Less(i, j int) bool { return compareIntervals(h[i][0], h[j][0]) < 0 }
func (h intervalHeads) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intervalHeads) Push(x any)        { *h = append(*h, x.([]gmInterval)) }
func (h *intervalHeads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// checkSortedCrossBlock is checkCrossBlock over sortedIntervals' list.
func checkSortedCrossBlock(coreOf func(block int) int, blocks []Block, all []gmInterval) error {
	writes, reads := newTop2(), newTop2()
	for _, x := range all {
		conflict := gmInterval{block: -1}
		if w := writes.other(x.block); w.block >= 0 && w.hi > x.lo {
			conflict = w
		} else if r := reads.other(x.block); x.write && r.block >= 0 && r.hi > x.lo {
			conflict = r
		}
		if conflict.block >= 0 {
			verb := "reads"
			if x.write {
				verb = "writes"
			}
			other := "reads"
			if conflict.write {
				other = "writes"
			}
			return &SimError{Core: coreOf(x.block), Block: x.block, PC: x.pc, Instr: blocks[x.block].Prog.InstrString(x.pc),
				Msg: fmt.Sprintf("%s GM bytes from %d that block %d (pc %d: %s) %s; blocks of one task must not share GM that one of them writes",
					verb, max(x.lo, conflict.lo), conflict.block, conflict.pc, blocks[conflict.block].Prog.InstrString(conflict.pc), other)}
		}
		if x.write {
			writes.add(x)
		} else {
			reads.add(x)
		}
	}
	return nil
}
