package lower

import (
	"pypto/dtype"
	"pypto/isa"
)

// emitter appends declarations and instructions to a PTO program.
type emitter struct {
	prog   *isa.Program
	params map[int]int // GM tensor -> index of the program param bound to it
}

func newEmitter(name string, core isa.CoreKind) *emitter {
	return &emitter{prog: &isa.Program{Name: name, Core: core}, params: map[int]int{}}
}

// tile declares a tile and returns its index.
func (e *emitter) tile(name string, loc isa.Location, dt dtype.DType, rows, cols int) int {
	e.prog.Tiles = append(e.prog.Tiles, isa.TileDecl{Name: name, Loc: loc, DType: dt, Rows: rows, Cols: cols})
	return len(e.prog.Tiles) - 1
}

// pingPong declares two copies of a tile so that consecutive iterations use different
// buffers and the backend can overlap one iteration's load with the previous compute.
func (e *emitter) pingPong(name string, loc isa.Location, dt dtype.DType, rows, cols int) [2]int {
	return [2]int{e.tile(name+"_0", loc, dt, rows, cols), e.tile(name+"_1", loc, dt, rows, cols)}
}

func (e *emitter) emit(op isa.Opcode, args ...isa.Operand) {
	e.prog.Body = append(e.prog.Body, isa.Instr{Op: op, Args: args})
}
