package lower

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// loadWindow brings a GM window into tile (of ping-pong slot s) and returns the tile
// holding it: a TLOAD when the window's strides are non-negative, otherwise a gather.
func loadWindow(e *emitter, s int, tile int, v isa.GMView) int {
	if v.RowStride >= 0 && v.ColStride >= 0 {
		e.emit(isa.TLOAD, isa.TileOp(tile), isa.GMOp(v))
		return tile
	}
	return gatherWindow(e, s, e.prog.Tiles[tile], v)
}

// gatherWindow loads a window that walks GM backwards along rows or columns (a slice
// with a negative step). GM windows have non-negative strides, so the tile is gathered
// (MGATHER) from the mirrored, forward window over the same elements, with index
// idx[r,c] = r'*cols + c', where r' and c' count from the far end along reversed axes.
// The index is the sum of a column part (TCI over one row, broadcast down) and a row
// part (TCI in fp32 over a tile 8 wide, whose first column steps by whole rows, then
// converted to int32 and added along each row).
func gatherWindow(e *emitter, s int, like isa.TileDecl, v isa.GMView) int {
	tr, tc := like.Rows, like.Cols
	fwd := v
	cStart, cStep := 0.0, 1.0
	rStart, rStep := 0.0, float64(v.Cols)
	if v.ColStride < 0 {
		fwd.Offset += (v.Cols - 1) * v.ColStride
		fwd.ColStride = -v.ColStride
		cStart, cStep = float64(v.Cols-1), -1
	}
	if v.RowStride < 0 {
		fwd.Offset += (v.Rows - 1) * v.RowStride
		fwd.RowStride = -v.RowStride
		rStart, rStep = float64((v.Rows-1)*v.Cols), -float64(v.Cols)
	}
	name := func(n string) string { return fmt.Sprintf("%s_%d", n, s) }
	colIdx := e.variant(name("gidx_col"), dtype.Int32, 1, tc, 0, 0)
	rowF := e.variant(name("gidx_rowf"), dtype.Float32, tr, 8, 0, 0)
	rowI := e.variant(name("gidx_row"), dtype.Int32, tr, 8, 0, 0)
	spread := e.variant(name("gidx_spread"), dtype.Int32, tr, tc, 0, 0)
	idx := e.variant(name("gidx"), dtype.Int32, tr, tc, 0, 0)
	dst := e.variant(name("gathered"), like.DType, tr, tc, v.Rows, v.Cols)
	e.emit(isa.TCI, isa.TileOp(colIdx), isa.ImmOp(cStart), isa.ImmOp(cStep))
	e.emit(isa.TCI, isa.TileOp(rowF), isa.ImmOp(rStart), isa.ImmOp(rStep/8)) // column 0 steps by rStep per row
	e.emit(isa.TCVT, isa.TileOp(rowI), isa.TileOp(rowF))
	e.emit(isa.TCOLEXPAND, isa.TileOp(spread), isa.TileOp(colIdx))
	e.emit(isa.TROWEXPANDADD, isa.TileOp(idx), isa.TileOp(spread), isa.TileOp(rowI))
	e.emit(isa.MGATHER, isa.TileOp(dst), isa.GMOp(fwd), isa.TileOp(idx))
	return dst
}
