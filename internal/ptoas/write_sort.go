package ptoas

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// tmrgsort: the dialect's blockLen counts the f32 elements of a run, two per (value,
// index) pair, where ours counts pairs (ptoas 0.1.1 takes multiples of 64: runs of at
// least the 32 pairs tsort32 writes). Its op merges one row; ours merges each row's
// groups of 4 runs. A row-major tile seen as one row (treshape) has the same groups
// when each row holds a whole number of them (cols/2 a multiple of 4n, as the
// compiler's sorts always do: rows of 32*4^m pairs merged with runs of 32*4^k, k < m),
// so such a tile of several rows is written as treshape to one row, the merge, and
// treshape back; another is merged row by row (tgather, tmrgsort, tscatter).
func init() {
	opWriters[isa.TMRGSORT] = writeMrgSort
	notes[isa.TMRGSORT] = "blockLen counts f32 elements (2n); several rows: treshape to one row, the merge, treshape back when each row holds whole groups of 4 runs, else each row read (tgather), merged and written back (tscatter)"
}

func writeMrgSort(w *writer, in isa.Instr) {
	src, dst := w.p.Tiles[in.Args[1].Tile], w.p.Tiles[in.Args[0].Tile]
	n := int(in.Args[2].Imm)
	blockLen := fmt.Sprintf("blockLen = %d : i32", 2*n)
	if src.Rows == 1 {
		w.op("tmrgsort", blockLen, "", w.tileOp(in, 1), w.tileOp(in, 0))
		return
	}
	if src.Layout != isa.LayoutND || dst.Layout != isa.LayoutND {
		w.fail("tmrgsort of %s (%d rows): the dialect's tmrgsort merges one row, and the ops that merge several need ND tiles", src.Name, src.Rows)
	}
	f := newFencedSeq(w, in)
	if (src.Cols/2)%(4*n) == 0 { // whole groups: the tile as one row
		flat := w.scratchTile(src, dtype.Float32, 1, src.Rows*src.Cols, isa.LayoutND)
		merged := w.scratchTile(src, dtype.Float32, 1, src.Rows*src.Cols, isa.LayoutND)
		f.fenced("treshape", "", w.tileOp(in, 1), flat)
		f.op("tmrgsort", blockLen, flat, merged)
		f.fenced("treshape", "", merged, w.tileOp(in, 0))
		return
	}
	// Rows whose last group is short: each row read (tgather), merged, and written back
	// to its place (tscatter).
	idx := w.scratchTile(src, dtype.Int32, 1, src.Cols, isa.LayoutND)
	row := w.scratchTile(src, dtype.Float32, 1, src.Cols, isa.LayoutND)
	merged := w.scratchTile(src, dtype.Float32, 1, src.Cols, isa.LayoutND)
	for r := 0; r < src.Rows; r++ {
		f.fenced("tci", "descending = false", operand{w.scalarImm(float64(r*src.Cols), dtype.Int32), "i32"}, idx)
		f.fenced("tgather", "", w.tileOp(in, 1), idx, row)
		f.op("tmrgsort", blockLen, row, merged)
		f.fenced("tscatter", "", merged, idx, w.tileOp(in, 0))
	}
}
