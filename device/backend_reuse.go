package device

import (
	"math"
	"slices"
	"sync"

	"pypto/isa"
)

// Reuse across programs of one shape. The blocks of a task, and often the tasks of
// repeated layers, are the same program but for their GM offsets and names. Two
// programs have the same shape when they agree on everything else and on the GM
// offsets relative to the first view of each param: then they get the same pipes,
// the same allocation (it never looks at GM) and the same flags, because a hazard
// between two views of one param depends only on their relative position (spans of a
// param shifted together overlap as before; distinct params never overlap). The
// machine program of such a program is the first one's with its own GM views, names
// and params put back, which is exactly what Compile would return.

// Compiler compiles programs for one chip, compiling each shape once. It is safe for
// concurrent use. The machine programs of one shape share the operand slices of
// instructions that name no GM view, their high-water marks and, when their names
// agree, their params and allocations: compiled programs are never modified. It keeps
// the programs it compiled to compare later ones with, so they must not change while
// it is in use.
type Compiler struct {
	chip  *Chip
	valid error // the chip's Validate result

	mu     sync.Mutex
	shapes map[uint64][]*shapeEntry // by shapeHash
}

// shapeEntry is one compiled shape: the program it was compiled from and its result.
type shapeEntry struct {
	src   *isa.Program
	base  []int // shapeHash's bases of src
	mp    *MachineProgram
	gmPCs []int // instructions of mp whose source instruction names a GM view
}

// NewCompiler returns a compiler for chip.
func NewCompiler(chip *Chip) *Compiler {
	return &Compiler{chip: chip, valid: chip.Validate(), shapes: map[uint64][]*shapeEntry{}}
}

// Compile returns what the package's Compile returns for p. A program of a shape
// already compiled skips the checks too when the only ones that could fail for it
// pass: its names must be unique (or the same as the first program's) and its GM
// views inside their params (checksRepeat); any other program is checked in full.
func (c *Compiler) Compile(p *isa.Program) (mp *MachineProgram, err error) {
	defer recoverCompile(p, &mp, &err)
	if c.valid != nil {
		return nil, c.valid
	}
	h, base, ok := shapeHash(p)
	if ok {
		c.mu.Lock()
		candidates := c.shapes[h]
		c.mu.Unlock()
		// Newest first: the last entry is likely of p's own task, whose operand lists
		// p shares, which sameShape then need not compare.
		for k := len(candidates) - 1; k >= 0; k-- {
			e := candidates[k]
			same, shared := sameShape(e.src, e.base, p, base)
			if !same || !checksRepeat(e.src, p) {
				continue
			}
			mp := e.rebuild(p)
			if !shared { // p is of another task: its blocks compare faster with p
				c.add(h, &shapeEntry{src: p, base: base, mp: mp, gmPCs: e.gmPCs})
			}
			return mp, nil
		}
	}
	pipes, err := checkAndRoute(c.chip, p)
	if err != nil {
		return nil, err
	}
	if mp, err = build(c.chip, p, pipes); err != nil {
		return nil, err
	}
	e := &shapeEntry{src: p, base: base, mp: mp}
	for pc, in := range mp.Instrs {
		if in.Src >= 0 && namesGM(p.Body[in.Src]) {
			e.gmPCs = append(e.gmPCs, pc)
		}
	}
	c.add(h, e)
	return mp, nil
}

func (c *Compiler) add(h uint64, e *shapeEntry) {
	c.mu.Lock()
	c.shapes[h] = append(c.shapes[h], e)
	c.mu.Unlock()
}

// rebuild is the machine program of p, which has e's shape: e's with p's GM views,
// names and params.
func (e *shapeEntry) rebuild(p *isa.Program) *MachineProgram {
	src := e.mp
	// Same names: the declarations are the same too, and shared like the operands.
	params, regs, tiles := src.Params, src.Regs, src.Tiles
	if !sameNames(e.src, p) {
		params = append([]isa.Param(nil), p.Params...)
		regs = append([]isa.RegDecl(nil), p.Regs...)
		tiles = slices.Clone(src.Tiles)
		for i := range tiles {
			tiles[i].Decl = p.Tiles[i]
		}
	}
	ins := slices.Clone(src.Instrs)
	n := 0
	for _, pc := range e.gmPCs {
		n += len(ins[pc].Args)
	}
	operands := make([]Operand, n) // one backing array for every operand that changes
	for _, pc := range e.gmPCs {
		args := operands[:len(ins[pc].Args):len(ins[pc].Args)]
		operands = operands[len(args):]
		copy(args, ins[pc].Args)
		for i, a := range p.Body[ins[pc].Src].Args {
			if a.Kind == isa.KindGM {
				args[i].GM = a.GM
			}
		}
		ins[pc].Args = args
	}
	return &MachineProgram{
		Name:      p.Name,
		Chip:      src.Chip,
		Core:      p.Core,
		Params:    params,
		Regs:      regs,
		Tiles:     tiles,
		Instrs:    ins,
		HighWater: src.HighWater,
	}
}

func namesGM(in isa.Instr) bool {
	for _, a := range in.Args {
		if a.Kind == isa.KindGM {
			return true
		}
	}
	return false
}

// shapeHash hashes part of what sameShape compares, and returns the offset of the first view
// of each param in program order (0 for a param no instruction views): the origin of
// the relative offsets a shape compares. ok is false when a view names a param the
// program lacks (the checks report it).
func shapeHash(p *isa.Program) (sum uint64, base []int, ok bool) {
	if p == nil {
		return 0, nil, false
	}
	base = make([]int, len(p.Params))
	seen := make([]bool, len(p.Params))
	h := fnv{offset64}
	h.add(int(p.Core), len(p.Params), len(p.Regs), len(p.Tiles), len(p.Body))
	for _, t := range p.Tiles {
		h.add(int(t.Loc), int(t.DType), t.Rows, t.Cols, t.ValidRows, t.ValidCols, int(t.ValidRowsReg), int(t.ValidColsReg), int(t.Layout))
	}
	for _, q := range p.Params {
		h.add(int(q.DType), q.Elems)
	}
	// The body's hash takes the fields that tell programs of one task apart (the rest
	// rarely differ where these agree; sameShape compares everything).
	for _, in := range p.Body {
		h.add(int(in.Op))
		for _, a := range in.Args {
			if a.Kind != isa.KindGM {
				h.add(a.Tile ^ int(math.Float64bits(a.Imm)))
				continue
			}
			v := a.GM
			if v.Param < 0 || v.Param >= len(p.Params) {
				return 0, nil, false
			}
			if !seen[v.Param] {
				base[v.Param], seen[v.Param] = v.Offset, true
			}
			h.add(v.Offset-base[v.Param], v.Rows, v.Cols)
		}
	}
	return h.sum, base, true
}

// sameShape reports whether programs a and b (with shapeHash's bases) differ at most in
// names and absolute GM offsets, and whether they share the operand lists of all
// their instructions that name no GM view (then only those that do were compared).
func sameShape(a *isa.Program, baseA []int, b *isa.Program, baseB []int) (same, shared bool) {
	if a.Core != b.Core || len(a.Params) != len(b.Params) || len(a.Regs) != len(b.Regs) ||
		len(a.Tiles) != len(b.Tiles) || len(a.Body) != len(b.Body) {
		return false, false
	}
	for i, t := range a.Tiles {
		u := b.Tiles[i]
		t.Name, u.Name = "", ""
		if t != u {
			return false, false
		}
	}
	for i, q := range a.Params {
		if q.DType != b.Params[i].DType || q.Elems != b.Params[i].Elems {
			return false, false
		}
	}
	shared = true
	for pc, in := range a.Body {
		other := b.Body[pc]
		if in.Op != other.Op || in.Mode != other.Mode || len(in.Args) != len(other.Args) {
			return false, false
		}
		if len(in.Args) > 0 && &in.Args[0] == &other.Args[0] && !namesGM(in) {
			continue // one list (lower shares the lists of a task's blocks); GM views would need their bases compared
		}
		gm := false
		for i, x := range in.Args {
			y := other.Args[i]
			if math.Float64bits(x.Imm) != math.Float64bits(y.Imm) {
				return false, false
			}
			if x.Kind == isa.KindGM && y.Kind == isa.KindGM {
				x.GM.Offset -= baseA[x.GM.Param]
				y.GM.Offset -= baseB[y.GM.Param]
				gm = true
			}
			x.Imm, y.Imm = 0, 0
			if x != y {
				return false, false
			}
		}
		shared = shared && gm
	}
	return true, shared
}

// checksRepeat reports whether program b, of the same shape as a, which passed the
// checks, passes them too. The checks look at names and GM offsets only in two ways:
// names must be non-empty and distinct (isa.Verify), and a view's offset must be
// non-negative with its last element inside the param. So b passes when its names are
// a's or pass that rule themselves, and every view of b is inside its param. Views
// with a negative stride (never seen from the compiler) make it answer false, and the
// caller runs the checks.
func checksRepeat(a, b *isa.Program) bool {
	return (sameNames(a, b) || namesUnique(b)) && viewsInside(b)
}

func sameNames(a, b *isa.Program) bool {
	for i := range a.Params {
		if a.Params[i].Name != b.Params[i].Name {
			return false
		}
	}
	for i := range a.Regs {
		if a.Regs[i].Name != b.Regs[i].Name {
			return false
		}
	}
	for i := range a.Tiles {
		if a.Tiles[i].Name != b.Tiles[i].Name {
			return false
		}
	}
	return true
}

// namesUnique is isa.Verify's rule: params, registers and tiles share one namespace
// of non-empty names.
func namesUnique(p *isa.Program) bool {
	seen := make(map[string]bool, len(p.Params)+len(p.Regs)+len(p.Tiles))
	add := func(name string) bool {
		if name == "" || seen[name] {
			return false
		}
		seen[name] = true
		return true
	}
	for _, q := range p.Params {
		if !add(q.Name) {
			return false
		}
	}
	for _, r := range p.Regs {
		if !add(r.Name) {
			return false
		}
	}
	for _, t := range p.Tiles {
		if !add(t.Name) {
			return false
		}
	}
	return true
}

// viewsInside reports whether every GM view of p has a non-negative offset and, when
// it is not empty, ends inside its param (computed without overflow).
func viewsInside(p *isa.Program) bool {
	for _, in := range p.Body {
		for _, a := range in.Args {
			if a.Kind != isa.KindGM {
				continue
			}
			v := a.GM
			if v.Offset < 0 || v.RowStride < 0 || v.ColStride < 0 || v.Rows < 0 || v.Cols < 0 {
				return false
			}
			if v.Rows == 0 || v.Cols == 0 {
				continue
			}
			room := p.Params[v.Param].Elems - 1 - v.Offset // the last element may be at most this far on
			r, c := v.Rows-1, v.Cols-1
			if room < 0 || (r > 0 && v.RowStride > room/r) {
				return false
			}
			room -= r * v.RowStride
			if c > 0 && v.ColStride > room/c {
				return false
			}
		}
	}
	return true
}

// fnv is 64-bit FNV-1a over whole ints: a hash for grouping shapes, which sameShape
// then compares exactly.
type fnv struct{ sum uint64 }

const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

func (h *fnv) add(vs ...int) {
	for _, v := range vs {
		h.sum = (h.sum ^ uint64(v)) * prime64
	}
}
