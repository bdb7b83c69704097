package device

import (
	"maps"
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
// instructions that name no GM view: compiled programs are never modified. It keeps
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
	base  []int // gmBases of src
	pipes []isa.Pipe
	mp    *MachineProgram
	gmPCs []int // instructions of mp whose source instruction names a GM view
}

// NewCompiler returns a compiler for chip.
func NewCompiler(chip *Chip) *Compiler {
	return &Compiler{chip: chip, valid: chip.Validate(), shapes: map[uint64][]*shapeEntry{}}
}

// Compile returns what the package's Compile returns for p. Every program is checked
// on its own, so errors are the same too.
func (c *Compiler) Compile(p *isa.Program) (mp *MachineProgram, err error) {
	defer recoverCompile(p, &mp, &err)
	if c.valid != nil {
		return nil, c.valid
	}
	pipes, err := checkAndRoute(c.chip, p)
	if err != nil {
		return nil, err
	}
	base := gmBases(p)
	h := shapeHash(p, base, pipes)
	c.mu.Lock()
	candidates := c.shapes[h]
	c.mu.Unlock()
	for _, e := range candidates {
		if sameShape(e.src, e.base, p, base) && slices.Equal(e.pipes, pipes) {
			return e.rebuild(p), nil
		}
	}
	if mp, err = build(c.chip, p, pipes); err != nil {
		return nil, err
	}
	e := &shapeEntry{src: p, base: base, pipes: pipes, mp: mp}
	for pc, in := range mp.Instrs {
		if in.Src >= 0 && namesGM(p.Body[in.Src]) {
			e.gmPCs = append(e.gmPCs, pc)
		}
	}
	c.mu.Lock()
	c.shapes[h] = append(c.shapes[h], e)
	c.mu.Unlock()
	return mp, nil
}

// rebuild is the machine program of p, which has e's shape: e's with p's GM views,
// names and params.
func (e *shapeEntry) rebuild(p *isa.Program) *MachineProgram {
	src := e.mp
	tiles := slices.Clone(src.Tiles)
	for i := range tiles {
		tiles[i].Decl = p.Tiles[i]
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
		Params:    append([]isa.Param(nil), p.Params...),
		Regs:      append([]isa.RegDecl(nil), p.Regs...),
		Tiles:     tiles,
		Instrs:    ins,
		HighWater: maps.Clone(src.HighWater),
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

// gmBases is the offset of the first view of each param in program order (0 for a
// param no instruction views): the origin of the relative offsets a shape compares.
func gmBases(p *isa.Program) []int {
	base := make([]int, len(p.Params))
	seen := make([]bool, len(p.Params))
	for _, in := range p.Body {
		for _, a := range in.Args {
			if a.Kind == isa.KindGM && !seen[a.GM.Param] {
				base[a.GM.Param], seen[a.GM.Param] = a.GM.Offset, true
			}
		}
	}
	return base
}

// shapeHash hashes what sameShape compares, and the pipes.
func shapeHash(p *isa.Program, base []int, pipes []isa.Pipe) uint64 {
	h := fnv{offset64}
	h.add(int(p.Core), len(p.Params), len(p.Regs), len(p.Tiles), len(p.Body))
	for _, t := range p.Tiles {
		h.add(int(t.Loc), int(t.DType), t.Rows, t.Cols, t.ValidRows, t.ValidCols, int(t.ValidRowsReg), int(t.ValidColsReg), int(t.Layout))
	}
	for _, q := range p.Params {
		h.add(int(q.DType), q.Elems)
	}
	for pc, in := range p.Body {
		h.add(int(in.Op), int(in.Mode), int(pipes[pc]), len(in.Args))
		for _, a := range in.Args {
			v := a.GM
			h.add(int(a.Kind), a.Tile, int(math.Float64bits(a.Imm)), int(a.Pipe), a.Reg)
			if a.Kind == isa.KindGM {
				h.add(v.Param, v.Offset-base[v.Param], v.Rows, v.Cols, v.RowStride, v.ColStride, int(v.OffsetReg), int(v.RowsReg), int(v.ColsReg))
			}
		}
	}
	return h.sum
}

// sameShape reports whether programs a and b (with their gmBases) differ at most in
// names and absolute GM offsets.
func sameShape(a *isa.Program, baseA []int, b *isa.Program, baseB []int) bool {
	if a.Core != b.Core || len(a.Params) != len(b.Params) || len(a.Regs) != len(b.Regs) ||
		len(a.Tiles) != len(b.Tiles) || len(a.Body) != len(b.Body) {
		return false
	}
	for i, t := range a.Tiles {
		u := b.Tiles[i]
		t.Name, u.Name = "", ""
		if t != u {
			return false
		}
	}
	for i, q := range a.Params {
		if q.DType != b.Params[i].DType || q.Elems != b.Params[i].Elems {
			return false
		}
	}
	for pc, in := range a.Body {
		other := b.Body[pc]
		if in.Op != other.Op || in.Mode != other.Mode || len(in.Args) != len(other.Args) {
			return false
		}
		for i, x := range in.Args {
			y := other.Args[i]
			if math.Float64bits(x.Imm) != math.Float64bits(y.Imm) {
				return false
			}
			if x.Kind == isa.KindGM && y.Kind == isa.KindGM {
				x.GM.Offset -= baseA[x.GM.Param]
				y.GM.Offset -= baseB[y.GM.Param]
			}
			x.Imm, y.Imm = 0, 0
			if x != y {
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
