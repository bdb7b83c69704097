package ptoas

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"pypto/dtype"
	"pypto/isa"
)

// The builder specialises one function for one block: it walks the ops in order,
// folding what is known once the block index is (constants, the block and sub-block
// index, arithmetic on them, scf.if on them), and writes the rest as a PTO program:
// emitc variables become registers, emitc arithmetic assigned to them scalar
// instructions, scf.for a counted loop, the pto ops their instructions. Values that
// feed only views, sizes and valid sizes fold into them (a register plus a constant
// is a view's offset) rather than becoming instructions.

// vkind is what an SSA value is.
type vkind uint8

const (
	vConst vkind = iota // an integer (also i1) or a float constant
	vReg                // register reg (at version ver) plus add
	vExpr               // an integer operation not yet written as an instruction
	vCmp                // a comparison (i1) not known until run time
	vCond               // a selection not known until run time
	vSld                // the integer an SLD reads (a scalar argument)
	vPtr                // a GM pointer: a param
	vQueue              // a queue's GM buffer
	vView               // a tensor view
	vSub                // a subview (a GM window)
	vTile               // a tile
	vVar                // an emitc variable: a register
	vBlockIdx
)

type val struct {
	kind  vkind
	i     int64
	f     float64
	float bool
	reg   int
	ver   int
	op    string // vExpr: add sub mul div rem; vCmp: lt le gt ge eq ne
	a, b  *val
	c     *val // vCond: the condition (a vCmp)
	param int
	gm    *gmView
	tile  int
	def   int // sequence number of the defining op
	typ   string
}

type gmView struct {
	param   int // param index, or -1 - queue index for a queue's buffer
	strides []int
	offsets []*val
	sizes   []*val
	bounds  []int // the tile_view type's static sizes (rank 2)
	el      string
}

type builder struct {
	file      string
	fn        *mop
	args      *fnArgs
	block     int
	sub       int
	blocks    int
	subBlocks int

	prog   *isa.Program
	pos    []Pos
	addrs  []int
	placed bool
	manual bool

	vals    map[string]*val
	version []int
	seq     int
	uses    map[string][]useSite
	loopSeq []int // sequence numbers of the scf.for ops around the current op
	group   bool  // inside the parts of a pypto.instr group
	names   map[string]bool
	readers map[int][]string // register -> the values that read it
	tileDT  []string         // each tile's element type as the text declares it (bool tiles: i8)
	tilePad []int
}

type useSite struct {
	seq   int
	loops []int // sequence numbers of the scf.for ops around the use
}

func (b *builder) errorf(pos Pos, format string, args ...any) error {
	return &ReadError{File: b.file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// readFail is a build error in flight (the walk panics with it and build recovers).
type readFail struct{ err error }

func (b *builder) fail(pos Pos, format string, args ...any) {
	panic(readFail{b.errorf(pos, format, args...)})
}

// build writes the program of the builder's block.
func (b *builder) build(name string, core isa.CoreKind) (p *isa.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(readFail); ok {
				p, err = nil, f.err
				return
			}
			panic(r)
		}
	}()
	b.prog = &isa.Program{Name: name, Core: core, Params: append([]isa.Param(nil), b.args.params...)}
	b.vals = map[string]*val{}
	b.names = map[string]bool{}
	for _, prm := range b.prog.Params {
		b.names[prm.Name] = true
	}
	b.uses = map[string][]useSite{}
	b.readers = map[int][]string{}
	b.collectUses(b.fn.regions[0], nil)
	b.seq = 0
	f := b.fn
	for i, a := range f.args {
		switch b.args.kinds[i] {
		case argParam:
			b.vals[a.name] = &val{kind: vPtr, param: b.args.index[i], typ: a.typ}
		case argQueue:
			b.vals[a.name] = &val{kind: vQueue, param: b.args.index[i], typ: a.typ}
		case argScalar:
			if src, ok := b.args.sld[i]; ok {
				b.vals[a.name] = &val{kind: vSld, param: src[0], i: int64(src[1]), typ: a.typ}
				continue
			}
			// A caller's integer: read it from its param at the start.
			k := 0
			for j := range i {
				if b.args.kinds[j] == argScalar {
					if _, sld := b.args.sld[j]; !sld {
						k++
					}
				}
			}
			prm := len(b.args.params) - len(b.args.scalars) + k
			r := b.newReg(strings.TrimPrefix(a.name, "%"))
			b.emit(a.pos, isa.Instr{Op: isa.SLD, Args: []isa.Operand{isa.RegOp(r), isa.GMOp(isa.GMView{Param: prm, Rows: 1, Cols: 1, RowStride: 1, ColStride: 1})}})
			b.vals[a.name] = &val{kind: vReg, reg: r, ver: b.version[r], typ: a.typ}
		}
	}
	b.ops(f.regions[0])
	if b.group {
		b.fail(f.pos, "the last op group (pypto.instr) of %s is not closed", f.symbol)
	}
	if err := isa.Verify(b.prog, nil); err != nil {
		if ve, ok := err.(*isa.VerifyError); ok && ve.Index >= 0 && ve.Index < len(b.pos) {
			return nil, b.errorf(b.pos[ve.Index], "%s", ve.Msg)
		}
		return nil, b.errorf(f.pos, "%v", err)
	}
	return b.prog, nil
}

// collectUses numbers the ops in text order and records where each value is used.
func (b *builder) collectUses(ops []*mop, loops []int) {
	for _, o := range ops {
		b.seq++
		site := useSite{seq: b.seq, loops: loops}
		for _, v := range o.operands {
			b.uses[v] = append(b.uses[v], site)
		}
		for _, v := range o.namedOps {
			b.uses[v] = append(b.uses[v], site)
		}
		for _, l := range o.lists {
			for _, v := range l {
				b.uses[v] = append(b.uses[v], site)
			}
		}
		inner := loops
		if o.name == "scf.for" {
			inner = append(append([]int(nil), loops...), b.seq)
		}
		for _, r := range o.regions {
			b.collectUses(r, inner)
		}
	}
}

// emit appends an instruction written from the op at pos.
func (b *builder) emit(pos Pos, in isa.Instr) {
	b.prog.Body = append(b.prog.Body, in)
	b.pos = append(b.pos, pos)
}

// newReg declares a register named after base.
func (b *builder) newReg(base string) int {
	name := b.freshName(base)
	b.prog.Regs = append(b.prog.Regs, isa.RegDecl{Name: name})
	b.version = append(b.version, 0)
	return len(b.prog.Regs) - 1
}

func (b *builder) freshName(base string) string {
	if base == "" {
		base = "t"
	}
	name := base
	for i := 1; b.names[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	b.names[name] = true
	return name
}

func (b *builder) get(pos Pos, name string) *val {
	v, ok := b.vals[name]
	if !ok {
		b.fail(pos, "use of undefined value %s", name)
	}
	return v
}

// ops walks a region.
func (b *builder) ops(ops []*mop) {
	for i := 0; i < len(ops); i++ {
		o := ops[i]
		b.seq++
		if b.group {
			if _, part := o.attrs["pypto.part"]; part {
				continue
			}
			if !pure(o) {
				b.group = false
			}
		}
		if _, ok := o.attrs["pypto.queue"]; ok {
			if o.name == "emitc.variable" && len(o.results) == 1 {
				b.vals[o.results[0]] = &val{kind: vConst} // a queue's slot counter: not ours
			}
			continue
		}
		if _, ok := o.attrs["pypto.endloop"]; ok {
			continue
		}
		if _, ok := o.attrs["pypto.temp"]; ok && o.name == "pto.alloc_tile" {
			for _, r := range o.results {
				b.vals[r] = &val{kind: vTile, tile: -1}
			}
			continue
		}
		if text, ok := strAttr(o.attrs, "pypto.instr"); ok {
			b.instrText(o, text)
			b.group = true
			continue
		}
		b.op(o)
	}
}

// pure reports whether o only computes a value (a constant, arithmetic, a view, a
// scratch tile): such ops may sit between the parts of a group.
func pure(o *mop) bool {
	if _, temp := o.attrs["pypto.temp"]; temp {
		return true
	}
	switch o.name {
	case "emitc.assign", "emitc.variable":
		return false
	case "pto.subview", "pto.make_tensor_view", "pto.get_block_idx", "pto.get_subblock_idx", "pto.get_block_num", "pto.get_subblock_num":
		return true
	}
	return strings.HasPrefix(o.name, "emitc.") || strings.HasPrefix(o.name, "arith.")
}

// instrText writes the instruction an op group stands for (its first op's
// pypto.instr, in our text form).
func (b *builder) instrText(o *mop, text string) {
	in, err := isa.ParseInstr(b.prog, text)
	if err != nil {
		b.fail(o.pos, "pypto.instr %q: %v", text, err)
	}
	b.emit(o.pos, in)
	if i, ok := in.Args[0].Reg, in.Args[0].Kind == isa.KindReg; ok && writesReg(in, i) {
		b.assigned(o.pos, i)
	}
}

// op interprets one op.
func (b *builder) op(o *mop) {
	switch {
	case o.name == "arith.constant":
		b.constant(o)
	case o.name == "emitc.constant":
		b.constant(o)
	case o.name == "emitc.variable":
		b.variable(o)
	case o.name == "emitc.assign":
		b.assign(o)
	case o.name == "emitc.cast" || o.name == "arith.index_cast" || o.name == "arith.index_castui":
		b.cast(o)
	case isArith(o.name):
		b.arith(o)
	case o.name == "pto.get_block_idx":
		b.define(o, &val{kind: vConst, i: int64(b.block)})
	case o.name == "pto.get_subblock_idx":
		b.define(o, &val{kind: vConst, i: int64(b.sub)})
	case o.name == "pto.get_block_num":
		b.define(o, &val{kind: vConst, i: int64(b.blocks)})
	case o.name == "pto.get_subblock_num":
		b.define(o, &val{kind: vConst, i: int64(b.subBlocks)})
	case o.name == "pto.make_tensor_view":
		b.tensorView(o)
	case o.name == "pto.subview":
		b.subview(o)
	case o.name == "pto.alloc_tile":
		b.allocTile(o)
	case o.name == "pto.tassign":
		b.tassign(o)
	case o.name == "pto.set_flag" || o.name == "pto.wait_flag":
		b.flag(o)
	case o.name == "pto.barrier":
		b.barrier(o)
	case o.name == "pto.sync.set" || o.name == "pto.sync.wait":
		b.fail(o.pos, "%s outside a queue hand-off: the simulator has no cross-core events of its own; a mixed task hands tiles over through TPUSH/TPOP queues (their PTO-AS form is the ops PyPTO writes for them, marked pypto.instr)", o.name)
	case o.name == "scf.for":
		b.loop(o)
	case o.name == "scf.if":
		b.ifOp(o)
	case o.name == "scf.yield" || o.name == "return" || o.name == "func.return":
	case strings.HasPrefix(o.name, "pto."):
		b.ptoOp(o)
	default:
		b.fail(o.pos, "unknown op %s (PTO-AS kernels use the pto, arith, scf, emitc and func dialects)", o.name)
	}
}

func (b *builder) define(o *mop, v *val) {
	if len(o.results) != 1 {
		b.fail(o.pos, "%s has %d results, want 1", o.name, len(o.results))
	}
	v.def = b.seq
	if v.typ == "" && len(o.resTypes) == 1 {
		v.typ = o.resTypes[0]
	}
	b.vals[o.results[0]] = v
	b.noteReaders(o.results[0], v)
}

// noteReaders records that value name reads the registers v reads (saveReaders looks
// only at those when a register changes).
func (b *builder) noteReaders(name string, v *val) {
	if v == nil {
		return
	}
	switch v.kind {
	case vReg:
		if b.readers == nil {
			b.readers = map[int][]string{}
		}
		b.readers[v.reg] = append(b.readers[v.reg], name)
	case vExpr, vCmp, vCond:
		b.noteReaders(name, v.a)
		b.noteReaders(name, v.b)
		b.noteReaders(name, v.c)
	}
}

func (b *builder) constant(o *mop) {
	a, ok := o.props["value"]
	if !ok {
		a, ok = o.attrs["value"]
	}
	if !ok || (a.kind != aNumber && a.kind != aBool) {
		b.fail(o.pos, "%s without a numeric value", o.name)
	}
	v := &val{kind: vConst, i: a.i, f: a.f, float: !a.isInt}
	if v.float {
		// The constant holds the literal rounded to its type; pypto.imm keeps the
		// exact immediate the type could not hold.
		if dt, ok := elemDType(a.typ); ok {
			v.f = dtype.Round(dt, v.f)
		}
		if exact, ok := o.attrs["pypto.imm"]; ok && exact.kind == aNumber {
			v.f = exact.f
		}
	} else {
		v.f = float64(a.i)
	}
	b.define(o, v)
}

func (b *builder) variable(o *mop) {
	name := strings.TrimPrefix(strings.TrimPrefix(o.results[0], "%"), "r_")
	if s, ok := strAttr(o.attrs, "pypto.name"); ok {
		name = s
	}
	r := b.newReg(name)
	if a, ok := o.props["value"]; ok && a.kind == aNumber && a.i != 0 {
		b.emit(o.pos, isa.Instr{Op: isa.SMOV, Args: []isa.Operand{isa.RegOp(r), isa.ImmOp(float64(a.i))}})
	}
	b.define(o, &val{kind: vVar, reg: r})
}

// cast: the value itself (our registers are 64-bit; casts only change the C++ type).
func (b *builder) cast(o *mop) {
	if len(o.operands) != 1 {
		b.fail(o.pos, "%s takes one operand", o.name)
	}
	v := b.scalarOf(o.pos, o.operands[0])
	cp := *v
	cp.typ = ""
	b.define(o, &cp)
}

// scalarOf is the integer value of an SSA name: a variable reads its register now.
func (b *builder) scalarOf(pos Pos, name string) *val {
	v := b.get(pos, name)
	switch v.kind {
	case vVar:
		return &val{kind: vReg, reg: v.reg, ver: b.version[v.reg]}
	case vConst, vReg, vExpr, vCmp, vCond, vSld:
		return v
	}
	b.fail(pos, "%s is not an integer", name)
	return nil
}

func isArith(name string) bool {
	switch name {
	case "emitc.add", "emitc.sub", "emitc.mul", "emitc.div", "emitc.rem", "emitc.cmp", "emitc.conditional",
		"emitc.logical_and", "emitc.logical_or", "emitc.logical_not",
		"arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.remsi", "arith.minsi", "arith.maxsi",
		"arith.floordivsi", "arith.ceildivsi", "arith.divui", "arith.remui", "arith.cmpi", "arith.select",
		"arith.andi", "arith.ori", "arith.xori":
		return true
	}
	return false
}

var cmpPredicateNames = map[int64]string{0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge"}
var arithPredicates = map[string]string{"eq": "eq", "ne": "ne", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge", "ult": "lt", "ule": "le", "ugt": "gt", "uge": "ge"}

// arith folds integer arithmetic on known values and keeps the rest as expressions,
// written as instructions where a register or a size needs them.
func (b *builder) arith(o *mop) {
	var in []*val
	for _, n := range o.operands {
		in = append(in, b.scalarOf(o.pos, n))
	}
	need := func(n int) {
		if len(in) != n {
			b.fail(o.pos, "%s takes %d operands, has %d", o.name, n, len(in))
		}
	}
	op := strings.TrimPrefix(strings.TrimPrefix(o.name, "emitc."), "arith.")
	switch op {
	case "addi":
		op = "add"
	case "subi":
		op = "sub"
	case "muli":
		op = "mul"
	case "divsi", "divui":
		op = "div"
	case "remsi", "remui":
		op = "rem"
	case "minsi":
		op = "min"
	case "maxsi":
		op = "max"
	}
	switch op {
	case "cmp", "cmpi":
		need(2)
		pred := ""
		if o.name == "emitc.cmp" {
			n, _ := intAttr(o.props, "predicate")
			pred = cmpPredicateNames[n]
		} else if a, ok := o.props["predicate"]; ok {
			pred = arithPredicates[a.s]
		}
		if pred == "" {
			b.fail(o.pos, "%s with an unknown predicate", o.name)
		}
		b.define(o, b.fold(&val{kind: vCmp, op: pred, a: in[0], b: in[1]}))
	case "conditional", "select":
		need(3)
		b.define(o, b.fold(&val{kind: vCond, c: in[0], a: in[1], b: in[2]}))
	case "logical_and", "logical_or", "andi", "ori", "xori":
		need(2)
		if in[0].kind != vConst || in[1].kind != vConst {
			b.fail(o.pos, "%s of values known only at run time: our programs have no branches (fold it on constants and the block index)", o.name)
		}
		x, y := in[0].i, in[1].i
		r := map[string]int64{"logical_and": b2i(x != 0 && y != 0), "logical_or": b2i(x != 0 || y != 0), "andi": x & y, "ori": x | y, "xori": x ^ y}[op]
		b.define(o, &val{kind: vConst, i: r})
	case "logical_not":
		need(1)
		if in[0].kind != vConst {
			b.fail(o.pos, "%s of a value known only at run time", o.name)
		}
		b.define(o, &val{kind: vConst, i: b2i(in[0].i == 0)})
	case "add", "sub", "mul", "div", "rem", "min", "max", "floordivsi", "ceildivsi":
		need(2)
		if op == "floordivsi" || op == "ceildivsi" {
			if in[0].kind != vConst || in[1].kind != vConst {
				b.fail(o.pos, "%s of values known only at run time: use emitc.div (truncating)", o.name)
			}
		}
		b.define(o, b.fold(&val{kind: vExpr, op: op, a: in[0], b: in[1]}))
	default:
		b.fail(o.pos, "unsupported integer op %s", o.name)
	}
}

func b2i(x bool) int64 {
	if x {
		return 1
	}
	return 0
}

// fold computes v when its operands are known, and keeps register plus constant
// forms as such.
func (b *builder) fold(v *val) *val {
	x, y := v.a, v.b
	switch v.kind {
	case vCmp:
		if x.kind == vConst && y.kind == vConst {
			r := map[string]bool{"eq": x.i == y.i, "ne": x.i != y.i, "lt": x.i < y.i, "le": x.i <= y.i, "gt": x.i > y.i, "ge": x.i >= y.i}[v.op]
			return &val{kind: vConst, i: b2i(r)}
		}
	case vCond:
		if v.c.kind == vConst {
			if v.c.i != 0 {
				return x
			}
			return y
		}
	case vExpr:
		if x.kind == vConst && y.kind == vConst {
			i, j := x.i, y.i
			var r int64
			switch v.op {
			case "add":
				r = i + j
			case "sub":
				r = i - j
			case "mul":
				r = i * j
			case "div", "rem":
				if j == 0 {
					return v // a division by zero fails when the program runs
				}
				if v.op == "div" {
					r = i / j
				} else {
					r = i % j
				}
			case "min":
				r = min(i, j)
			case "max":
				r = max(i, j)
			case "floordivsi":
				if j == 0 {
					return v
				}
				r = int64(math.Floor(float64(i) / float64(j)))
			case "ceildivsi":
				if j == 0 {
					return v
				}
				r = int64(math.Ceil(float64(i) / float64(j)))
			}
			return &val{kind: vConst, i: r}
		}
		// Keep sums and products of a value and constants in the form value*k + c,
		// so that a view's constant part folds into its offset.
		isConst := func(v *val, c int64) bool { return v.kind == vConst && v.i == c }
		if (v.op == "add" || v.op == "mul") && x.kind == vConst { // constant second
			x, y = y, x
		}
		switch {
		case v.op == "sub" && y.kind == vConst:
			return b.fold(&val{kind: vExpr, op: "add", a: x, b: &val{kind: vConst, i: -y.i}})
		case v.op == "add" && isConst(y, 0), (v.op == "mul" || v.op == "div") && isConst(y, 1):
			return x
		case v.op == "mul" && isConst(y, 0):
			return &val{kind: vConst}
		case v.op == "add" && x.kind == vReg && y.kind == vConst:
			return &val{kind: vReg, reg: x.reg, ver: x.ver, i: x.i + y.i}
		case v.op == "add" && y.kind == vConst && x.kind == vExpr && x.op == "add" && x.b.kind == vConst:
			return b.fold(&val{kind: vExpr, op: "add", a: x.a, b: &val{kind: vConst, i: x.b.i + y.i}})
		case v.op == "mul" && y.kind == vConst && x.kind == vExpr && x.op == "mul" && x.b.kind == vConst:
			return b.fold(&val{kind: vExpr, op: "mul", a: x.a, b: &val{kind: vConst, i: x.b.i * y.i}})
		case v.op == "mul" && y.kind == vConst && x.kind == vExpr && x.op == "add" && x.b.kind == vConst:
			return b.fold(&val{kind: vExpr, op: "add", a: b.fold(&val{kind: vExpr, op: "mul", a: x.a, b: y}), b: &val{kind: vConst, i: x.b.i * y.i}})
		case v.op == "mul" && y.kind == vConst && x.kind == vReg && x.i != 0:
			r := &val{kind: vReg, reg: x.reg, ver: x.ver}
			return b.fold(&val{kind: vExpr, op: "add", a: &val{kind: vExpr, op: "mul", a: r, b: y}, b: &val{kind: vConst, i: x.i * y.i}})
		}
		if v.op == "add" || v.op == "mul" {
			return &val{kind: vExpr, op: v.op, a: x, b: y}
		}
	}
	return v
}

// operand writes v as a scalar operand: a constant, or a register (instructions
// computing it first when it is an expression).
func (b *builder) operand(pos Pos, v *val) isa.Operand {
	switch v.kind {
	case vConst:
		return isa.ImmOp(float64(v.i))
	case vReg:
		b.current(pos, v)
		if v.i == 0 {
			return isa.RegOp(v.reg)
		}
	}
	r := b.newReg("t")
	b.into(pos, r, v)
	return isa.RegOp(r)
}

// current checks that a register value still holds what it read.
func (b *builder) current(pos Pos, v *val) {
	if v.ver != b.version[v.reg] {
		b.fail(pos, "a value read from register %%%s before the register changed is used after it; in PyPTO's programs a read register is used where it is read", b.prog.Regs[v.reg].Name)
	}
}

// into writes instructions that leave v in register r.
func (b *builder) into(pos Pos, r int, v *val) {
	regOp := isa.RegOp(r)
	switch v.kind {
	case vConst:
		b.emit(pos, isa.Instr{Op: isa.SMOV, Args: []isa.Operand{regOp, isa.ImmOp(float64(v.i))}})
	case vReg:
		b.current(pos, v)
		if v.i == 0 {
			b.emit(pos, isa.Instr{Op: isa.SMOV, Args: []isa.Operand{regOp, isa.RegOp(v.reg)}})
		} else {
			b.emit(pos, isa.Instr{Op: isa.SADD, Args: []isa.Operand{regOp, isa.RegOp(v.reg), isa.ImmOp(float64(v.i))}})
		}
	case vSld:
		b.emit(pos, isa.Instr{Op: isa.SLD, Args: []isa.Operand{regOp, isa.GMOp(isa.GMView{Param: v.param, Offset: int(v.i), Rows: 1, Cols: 1, RowStride: 1, ColStride: 1})}})
	case vExpr:
		ops := map[string]isa.Opcode{"add": isa.SADD, "sub": isa.SSUB, "mul": isa.SMUL, "div": isa.SDIV, "rem": isa.SREM, "min": isa.SMIN, "max": isa.SMAX}
		code, ok := ops[v.op]
		if !ok {
			b.fail(pos, "%s of values known only at run time cannot be a register", v.op)
		}
		x, y := b.operand(pos, v.a), b.operand(pos, v.b)
		b.emit(pos, isa.Instr{Op: code, Args: []isa.Operand{regOp, x, y}})
	case vCond:
		// min / max: conditional(a < b, a, b) and the like.
		c := v.c
		if c.kind == vCmp && sameVal(c.a, v.a) && sameVal(c.b, v.b) && (c.op == "lt" || c.op == "le" || c.op == "gt" || c.op == "ge") {
			code := isa.SMIN
			if c.op == "gt" || c.op == "ge" {
				code = isa.SMAX
			}
			x, y := b.operand(pos, v.a), b.operand(pos, v.b)
			b.emit(pos, isa.Instr{Op: code, Args: []isa.Operand{regOp, x, y}})
			return
		}
		b.fail(pos, "a selection known only at run time that is not a min or max: our programs have no branches")
	default:
		b.fail(pos, "this value cannot be held in a register")
	}
}

func sameVal(x, y *val) bool {
	if x == y {
		return true
	}
	if x.kind != y.kind {
		return false
	}
	switch x.kind {
	case vConst:
		return x.i == y.i
	case vReg:
		return x.reg == y.reg && x.ver == y.ver && x.i == y.i
	}
	return false
}

// assign writes emitc.assign(var, value).
func (b *builder) assign(o *mop) {
	if len(o.operands) != 2 {
		b.fail(o.pos, "emitc.assign takes a variable and a value")
	}
	dst := b.get(o.pos, o.operands[0])
	if dst.kind != vVar {
		b.fail(o.pos, "emitc.assign to %s, which is not an emitc.variable", o.operands[0])
	}
	v := b.scalarOf(o.pos, o.operands[1])
	b.saveReaders(o.pos, dst.reg)
	b.into(o.pos, dst.reg, v)
	b.assigned(o.pos, dst.reg)
}

// assigned records that register r changed.
func (b *builder) assigned(pos Pos, r int) {
	b.saveReaders(pos, r)
	b.version[r]++
}

// saveReaders keeps, before register r changes, the values that read it and are
// still to be used (later in the text, or again in a later iteration of a loop around
// both the change and the use but not the read): each is copied into a register now.
func (b *builder) saveReaders(pos Pos, r int) {
	names := b.readers[r]
	b.readers[r] = nil
	done := map[string]bool{}
	for _, name := range names {
		v := b.vals[name]
		if done[name] || !readsReg(v, r, b.version[r]) || !b.usedLater(name, v.def) {
			continue
		}
		done[name] = true
		t := b.newReg("saved")
		b.into(pos, t, v)
		saved := &val{kind: vReg, reg: t, ver: b.version[t], def: v.def, typ: v.typ}
		b.vals[name] = saved
		b.noteReaders(name, saved)
	}
}

func readsReg(v *val, r, ver int) bool {
	if v == nil {
		return false
	}
	switch v.kind {
	case vReg:
		return v.reg == r && v.ver == ver
	case vExpr, vCmp, vCond:
		return readsReg(v.a, r, ver) || readsReg(v.b, r, ver) || readsReg(v.c, r, ver)
	}
	return false
}

func (b *builder) usedLater(name string, def int) bool {
	for _, u := range b.uses[name] {
		if u.seq > b.seq {
			return true
		}
		for _, l := range u.loops {
			if l > def && containsInt(b.loopSeq, l) {
				return true
			}
		}
	}
	return false
}

func containsInt(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// loop writes scf.for as a counted loop: from 0 by 1 directly (the counter is the
// register PyPTO's text assigns the induction variable to first, or a new one), else
// over the trip count with the induction variable computed from the counter.
func (b *builder) loop(o *mop) {
	if len(o.operands) != 3 {
		b.fail(o.pos, "scf.for needs a lower bound, an upper bound and a step")
	}
	lb, ub, step := b.scalarOf(o.pos, o.operands[0]), b.scalarOf(o.pos, o.operands[1]), b.scalarOf(o.pos, o.operands[2])
	body := o.regions[0]
	simple := lb.kind == vConst && lb.i == 0 && step.kind == vConst && step.i == 1
	var count *val
	if simple {
		count = ub
	} else {
		if step.kind != vConst || step.i <= 0 {
			b.fail(o.pos, "scf.for with a step that is not a positive constant")
		}
		// count = (ub - lb + step - 1) / step
		diff := b.fold(&val{kind: vExpr, op: "sub", a: ub, b: lb})
		num := b.fold(&val{kind: vExpr, op: "add", a: diff, b: &val{kind: vConst, i: step.i - 1}})
		count = b.fold(&val{kind: vExpr, op: "div", a: num, b: step})
	}
	counter := -1
	skip := 0
	if simple && len(body) >= 2 && body[0].name == "emitc.cast" && len(body[0].operands) == 1 && body[0].operands[0] == o.iv &&
		body[1].name == "emitc.assign" && len(body[1].operands) == 2 && body[1].operands[1] == body[0].results[0] {
		if v, ok := b.vals[body[1].operands[0]]; ok && v.kind == vVar {
			counter, skip = v.reg, 2
		}
	}
	if counter < 0 {
		counter = b.newReg(strings.TrimPrefix(o.iv, "%"))
	}
	cnt := b.operand(o.pos, count)
	b.saveReaders(o.pos, counter)
	b.emit(o.pos, isa.Instr{Op: isa.LOOP, Args: []isa.Operand{isa.RegOp(counter), cnt}})
	b.version[counter]++
	b.loopSeq = append(b.loopSeq, b.seq)
	if simple {
		b.vals[o.iv] = &val{kind: vReg, reg: counter, ver: b.version[counter]}
	} else { // iv = lb + counter*step
		iv := b.newReg(strings.TrimPrefix(o.iv, "%") + "_iv")
		prod := b.fold(&val{kind: vExpr, op: "mul", a: &val{kind: vReg, reg: counter, ver: b.version[counter]}, b: step})
		b.into(o.pos, iv, b.fold(&val{kind: vExpr, op: "add", a: lb, b: prod}))
		b.version[iv]++
		b.vals[o.iv] = &val{kind: vReg, reg: iv, ver: b.version[iv]}
	}
	b.seq += skip
	b.ops(body[skip:])
	b.loopSeq = b.loopSeq[:len(b.loopSeq)-1]
	b.emit(o.pos, isa.Instr{Op: isa.ENDLOOP})
	b.version[counter]++
}

// ifOp takes the branch a condition known for this block selects (the block
// dispatch PyPTO writes, or a program's own tests of the block index).
func (b *builder) ifOp(o *mop) {
	c := b.scalarOf(o.pos, o.operands[0])
	if c.kind != vConst {
		b.fail(o.pos, "scf.if on a value known only at run time: our programs have no branches; test only constants and the block index")
	}
	seqs := b.seq
	if c.i != 0 {
		b.ops(o.regions[0])
	}
	b.seq = seqs + countOps(o.regions[0])
	if len(o.regions) > 1 {
		if c.i == 0 {
			b.ops(o.regions[1])
		}
		b.seq = seqs + countOps(o.regions[0]) + countOps(o.regions[1])
	}
}

func countOps(ops []*mop) int {
	n := 0
	for _, o := range ops {
		n++
		for _, r := range o.regions {
			n += countOps(r)
		}
	}
	return n
}

func parseInt(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil
}

var _ = dtype.Invalid
