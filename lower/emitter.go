package lower

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// emitter appends declarations and instructions to a PTO program.
type emitter struct {
	prog     *isa.Program
	params   map[int]int    // GM tensor -> index of the program param bound to it
	variants map[string]int // see variant
}

func newEmitter(name string, core isa.CoreKind) *emitter {
	return &emitter{prog: &isa.Program{Name: name, Core: core}, params: map[int]int{}, variants: map[string]int{}}
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
