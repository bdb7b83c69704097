package ptoas

import (
	"fmt"
	"strconv"
	"strings"

	"pypto/dtype"
	"pypto/isa"
)

// Function is one kernel function read from PTO-AS: a PTO program per block (and
// sub-block), with where each instruction came from.
type ReadFunction struct {
	Name      string
	Core      isa.CoreKind
	Form      Form
	Blocks    int // blocks the function runs (pypto.blocks, else 1)
	SubBlocks int // vector programs per block of a mixed task's vector function (0: none)
	Programs  []*isa.Program
	// Addrs gives each program's tile addresses (pypto.addr or pto.tassign); nil when
	// no tile is placed: then the device backend places the tiles and inserts flags.
	Addrs [][]int
	// Pos[i][pc] is where instruction pc of program i came from.
	Pos  [][]Pos
	Args []Arg
	// Scalars are the function's index arguments without pypto.sld: each became a
	// param of one i32 (named after the argument, after the pointer params) that the
	// programs read with SLD at their start.
	Scalars []string
	Queues  []Queue
	File    string
	At      Pos
}

// Read parses PTO-AS text (file names it in errors) and builds each function's
// programs for the blocks its pypto.blocks attribute gives (blocks > 0 overrides it).
func Read(file, src string, blocks int) ([]*ReadFunction, error) {
	funcs, err := parseModule(file, src)
	if err != nil {
		return nil, err
	}
	var out []*ReadFunction
	for _, f := range funcs {
		rf, err := buildFunction(file, f, blocks)
		if err != nil {
			return nil, err
		}
		out = append(out, rf)
	}
	return out, nil
}

func intAttr(m map[string]attr, key string) (int64, bool) {
	a, ok := m[key]
	if !ok || a.kind != aNumber || !a.isInt {
		return 0, false
	}
	return a.i, true
}

func strAttr(m map[string]attr, key string) (string, bool) {
	a, ok := m[key]
	if !ok || a.kind != aString {
		return "", false
	}
	return a.s, true
}

// maxBuildOps bounds the ops read for all the programs of one function (each block
// walks the function's ops once).
const maxBuildOps = 1 << 21

// buildFunction reads function f's arguments and builds a program per block.
func buildFunction(file string, f *mop, blocks int) (*ReadFunction, error) {
	rf := &ReadFunction{Name: f.symbol, File: file, At: f.pos, Blocks: 1}
	fail := func(pos Pos, format string, args ...any) error {
		return &ReadError{File: file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	if n, ok := intAttr(f.attrs, "pypto.blocks"); ok {
		if n < 1 || n > 1<<16 {
			return nil, fail(f.pos, "pypto.blocks = %d: a kernel runs 1 to 65536 blocks", n)
		}
		rf.Blocks = int(n)
	}
	if blocks > 0 {
		rf.Blocks = blocks
	}
	if n, ok := intAttr(f.attrs, "pypto.subblocks"); ok {
		if n < 1 || n > 2 {
			return nil, fail(f.pos, "pypto.subblocks = %d: an AI core has 1 or 2 vector cores", n)
		}
		rf.SubBlocks = int(n)
	}
	rf.Core = isa.Vector
	if c, ok := strAttr(f.attrs, "pypto.core"); ok {
		switch c {
		case "cube":
			rf.Core = isa.Cube
		case "vector":
		default:
			return nil, fail(f.pos, "pypto.core = %q: want \"cube\" or \"vector\"", c)
		}
	} else if usesCube(f.regions[0]) {
		rf.Core = isa.Cube
	}
	var names []string
	if a, ok := f.attrs["pypto.names"]; ok && a.kind == aArray {
		for _, e := range a.list {
			names = append(names, e.s)
		}
	}
	args, err := readArgs(file, f)
	if err != nil {
		return nil, err
	}
	rf.Args, rf.Scalars, rf.Queues = args.args, args.scalars, args.queues
	n := rf.Blocks * max(rf.SubBlocks, 1)
	if ops := countOps(f.regions[0]); ops*n > maxBuildOps {
		return nil, fail(f.pos, "%s: %d ops for each of %d programs is more than this reader builds (%d ops in all)", f.symbol, ops, n, maxBuildOps)
	}
	var placements [][]int
	placed := false
	for k := range n {
		b := &builder{file: file, fn: f, args: args, block: k, sub: 0, blocks: rf.Blocks, subBlocks: max(rf.SubBlocks, 1)}
		if rf.SubBlocks > 0 {
			b.block, b.sub = k/rf.SubBlocks, k%rf.SubBlocks
		}
		name := fmt.Sprintf("%s_b%d", f.symbol, k)
		if k < len(names) {
			name = names[k]
		}
		p, err := b.build(name, rf.Core)
		if err != nil {
			return nil, err
		}
		rf.Programs = append(rf.Programs, p)
		rf.Pos = append(rf.Pos, b.pos)
		addrs := append(b.addrs, make([]int, len(p.Tiles)-len(b.addrs))...)
		for i := len(b.addrs); i < len(addrs); i++ {
			addrs[i] = -1
		}
		placements = append(placements, addrs)
		placed = placed || b.placed
		if b.manual {
			rf.Form = Manual
		}
	}
	if placed { // a program whose tiles are all unused places none
		rf.Addrs = placements
	}
	return rf, nil
}

// usesCube reports whether the ops use a cube buffer (a kernel without pypto.core).
func usesCube(ops []*mop) bool {
	for _, o := range ops {
		for _, t := range append(append([]string(nil), o.types...), o.resTypes...) {
			for _, loc := range []string{"loc=mat", "loc=left", "loc=right", "loc=acc", "loc=bias"} {
				if strings.Contains(t, loc) {
					return true
				}
			}
		}
		for _, r := range o.regions {
			if usesCube(r) {
				return true
			}
		}
	}
	return false
}

// fnArgs is what a function's arguments are.
type fnArgs struct {
	args    []Arg
	params  []isa.Param
	kinds   []argKind // per function argument
	index   []int     // per function argument: param, queue or scalar index
	scalars []string
	queues  []Queue
	sld     map[int][2]int // argument -> (param, element) of its SLD
}

type argKind uint8

const (
	argParam argKind = iota
	argQueue
	argScalar
)

// readArgs reads the function's arguments: GM pointers are params (or, with
// pypto.queue, a queue's buffer); index arguments are integers the programs read,
// from GM (pypto.sld) or passed by the caller.
func readArgs(file string, f *mop) (*fnArgs, error) {
	fa := &fnArgs{sld: map[int][2]int{}}
	fail := func(pos Pos, format string, args ...any) error {
		return &ReadError{File: file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	byName := map[string]int{}
	var sldArgs []int
	for i, a := range f.args {
		name := a.name[1:]
		if s, ok := strAttr(a.attrs, "pypto.name"); ok {
			name = s
		}
		switch {
		case strings.HasPrefix(a.typ, "!pto.ptr<"):
			el := strings.TrimSuffix(strings.TrimPrefix(a.typ, "!pto.ptr<"), ">")
			dt, ok := elemDType(el)
			if !ok {
				return nil, fail(a.pos, "argument %s: pointer to %s, which has no PyPTO dtype (f32, f16, bf16, i8, i32)", a.name, el)
			}
			if s, ok := strAttr(a.attrs, "pypto.dtype"); ok && s == "bool" {
				dt = dtype.Bool
			}
			elems, ok := intAttr(a.attrs, "pypto.elems")
			if !ok {
				return nil, fail(a.pos, "argument %s: its element count is not given; add {pypto.elems = N : i64}", a.name)
			}
			if elems < 0 || elems > 1<<40 {
				return nil, fail(a.pos, "argument %s: pypto.elems = %d is not a tensor size", a.name, elems)
			}
			if q, ok := intAttr(a.attrs, "pypto.queue"); ok {
				fa.kinds, fa.index = append(fa.kinds, argQueue), append(fa.index, len(fa.queues))
				fa.queues = append(fa.queues, Queue{ID: int(q), DType: el, Elems: int(elems)})
				fa.args = append(fa.args, Arg{Name: name, Param: -1, Queue: int(q)})
				continue
			}
			byName[name] = len(fa.params)
			fa.kinds, fa.index = append(fa.kinds, argParam), append(fa.index, len(fa.params))
			fa.args = append(fa.args, Arg{Name: name, Param: len(fa.params), Queue: -1})
			fa.params = append(fa.params, isa.Param{Name: name, DType: dt, Elems: int(elems)})
		case a.typ == "index" || a.typ == "i32" || a.typ == "i64":
			fa.kinds, fa.index = append(fa.kinds, argScalar), append(fa.index, i)
			if _, ok := strAttr(a.attrs, "pypto.sld"); ok {
				sldArgs = append(sldArgs, i)
				fa.args = append(fa.args, Arg{Name: name, Param: -1, Queue: -1})
				continue
			}
			fa.scalars = append(fa.scalars, name)
			fa.args = append(fa.args, Arg{Name: name, Param: -1, Queue: -1})
		default:
			return nil, fail(a.pos, "argument %s has type %s; a kernel takes !pto.ptr<...> and index arguments", a.name, a.typ)
		}
	}
	for _, i := range sldArgs {
		a := f.args[i]
		s, _ := strAttr(a.attrs, "pypto.sld")
		name, elem, ok := strings.Cut(strings.TrimSuffix(s, "]"), "[")
		e, err := strconv.Atoi(elem)
		prm, known := byName[name]
		if !ok || err != nil || !known || e < 0 || e >= fa.params[prm].Elems {
			return nil, fail(a.pos, "argument %s: pypto.sld = %q does not name an element of a pointer argument (param[element])", a.name, s)
		}
		fa.sld[i] = [2]int{prm, e}
		fa.args[i].Source, fa.args[i].Elem = prm, e
	}
	for _, name := range fa.scalars { // hand-written scalars: a param of one i32 each
		fa.params = append(fa.params, isa.Param{Name: name, DType: dtype.Int32, Elems: 1})
	}
	return fa, nil
}

func elemDType(el string) (dtype.DType, bool) {
	switch el {
	case "f32":
		return dtype.Float32, true
	case "f16":
		return dtype.Float16, true
	case "bf16":
		return dtype.BFloat16, true
	case "i8":
		return dtype.Int8, true
	case "i32":
		return dtype.Int32, true
	}
	return dtype.Invalid, false
}
