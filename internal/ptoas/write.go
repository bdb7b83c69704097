package ptoas

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"pypto/dtype"
	"pypto/isa"
)

// writer builds one task's module. The module holds the tile type aliases; each
// function its hoisted declarations (constants, tensor views, the block index) and,
// when it runs several programs, one `scf.if` arm per program on the block index;
// each program its registers, tiles and body.
type writer struct {
	task Task
	form Form

	names      map[string]bool   // SSA and alias names taken in the module
	aliases    map[string]string // type text -> alias
	aliasOrder []string
	queues     map[int]*Queue
	flags      int

	// The function being written.
	consts      map[string]string // constant key -> SSA name
	constDefs   []string
	views       map[viewKey]string
	views3      map[viewKey]string
	viewDefs    []string
	param       []string       // SSA name of each param's pointer argument
	queueArg    map[int]string // queue id -> SSA name of its buffer argument
	scalarArgs  []Arg
	scalarNames []string
	sldArg      map[[2]int]int // (param, elem) -> index in scalarArgs
	blockIdx    string         // SSA name of the block index (and sub-block index)
	subIdx      string
	leafSel     string // SSA name of the program's index among the function's (i64)
	body        strings.Builder
	depth       int
	tmp         int

	// The program being written.
	p         *isa.Program
	addrs     []int // manual form: each tile's address (-1: unused); nil in the auto form
	pc        int   // the instruction being written
	block     int   // the program's block (group) index
	decls     []string
	reg       []string // SSA name of each register's variable
	tile      []string // SSA name of each tile
	tileType  []string // its type alias
	lateTiles map[int]int
	pads      []int
	loops     []openLoop
	qcount    map[int]string // queue id -> the register counting this program's pushes or pops
	// deltas, for a body several blocks share, is each param's offset from the first
	// block's per member (nil: one block); members the leaves sharing it.
	deltas    map[int][]int64
	members   []int
	deltaVals map[int]string // param -> SSA i64 of its delta, once computed
}

type viewKey struct{ param, rowStride, colStride int }

// WriteTask writes task t as PTO-AS: its auto form, or with t.Addrs its manual form.
func WriteTask(t Task) (m *Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*Error); ok {
				m, err = nil, e
				return
			}
			panic(r)
		}
	}()
	w := &writer{task: t, names: map[string]bool{}, aliases: map[string]string{}, queues: map[int]*Queue{}}
	if t.Addrs != nil {
		w.form = Manual
	}
	if len(t.Programs) == 0 || t.Vectors < 0 || len(t.Programs)%(1+t.Vectors) != 0 {
		return nil, &Error{Kernel: t.Name, Instr: -1, Msg: fmt.Sprintf("%d programs do not make whole blocks of %d", len(t.Programs), 1+t.Vectors)}
	}
	if t.Addrs != nil && len(t.Addrs) != len(t.Programs) {
		return nil, &Error{Kernel: t.Name, Instr: -1, Msg: fmt.Sprintf("%d address lists for %d programs", len(t.Addrs), len(t.Programs))}
	}
	w.findQueues()
	var fns []string
	mod := &Module{Form: w.form}
	if t.Vectors == 0 {
		fn, text := w.function(sanitize(t.Name), t.Programs[0].Core, allIndices(len(t.Programs)), 0)
		mod.Functions, fns = append(mod.Functions, fn), append(fns, text)
	} else {
		n := 1 + t.Vectors
		var cube, vec []int
		for i := range t.Programs {
			if i%n == 0 {
				cube = append(cube, i)
			} else {
				vec = append(vec, i)
			}
		}
		fn, text := w.function(sanitize(t.Name)+"_cube", isa.Cube, cube, 0)
		mod.Functions, fns = append(mod.Functions, fn), append(fns, text)
		fn, text = w.function(sanitize(t.Name)+"_vector", isa.Vector, vec, t.Vectors)
		mod.Functions, fns = append(mod.Functions, fn), append(fns, text)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Kernel %s, %s form: PTO-AS written by PyPTO for ptoas 0.1.1.\n", t.Name, w.form)
	if w.form == Auto {
		b.WriteString("// Tiles are not placed and the program has no flags: assemble with `ptoas --enable-insert-sync`.\n")
	} else {
		b.WriteString("// The device backend's machine program: every flag it scheduled, and each tile's buffer address\n")
		b.WriteString("// (pypto.addr: ptoas 0.1.1 rejects pto.tassign and places the tiles itself). Assemble with `ptoas`.\n")
	}
	if len(t.Programs) > 1+t.Vectors {
		b.WriteString("// Blocks are told apart by the block index (pto.get_block_idx; on vector cores also the sub-block index).\n")
	}
	for _, text := range w.aliasOrder {
		fmt.Fprintf(&b, "%s = %s\n", w.aliases[text], text)
	}
	b.WriteString("module {\n")
	b.WriteString(strings.Join(fns, "\n"))
	b.WriteString("}\n")
	mod.Text = b.String()
	mod.Flags = w.flags
	for _, id := range sortedKeys(w.queues) {
		mod.Queues = append(mod.Queues, *w.queues[id])
	}
	return mod, nil
}

func allIndices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// fail stops the writer with an *Error at the current instruction.
func (w *writer) fail(format string, args ...any) {
	name := w.task.Name
	if w.p != nil {
		name = w.p.Name
	}
	e := &Error{Kernel: name, Instr: w.pc, Msg: fmt.Sprintf(format, args...)}
	if w.p != nil && w.pc >= 0 && w.pc < len(w.p.Body) {
		e.Text = isa.FormatInstr(w.p, w.p.Body[w.pc])
	} else {
		e.Instr = -1
	}
	panic(e)
}

// fresh returns an unused SSA name built from base.
func (w *writer) fresh(prefix, base string) string {
	base = sanitize(base)
	name := prefix + base
	for i := 1; w.names[name]; i++ {
		name = fmt.Sprintf("%s%s_%d", prefix, base, i)
	}
	w.names[name] = true
	return name
}

// sanitize makes s a valid MLIR identifier: letters, digits (not first), '_', '.'
// and '$'.
func sanitize(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '_' || r == '.' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// function writes one function running the programs at indices progs of the task:
// directly when there is one, else in one arm per program on the block index
// (subBlocks > 0: a mixed task's vector programs, subBlocks per block, told apart by
// the sub-block index too).
func (w *writer) function(name string, core isa.CoreKind, progs []int, subBlocks int) (Function, string) {
	t := w.task
	w.consts, w.constDefs = map[string]string{}, nil
	w.views, w.views3, w.viewDefs = map[viewKey]string{}, map[viewKey]string{}, nil
	w.queueArg = map[int]string{}
	w.scalarArgs, w.scalarNames, w.sldArg = nil, nil, map[[2]int]int{}
	w.body.Reset()
	w.depth = 2
	w.blockIdx, w.subIdx, w.leafSel = "", "", ""
	w.p, w.pc = nil, -1

	first := t.Programs[progs[0]]
	w.param = nil
	for _, prm := range first.Params {
		if _, ok := elemType(prm.DType); !ok {
			w.fail("param %s has dtype %s, which the dialect has no pointer type for", prm.Name, prm.DType)
		}
		w.param = append(w.param, w.fresh("%", prm.Name))
	}
	for _, id := range sortedKeys(w.queues) {
		w.queueArg[id] = w.fresh("%", fmt.Sprintf("queue%d", id))
	}
	dispatch := len(progs) > 1
	if dispatch {
		w.blockIdx = w.fresh("%", "block")
		if subBlocks > 0 {
			w.subIdx = w.fresh("%", "subblock")
		}
	}
	var names []string
	for _, i := range progs {
		p := t.Programs[i]
		if !sameParams(p.Params, first.Params) {
			w.p = p
			w.fail("its params differ from those of %s, the task's first program", first.Name)
		}
		names = append(names, strconv.Quote(p.Name))
	}
	if dispatch {
		w.leafSel = w.blockIdx
		if subBlocks > 0 { // leaf k is block k / subBlocks, sub-block k % subBlocks
			prod := w.value("b")
			w.line(`%s = "emitc.mul"(%s, %s) : (i64, i64) -> i64`, prod, w.blockIdx, w.i64(int64(subBlocks)))
			w.leafSel = w.value("leaf")
			w.line(`%s = "emitc.add"(%s, %s) : (i64, i64) -> i64`, w.leafSel, prod, w.subIdx)
		}
	}
	// Blocks whose programs differ only in their GM offsets, each param's by one amount
	// per block, share one body: the offsets are the first's plus that amount, computed
	// from the block index.
	classes := blockClasses(t, progs)
	var leaves []string
	for _, c := range classes {
		i := progs[c.members[0]]
		var addrs []int
		if t.Addrs != nil {
			addrs = t.Addrs[i]
		}
		block := c.members[0]
		if subBlocks > 0 {
			block /= subBlocks
		}
		w.deltas = c.deltas
		w.members = c.members
		leaves = append(leaves, w.program(t.Programs[i], addrs, block))
		w.deltas, w.members = nil, nil
	}
	switch {
	case len(classes) == 1:
		w.body.WriteString(indent(leaves[0], 2))
	default:
		sel := w.leafSel
		if len(classes) < len(progs) { // the class of each leaf
			cls := make([]int64, len(progs))
			for k, c := range classes {
				for _, m := range c.members {
					cls[m] = int64(k)
				}
			}
			sel = w.perLeaf(allIndices(len(progs)), cls, "class")
		}
		w.tree(sel, leaves, 0, len(leaves), 2)
	}
	w.p, w.pc = nil, -1

	fn := Function{Name: name, Core: core}
	var args []string
	for i, prm := range first.Params {
		el, _ := elemType(prm.DType)
		attrs := fmt.Sprintf("pypto.elems = %d : i64", prm.Elems)
		if prm.DType == dtype.Bool {
			attrs += `, pypto.dtype = "bool"`
		}
		if w.param[i] != "%"+prm.Name {
			attrs += ", pypto.name = " + strconv.Quote(prm.Name)
		}
		args = append(args, fmt.Sprintf("%s: !pto.ptr<%s> {%s}", w.param[i], el, attrs))
		fn.Args = append(fn.Args, Arg{Name: prm.Name, Param: i, Queue: -1})
	}
	for _, id := range sortedKeys(w.queues) {
		q := w.queues[id]
		args = append(args, fmt.Sprintf("%s: !pto.ptr<%s> {pypto.elems = %d : i64, pypto.queue = %d : i64}", w.queueArg[id], q.DType, q.Elems, id))
		fn.Args = append(fn.Args, Arg{Name: w.queueArg[id][1:], Param: -1, Queue: id})
	}
	for i, a := range w.scalarArgs {
		args = append(args, fmt.Sprintf("%s: index {pypto.sld = %s}", w.scalarNames[i], strconv.Quote(fmt.Sprintf("%s[%d]", first.Params[a.Source].Name, a.Elem))))
		fn.Args = append(fn.Args, a)
	}
	var b strings.Builder
	fattrs := fmt.Sprintf(`pypto.core = %q, pypto.form = %q, pypto.blocks = %d : i64`, core.String(), w.form.String(), t.Blocks())
	if subBlocks > 0 {
		fattrs += fmt.Sprintf(", pypto.subblocks = %d : i64", subBlocks)
	}
	fattrs += ", pypto.names = [" + strings.Join(names, ", ") + "]"
	fmt.Fprintf(&b, "  func.func @%s(%s) attributes {%s} {\n", name, strings.Join(args, ", "), fattrs)
	for _, d := range w.constDefs {
		fmt.Fprintf(&b, "    %s\n", d)
	}
	for _, d := range w.viewDefs {
		fmt.Fprintf(&b, "    %s\n", d)
	}
	if w.blockIdx != "" {
		fmt.Fprintf(&b, "    %s = \"pto.get_block_idx\"() : () -> i64\n", w.blockIdx)
	}
	if w.subIdx != "" {
		fmt.Fprintf(&b, "    %s = \"pto.get_subblock_idx\"() : () -> i64\n", w.subIdx)
	}
	b.WriteString(w.body.String())
	b.WriteString("    return\n  }\n")
	return fn, b.String()
}

func sameParams(a, b []isa.Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// program writes one program (block block of the task) and returns its text, indented
// from depth 0: its declarations (registers, queue counters, tiles), then its body.
func (w *writer) program(p *isa.Program, addrs []int, block int) string {
	w.p, w.addrs, w.block, w.pc = p, addrs, block, -1
	w.decls, w.loops = nil, nil
	w.lateTiles, w.qcount, w.deltaVals = map[int]int{}, map[int]string{}, map[int]string{}
	saved := w.body.String()
	w.body.Reset()
	w.depth = 0
	w.declare()
	for q := range p.Params { // computed first, so that every use in the body sees them
		w.delta(q)
	}
	for pc, in := range p.Body {
		w.pc = pc
		w.declareLateTiles(pc)
		w.instr(in)
	}
	w.pc = -1
	w.finishQueues()
	code := w.body.String()
	w.body.Reset()
	w.body.WriteString(saved)
	w.depth = 2
	var b strings.Builder
	for _, d := range w.decls {
		b.WriteString(d + "\n")
	}
	b.WriteString(code)
	return b.String()
}

// tree writes leaves[lo:hi] as a binary tree of `scf.if sel < mid` (ptoas 0.1.1's
// flag insertion fails on consecutive scf.if ops; nested ones in else branches pass).
func (w *writer) tree(sel string, leaves []string, lo, hi, depth int) {
	if hi-lo == 1 {
		w.body.WriteString(indent(leaves[lo], depth))
		return
	}
	mid := (lo + hi) / 2
	c := w.value("lt")
	pad := strings.Repeat("  ", depth)
	fmt.Fprintf(&w.body, "%s%s = \"emitc.cmp\"(%s, %s) <{predicate = 2 : i64}> : (i64, i64) -> i1\n", pad, c, sel, w.i64(int64(mid)))
	fmt.Fprintf(&w.body, "%sscf.if %s {\n", pad, c)
	w.tree(sel, leaves, lo, mid, depth+1)
	fmt.Fprintf(&w.body, "%s} else {\n", pad)
	w.tree(sel, leaves, mid, hi, depth+1)
	fmt.Fprintf(&w.body, "%s}\n", pad)
}

// indent puts depth levels of indentation before every line of text.
func indent(text string, depth int) string {
	pad := strings.Repeat("  ", depth)
	var b strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if l != "" {
			b.WriteString(pad + l)
		}
	}
	return b.String()
}

// declare names the program's registers and tiles and works out what the body needs
// before it is written: each tile's pad value, where tiles whose valid sizes come
// from registers are declared, and the scalar arguments SLDs become.
func (w *writer) declare() {
	p := w.p
	w.reg = nil
	for _, r := range p.Regs {
		name := w.fresh("%r_", r.Name)
		w.reg = append(w.reg, name)
		attr := ""
		if name != "%r_"+r.Name {
			attr = " {pypto.name = " + strconv.Quote(r.Name) + "}"
		}
		w.decls = append(w.decls, fmt.Sprintf("%s = \"emitc.variable\"() <{value = 0 : i64}>%s : () -> i64", name, attr))
	}
	w.pads = make([]int, len(p.Tiles))
	for _, in := range p.Body {
		if in.Op == isa.TLOAD && partialWindow(p, in.Args[0].Tile, in.Args[1].GM) ||
			in.Op == isa.TFILLPAD && in.Args[2].Imm == 0 && !math.Signbit(in.Args[2].Imm) {
			w.pads[in.Args[0].Tile] = padZero
		}
	}
	w.tile = make([]string, len(p.Tiles))
	w.tileType = make([]string, len(p.Tiles))
	for i, t := range p.Tiles {
		if t.Loc == isa.LocInvalid || int(t.Loc) >= isa.NumLocations {
			w.fail("tile %s has no valid location", t.Name)
		}
		w.tile[i] = w.fresh("%", t.Name)
		typed := valueValid(t)
		text, err := tileType(typed, w.pads[i])
		if err != nil {
			w.fail("%v", err)
		}
		w.tileType[i] = w.alias(text, aliasName(typed, w.pads[i]))
	}
	w.placeLateTiles()
	for pc, in := range p.Body {
		if in.Op != isa.SLD {
			continue
		}
		w.pc = pc
		v := in.Args[1].GM
		if v.OffsetReg != 0 {
			w.fail("the integer it reads is at an offset a register gives; a scalar argument of the kernel needs a fixed place")
		}
		key := [2]int{v.Param, v.Offset}
		if _, ok := w.sldArg[key]; !ok {
			w.sldArg[key] = len(w.scalarArgs)
			name := fmt.Sprintf("%s_%d", p.Params[v.Param].Name, v.Offset)
			w.scalarArgs = append(w.scalarArgs, Arg{Name: name, Param: -1, Queue: -1, Source: v.Param, Elem: v.Offset})
			w.scalarNames = append(w.scalarNames, w.fresh("%", name))
		}
	}
	w.pc = -1
	w.declareQueueCounters()
	for i := range p.Tiles {
		if _, late := w.lateTiles[i]; !late {
			w.decls = append(w.decls, w.allocLine(i))
		}
	}
}

// partialWindow reports whether a load of view v into tile t covers less than the
// tile (the rest is zero-filled).
func partialWindow(p *isa.Program, t int, v isa.GMView) bool {
	d := p.Tiles[t]
	return v.RowsReg != 0 || v.ColsReg != 0 || v.Rows < d.Rows || v.Cols < d.Cols
}

// alias names a type text at module level (one alias per distinct text).
func (w *writer) alias(text, name string) string {
	if a, ok := w.aliases[text]; ok {
		return a
	}
	a := name
	for i := 1; w.names[a]; i++ {
		a = fmt.Sprintf("%s_%d", name, i)
	}
	w.names[a] = true
	w.aliases[text] = a
	w.aliasOrder = append(w.aliasOrder, text)
	return a
}

// line writes one line of the body at the current depth.
func (w *writer) line(format string, args ...any) {
	w.body.WriteString(strings.Repeat("  ", w.depth))
	fmt.Fprintf(&w.body, format, args...)
	w.body.WriteByte('\n')
}

// value returns a new SSA name for a result.
func (w *writer) value(base string) string {
	w.tmp++
	return w.fresh("%", fmt.Sprintf("%s%d", base, w.tmp))
}

// hoist declares a function-level value once per key.
func (w *writer) hoist(key, prefix, base string, def func(name string) string) string {
	if s, ok := w.consts[key]; ok {
		return s
	}
	name := w.fresh(prefix, base)
	w.consts[key] = name
	w.constDefs = append(w.constDefs, def(name))
	return name
}

// index is a hoisted index constant.
func (w *writer) index(n int) string {
	return w.hoist(fmt.Sprintf("index:%d", n), "%c", strings.ReplaceAll(strconv.Itoa(n), "-", "m"), func(name string) string {
		return fmt.Sprintf("%s = arith.constant %d : index", name, n)
	})
}

// i64 is a hoisted 64-bit integer constant (the type of our registers).
func (w *writer) i64(n int64) string {
	return w.hoist(fmt.Sprintf("i64:%d", n), "%k", strings.ReplaceAll(strconv.FormatInt(n, 10), "-", "m"), func(name string) string {
		return fmt.Sprintf(`%s = "emitc.constant"() <{value = %d : i64}> : () -> i64`, name, n)
	})
}

// scalarImm is a hoisted constant of a tile's element type holding immediate x. When
// the type cannot hold x exactly (a float immediate rounded to the tile's dtype), the
// immediate as written is kept in pypto.imm, for the reader: the hardware computes
// with the rounded one, as our instructions do (isa.ScalarOperand).
func (w *writer) scalarImm(x float64, d dtype.DType) string {
	return w.scalarConst(x, x, d)
}

// scalarConst is scalarImm of immediate x whose value as used is v (x rounded to
// the dtype of the tile the op works on, which d holds).
func (w *writer) scalarConst(x, v float64, d dtype.DType) string {
	el, _ := elemType(d)
	rounded := dtype.Round(d, v)
	lit := floatLiteral(rounded, d)
	extra := ""
	if math.Float64bits(rounded) != math.Float64bits(x) && !(math.IsNaN(x) && math.IsNaN(rounded)) {
		extra = fmt.Sprintf(" {pypto.imm = %s : f64}", floatLiteral(x, dtype.Invalid))
	}
	return w.hoist(fmt.Sprintf("%s:%s%s", el, lit, extra), "%s", el, func(name string) string {
		return fmt.Sprintf(`%s = "arith.constant"() <{value = %s : %s}>%s : () -> %s`, name, lit, el, extra, el)
	})
}

// floatLiteral spells a value of dtype d (Invalid: float64) for an MLIR attribute:
// integers as integers, finite floats as the shortest decimal that reads back to the
// same value, the others as the hexadecimal bits MLIR reads for float attributes.
func floatLiteral(x float64, d dtype.DType) string {
	if d.IsInt() || d == dtype.Bool {
		return strconv.FormatInt(int64(x), 10)
	}
	if math.IsInf(x, 0) || math.IsNaN(x) {
		switch d {
		case dtype.Float32:
			return fmt.Sprintf("0x%08X", math.Float32bits(float32(x)))
		case dtype.Float16:
			return fmt.Sprintf("0x%04X", dtype.Float64ToFloat16(x))
		case dtype.BFloat16:
			return fmt.Sprintf("0x%04X", dtype.Float64ToBFloat16(x))
		}
		return fmt.Sprintf("0x%016X", math.Float64bits(x))
	}
	bits := 64
	if d == dtype.Float32 || d == dtype.Float16 || d == dtype.BFloat16 {
		bits = 32
	}
	// MLIR's float literals need a '.' in the mantissa.
	s := strconv.FormatFloat(x, 'e', -1, bits)
	if m, e, ok := strings.Cut(s, "e"); ok && !strings.Contains(m, ".") {
		s = m + ".0e" + e
	}
	return s
}

// regValue is the i64 value of a scalar operand: a register's variable or a constant.
func (w *writer) regValue(a isa.Operand) string {
	switch a.Kind {
	case isa.KindReg:
		return w.reg[a.Reg]
	case isa.KindImm:
		return w.i64(int64(a.Imm))
	}
	w.fail("operand is a %s, not a register or an integer", a.Kind)
	return ""
}

// regIndex is an index value of register r plus c (r == 0: the constant c), computed
// at the current point of the body.
func (w *writer) regIndex(r isa.RegRef, c int) string {
	i, ok := r.Index()
	if !ok {
		return w.index(c)
	}
	v := w.reg[i]
	if c != 0 {
		sum := w.value("o")
		w.line(`%s = "emitc.add"(%s, %s) : (i64, i64) -> i64`, sum, v, w.i64(int64(c)))
		v = sum
	}
	return w.castIndex(v)
}

// castIndex writes the index value of i64 value v at the current point.
func (w *writer) castIndex(v string) string {
	x := w.value("x")
	w.line(`%s = "emitc.cast"(%s) : (i64) -> index`, x, v)
	return x
}

// allocLine declares tile i: its type, and in the manual form its address.
func (w *writer) allocLine(i int) string {
	t := w.p.Tiles[i]
	var attrs []string
	if w.addrs != nil && w.addrs[i] >= 0 {
		attrs = append(attrs, fmt.Sprintf("pypto.addr = %d : i64", w.addrs[i]))
	}
	if t.DType == dtype.Bool {
		attrs = append(attrs, `pypto.dtype = "bool"`)
	}
	if w.tile[i] != "%"+t.Name {
		attrs = append(attrs, "pypto.name = "+strconv.Quote(t.Name))
	}
	attr := ""
	if len(attrs) > 0 {
		attr = " {" + strings.Join(attrs, ", ") + "}"
	}
	v := w.validOperands(t)
	return fmt.Sprintf("%s = pto.alloc_tile%s%s : %s", w.tile[i], v, attr, w.tileType[i])
}

// validOperands are the valid sizes of tile t given as values on its pto.alloc_tile
// (" valid_row = %x valid_col = %y", or ""): a register's, or a fixed size smaller
// than the tile (valueValid).
func (w *writer) validOperands(t isa.TileDecl) string {
	v := ""
	for _, d := range []struct {
		key     string
		n, full int
		reg     isa.RegRef
	}{{"valid_row", t.ValidRows, t.Rows, t.ValidRowsReg}, {"valid_col", t.ValidCols, t.Cols, t.ValidColsReg}} {
		if r, ok := d.reg.Index(); ok {
			v += " " + d.key + " = " + w.castIndex(w.reg[r])
		} else if partial(d.n, d.full) {
			v += " " + d.key + " = " + w.index(d.n)
		}
	}
	return v
}

// partial reports whether a fixed valid size n (0: all) is smaller than the tile's full.
func partial(n, full int) bool { return n != 0 && n != full }

// valueValid is t's declaration as written: a fixed valid size smaller than the tile
// is given as a value (`?` in the type, an index constant on pto.alloc_tile), because
// ptoas 0.1.1 drops a fixed v_row or v_col from the type (its C++ tile is then all
// valid, and an op on it computes outside our valid region) but keeps a value.
func valueValid(t isa.TileDecl) isa.TileDecl {
	if t.ValidRowsReg == 0 && partial(t.ValidRows, t.Rows) {
		t.ValidRowsReg = isa.RegRef(1) // any register: the type says '?'
	}
	if t.ValidColsReg == 0 && partial(t.ValidCols, t.Cols) {
		t.ValidColsReg = isa.RegRef(1)
	}
	return t
}

// placeLateTiles finds where each tile whose valid sizes come from registers is
// declared. The dialect fixes a tile's valid size when the tile is allocated, so the
// tile is allocated where its valid registers hold the values of all its uses: in the
// innermost loop around all of them (or the program), before the first use (or
// before the loop around it inside that one). The registers must not change from
// there to the tile's last use; inside a loop, every iteration then allocates the tile
// anew, so its first use there must write it (the data is not carried to the next
// iteration).
func (w *writer) placeLateTiles() {
	p := w.p
	chains := loopChains(p.Body)
	for i, t := range p.Tiles {
		if t.ValidRowsReg == 0 && t.ValidColsReg == 0 {
			continue
		}
		var uses []int
		for pc, in := range p.Body {
			if tileUses(in, i) > 0 {
				uses = append(uses, pc)
			}
		}
		if len(uses) == 0 {
			continue
		}
		common := chains[uses[0]]
		for _, pc := range uses[1:] {
			n := 0
			for n < len(common) && n < len(chains[pc]) && common[n] == chains[pc][n] {
				n++
			}
			common = common[:n]
		}
		first, last := uses[0], uses[len(uses)-1]
		at := first
		if c := chains[first]; len(c) > len(common) {
			at = c[len(common)]
		}
		if len(common) > 0 {
			in := p.Body[first]
			if in.Args[0].Kind != isa.KindTile || in.Args[0].Tile != i || tileUses(in, i) > 1 {
				w.pc = first
				w.fail("tile %s's valid size comes from registers set inside a loop, and its first use in the loop reads it; the dialect fixes a tile's valid size when it is allocated, so the tile is allocated in each iteration and cannot carry data to the next", t.Name)
			}
		}
		for pc := at; pc <= last; pc++ {
			for _, r := range []isa.RegRef{t.ValidRowsReg, t.ValidColsReg} {
				if ri, ok := r.Index(); ok && writesReg(p.Body[pc], ri) {
					w.pc = pc
					w.fail("it changes register %%%s, which gives the valid size of tile %s, while the tile is in use; the dialect fixes a tile's valid size when the tile is allocated", p.Regs[ri].Name, t.Name)
				}
			}
		}
		w.lateTiles[i] = at
	}
}

// declareLateTiles declares the tiles whose place is before instruction pc.
func (w *writer) declareLateTiles(pc int) {
	var due []int
	for t, at := range w.lateTiles {
		if at == pc {
			due = append(due, t)
		}
	}
	sort.Ints(due)
	for _, t := range due {
		w.line("%s", w.allocLine(t))
	}
}

// loopChains gives each instruction the pcs of the LOOPs around it, outermost first
// (a LOOP and its ENDLOOP belong to the loop around them, not to their own).
func loopChains(body []isa.Instr) [][]int {
	out := make([][]int, len(body))
	var open []int
	for pc, in := range body {
		if in.Op == isa.ENDLOOP && len(open) > 0 {
			open = open[:len(open)-1]
		}
		out[pc] = append([]int(nil), open...)
		if in.Op == isa.LOOP {
			open = append(open, pc)
		}
	}
	return out
}

// tileUses is how many operands of in are tile t.
func tileUses(in isa.Instr, t int) int {
	n := 0
	for _, a := range in.Args {
		if a.Kind == isa.KindTile && a.Tile == t {
			n++
		}
	}
	return n
}

// writesReg reports whether in writes register r (scalar arithmetic, SLD, a loop's
// counter).
func writesReg(in isa.Instr, r int) bool {
	if in.Op.Info().Class != isa.ClassScalar || in.Op == isa.ENDLOOP || len(in.Args) == 0 {
		return false
	}
	return in.Args[0].Kind == isa.KindReg && in.Args[0].Reg == r
}
