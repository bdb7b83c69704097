package lower

import (
	"fmt"
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// emitter appends declarations and instructions to a PTO program.
type emitter struct {
	prog     *isa.Program
	params   map[int]int    // GM tensor -> index of the program param bound to it
	variants map[string]int // see variant
	// slab is where the next instructions' operands go: one allocation serves many
	// instructions (chunks grow with the program, so small programs stay small).
	slab   []isa.Operand
	shared operandLists // see operands
	seed   operandLists // lists of another program to share too, read only
	// seedBody is the body of the program this one is likely to repeat (read only).
	seedBody []isa.Instr
	// codeBudget is how many machine instructions the core's instruction cache holds
	// (0: fetch is free); codegen loops where straight-line code would not fit.
	codeBudget int
	// l1Bytes is the cube core's L1 (0 for a vector core's program, or when unknown):
	// a matmul keeps A's stages resident in it when they fit (codegen_matmul.go).
	l1Bytes int
	// l0cBytes is the cube core's L0C (0 when unknown): a convolution keeps two sets of
	// accumulators when they fit (conv_tiling.go).
	l0cBytes int
	// flagIDs is the chip's event ids per pipe pair (0 when unknown): a convolution's
	// steps loop only where their L1 buffers' loop-carried syncs fit them.
	flagIDs int
}

// operandLists holds emitted operand lists by their contents.
type operandLists map[operandsKey][]isa.Operand

// blockSeed is what the emitters of a task's later blocks take from its first block:
// its programs, whose instructions mostly recur at the same positions, and their
// operand lists by contents.
type blockSeed struct {
	progs []*isa.Program
	lists operandLists
}

// seedOf collects the seed of a block's programs.
func seedOf(progs []*isa.Program) *blockSeed {
	s := &blockSeed{progs: progs, lists: operandLists{}}
	for _, p := range progs {
		for _, in := range p.Body {
			if key, ok := sharedOperandsKey(in.Args); ok {
				s.lists[key] = in.Args
			}
		}
	}
	return s
}

// useSeed makes e share the seed's operand lists and start its program at the size
// of the seed's program k, whose body it is likely to repeat.
func (e *emitter) useSeed(seed *blockSeed, k int) {
	if seed == nil {
		return
	}
	e.seed = seed.lists
	if k >= len(seed.progs) {
		return
	}
	like := seed.progs[k]
	e.seedBody = like.Body
	if len(like.Tiles) > 0 { // an empty program keeps nil slices
		e.prog.Tiles = make([]isa.TileDecl, 0, len(like.Tiles))
	}
	if len(like.Body) > 0 {
		e.prog.Body = make([]isa.Instr, 0, len(like.Body))
	}
}

func newEmitter(name string, core isa.CoreKind) *emitter {
	return &emitter{prog: &isa.Program{Name: name, Core: core}, params: map[int]int{}, variants: map[string]int{}}
}

// tile declares a tile and returns its index.
func (e *emitter) tile(name string, loc isa.Location, dt dtype.DType, rows, cols int) int {
	e.prog.Tiles = append(e.prog.Tiles, isa.TileDecl{Name: name, Loc: loc, DType: dt, Rows: rows, Cols: cols})
	return len(e.prog.Tiles) - 1
}

// reg declares a scalar register and returns its index.
func (e *emitter) reg(name string) int {
	e.prog.Regs = append(e.prog.Regs, isa.RegDecl{Name: name})
	return len(e.prog.Regs) - 1
}

// pingPong declares two copies of a tile so that consecutive iterations use different
// buffers and the backend can overlap one iteration's load with the previous compute.
func (e *emitter) pingPong(name string, loc isa.Location, dt dtype.DType, rows, cols int) [2]int {
	return [2]int{e.tile(name+"_0", loc, dt, rows, cols), e.tile(name+"_1", loc, dt, rows, cols)}
}

func (e *emitter) emit(op isa.Opcode, args ...isa.Operand) {
	e.prog.Body = append(e.prog.Body, isa.Instr{Op: op, Args: e.operands(args)})
}

// operands returns args as an instruction's operand list: a list already emitted
// with the same operands (no GM view among them), here or in the seed, is shared,
// others are copied to the slab. The result is capped, so appending to it cannot
// reach other lists; nothing changes an emitted instruction's operands in place.
func (e *emitter) operands(args []isa.Operand) []isa.Operand {
	if k := len(e.prog.Body); k < len(e.seedBody) && sameOperands(e.seedBody[k].Args, args) {
		return e.seedBody[k].Args // the common case: the seed's instruction at this position
	}
	key, shareable := sharedOperandsKey(args)
	if shareable {
		if out, ok := e.seed[key]; ok {
			return out
		}
		if out, ok := e.shared[key]; ok {
			return out
		}
	}
	if len(e.slab) < len(args) {
		e.slab = make([]isa.Operand, max(len(args), min(2*len(e.prog.Body), 256), 8))
	}
	out := e.slab[:len(args):len(args)]
	e.slab = e.slab[len(args):]
	copy(out, args)
	if shareable {
		if e.shared == nil {
			e.shared = operandLists{}
		}
		e.shared[key] = out
	}
	return out
}

// sameOperands reports whether a, a list without GM views, is b, immediates bit for
// bit.
func sameOperands(a, b []isa.Operand) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Kind == isa.KindGM || *x != *y || math.Float64bits(x.Imm) != math.Float64bits(y.Imm) {
			return false
		}
	}
	return true
}

// operandsKey identifies a short operand list of tiles, immediates, pipes and
// registers (compactly: the key is hashed once per instruction); immediates by their
// bits, so that 0 and -0 stay apart.
type operandsKey struct {
	n   uint8
	ops [4]struct {
		immBits uint64
		tile    int32
		reg     int16
		kind    isa.OperandKind
		pipe    isa.Pipe
	}
}

// sharedOperandsKey is the key of args, ok false when it has none: too many operands,
// a GM view, or an index too large for the key.
func sharedOperandsKey(args []isa.Operand) (k operandsKey, ok bool) {
	if len(args) > len(k.ops) {
		return k, false
	}
	k.n = uint8(len(args))
	for i := range args {
		a := &args[i]
		if a.Kind == isa.KindGM || !zeroView(&a.GM) || a.Tile != int(int32(a.Tile)) || a.Reg != int(int16(a.Reg)) {
			return k, false
		}
		o := &k.ops[i]
		o.immBits, o.tile, o.reg, o.kind, o.pipe = math.Float64bits(a.Imm), int32(a.Tile), int16(a.Reg), a.Kind, a.Pipe
	}
	return k, true
}

// variant returns the tile called name with the given shape and valid region,
// declaring it on first use: edge tiles get declarations of their own so that
// instructions honouring valid regions read and write exactly the data.
func (e *emitter) variant(name string, dt dtype.DType, rows, cols, validRows, validCols int) int {
	key := fmt.Sprintf("%s_%s_%dx%d_v%dx%d", name, dt, rows, cols, validRows, validCols)
	if t, ok := e.variants[key]; ok {
		return t
	}
	t := e.tile(fmt.Sprintf("%s_%dx%d", name, validRows, validCols), isa.Vec, dt, rows, cols)
	e.prog.Tiles[t].ValidRows, e.prog.Tiles[t].ValidCols = validRows, validCols
	e.variants[key] = t
	return t
}

// zeroView reports whether v is the zero view, field by field (faster than comparing
// the structs; a test keeps the list complete).
func zeroView(v *isa.GMView) bool {
	return v.Param|v.Offset|v.Rows|v.Cols|v.RowStride|v.ColStride|int(v.OffsetReg)|int(v.RowsReg)|int(v.ColsReg) == 0
}
