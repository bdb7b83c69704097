package ptoas

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// The dialect's spellings of our locations, element types and layouts.

var locNames = map[isa.Location]string{
	isa.Mat: "mat", isa.Left: "left", isa.Right: "right", isa.Acc: "acc", isa.Vec: "ub", isa.Bias: "bias",
}

// elemNames are the element types of tiles and GM pointers. bool is stored as one byte
// (0 or 1), which the dialect spells i8; the tile's declaration says it is bool
// (pypto.dtype) so that reading it back gives a bool tile.
var elemNames = map[dtype.DType]string{
	dtype.Float32: "f32", dtype.Float16: "f16", dtype.BFloat16: "bf16", dtype.Int8: "i8", dtype.Int32: "i32", dtype.Bool: "i8",
}

func elemType(d dtype.DType) (string, bool) {
	s, ok := elemNames[d]
	return s, ok
}

// layoutNames are the dialect's (block layout, inner fractal layout) of each of our
// layouts: ND row_major/none_box, DN col_major/none_box, NZ (a column of fractals,
// each row-major) col_major/row_major, ZN (a row of fractals, each column-major)
// row_major/col_major.
var layoutNames = map[isa.Layout][2]string{
	isa.LayoutND: {"row_major", "none_box"},
	isa.LayoutDN: {"col_major", "none_box"},
	isa.LayoutNZ: {"col_major", "row_major"},
	isa.LayoutZN: {"row_major", "col_major"},
}

// Pad values of a tile (the tile library's PadValue): what a load writes outside a GM
// window smaller than the tile.
const (
	padNull = 0
	padZero = 1
)

// tileType is the !pto.tile_buf type of tile t; a valid size a register gives is '?'.
func tileType(t isa.TileDecl, pad int) (string, error) {
	loc, ok := locNames[t.Loc]
	if !ok {
		return "", fmt.Errorf("tile %s is in %s, a location the dialect has no buffer for", t.Name, t.Loc)
	}
	el, ok := elemType(t.DType)
	if !ok {
		return "", fmt.Errorf("tile %s has dtype %s, which the dialect has no element type for", t.Name, t.DType)
	}
	lay := layoutNames[t.Layout]
	return fmt.Sprintf("!pto.tile_buf<loc=%s, dtype=%s, rows=%d, cols=%d, v_row=%s, v_col=%s, blayout=%s, slayout=%s, fractal=%d, pad=%d>",
		loc, el, t.Rows, t.Cols, validDim(t.ValidRows, t.ValidRowsReg, t.Rows), validDim(t.ValidCols, t.ValidColsReg, t.Cols),
		lay[0], lay[1], isa.FractalBytes(t.Loc), pad), nil
}

func validDim(n int, r isa.RegRef, full int) string {
	switch {
	case r != 0:
		return "?"
	case n == 0:
		return fmt.Sprint(full)
	}
	return fmt.Sprint(n)
}

// aliasName is a readable name for a tile type: the location, dtype and shape, with
// the valid size, layout and pad when they are not the defaults.
func aliasName(t isa.TileDecl, pad int) string {
	el, _ := elemType(t.DType)
	if t.DType == dtype.Bool {
		el = "bool"
	}
	s := fmt.Sprintf("%s_%s_%dx%d", locNames[t.Loc], el, t.Rows, t.Cols)
	if t.ValidRowsReg != 0 || t.ValidColsReg != 0 || (t.ValidRows != 0 && t.ValidRows != t.Rows) || (t.ValidCols != 0 && t.ValidCols != t.Cols) {
		s += "_v" + validDim(t.ValidRows, t.ValidRowsReg, t.Rows) + "x" + validDim(t.ValidCols, t.ValidColsReg, t.Cols)
	}
	if t.Layout != isa.LayoutND {
		s += "_" + t.Layout.String()
	}
	if pad == padZero {
		s += "_pad0"
	}
	return "!" + sanitize(s)
}

// pipeNames are the dialect's pipe names.
var pipeNames = map[isa.Pipe]string{
	isa.PipeS: "PIPE_S", isa.PipeMTE1: "PIPE_MTE1", isa.PipeMTE2: "PIPE_MTE2", isa.PipeMTE3: "PIPE_MTE3",
	isa.PipeM: "PIPE_M", isa.PipeV: "PIPE_V", isa.PipeFIX: "PIPE_FIX", isa.PipeAll: "PIPE_ALL",
}

// maxEventIDs is the number of event ids the dialect names (EVENT_ID0..EVENT_ID7).
const maxEventIDs = 8

// cmpNames are the dialect's compare modes of our predicates.
var cmpNames = map[isa.Mode]string{
	isa.CmpEQ: "equal", isa.CmpNE: "not_equal", isa.CmpLT: "less_than", isa.CmpLE: "less_equal",
	isa.CmpGT: "greater_than", isa.CmpGE: "greater_equal",
}

// roundNames are the dialect's rounding modes of TCVT's modes (ModeNone: CAST_RINT,
// the conversion's default, nearest even, which is ours except from a float to an
// integer, where ours truncates: the reader takes CAST_RINT there as RoundRint).
var roundNames = map[isa.Mode]string{
	isa.ModeNone: "CAST_RINT", isa.RoundRint: "RINT", isa.RoundAway: "ROUND", isa.RoundFloor: "FLOOR",
	isa.RoundCeil: "CEIL", isa.RoundTrunc: "TRUNC", isa.RoundOdd: "ODD",
}
