package ptoas

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// GM gathers. ptoas 0.1.1 refuses pto.tmgather whatever its GM operand, so mgather
// (dst[r,c] = window.flat[idx[r,c]]) is written as a loop over chunks of the window:
// each chunk is loaded into a scratch tile, gathered from with the indices relative to
// the chunk (clamped into it), and selected into dst where the index falls inside the
// chunk (a mask packed as the compares pack theirs). Every element of the window is
// read once per gather: the cost is that of loading the whole window.
func init() {
	opWriters[isa.MGATHER] = writeMGather
	opWriters[isa.TGATHER] = writeTGather
}

// writeTGather writes tgather between barriers: ptoas 0.1.1 inserts no
// synchronisation for it (its C++ loads the operands and gathers with no flag between).
func writeTGather(w *writer, in isa.Instr) {
	s := &opSeq{w: w, g: w.group(in)}
	s.barrier()
	s.op("tgather", "", w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 0))
	s.barrier()
}

// gatherChunkBytes bounds a chunk's scratch tile: the kernel's own tiles use the rest
// of the unified buffer.
const gatherChunkBytes = 8192

// gatherChunks is how a window is cut into chunks: n chunks of chunkRows x chunkCols
// elements read from GM as viewRows x viewCols (each step elements further), then a
// tail of tailRows (a contiguous window: tailCols) that the loop leaves. pad is the
// tile's row length for a row of the window (cols rounded up to whole 32-byte blocks),
// which the indices are mapped to when it differs from the window's cols.
type gatherChunks struct {
	contiguous           bool
	rows, cols           int // the tile of one chunk
	viewRows, viewCols   int
	n, step              int
	tailRows, tailCols   int // the tail's view (0 rows or cols: no tail)
	tileTailR, tileTailC int // the tail's tile
	pad                  int // the tile's row length for a window row (strided windows)
	elems                int // local indices per full chunk
}

// planGather cuts window v of n elements of dtype d into chunks.
func planGather(w *writer, v isa.GMView, d dtype.DType) gatherChunks {
	size := d.Size()
	block := 32 / size // elements of one 32-byte block
	roundUp := func(x int) int { return (x + block - 1) / block * block }
	if v.RowsReg != 0 || v.ColsReg != 0 {
		w.fail("mgather from a window whose size a register gives: the loop over its chunks needs a fixed size")
	}
	if v.ColStride != 1 {
		w.fail("mgather from a window whose columns are not contiguous (column stride %d): its chunks are loaded a row at a time", v.ColStride)
	}
	total := v.Rows * v.Cols
	if v.Rows == 1 || v.RowStride == v.Cols {
		l := min(gatherChunkBytes/size, roundUp(total))
		l = l / block * block
		g := gatherChunks{contiguous: true, rows: 1, cols: l, viewRows: 1, viewCols: l, n: total / l, step: l, elems: l}
		if t := total - g.n*l; t > 0 {
			g.tailRows, g.tailCols, g.tileTailR, g.tileTailC = 1, t, 1, roundUp(t)
		}
		return g
	}
	pad := roundUp(v.Cols)
	if pad*size > 4*gatherChunkBytes {
		w.fail("mgather from rows of %d elements with a row stride of %d: a row is larger than the chunk tiles the loop uses", v.Cols, v.RowStride)
	}
	if pad != v.Cols && (total >= 1<<24 || v.Rows*pad >= 1<<24) {
		w.fail("mgather from a %dx%d window: its indices, mapped to rows of whole 32-byte blocks, are not exact in f32", v.Rows, v.Cols)
	}
	k := max(1, min(v.Rows, gatherChunkBytes/(pad*size)))
	g := gatherChunks{rows: k, cols: pad, viewRows: k, viewCols: v.Cols, n: v.Rows / k, step: k * v.RowStride, pad: pad, elems: k * pad}
	if t := v.Rows - g.n*k; t > 0 {
		g.tailRows, g.tailCols, g.tileTailR, g.tileTailC = t, v.Cols, t, pad
	}
	return g
}

// writeMGather writes mgather dst, window, idx.
func writeMGather(w *writer, in isa.Instr) {
	dst := w.p.Tiles[in.Args[0].Tile]
	v := in.Args[1].GM
	d := w.p.Params[v.Param].DType
	plan := planGather(w, v, d)
	rows, cols := dst.Rows, dst.Cols
	mcols := ((cols+7)/8 + 31) / 32 * 32
	s := &opSeq{w: w, g: w.group(in)}
	dstOp := w.tileOp(in, 0)
	// Every element of dst's valid region is selected from exactly one chunk (the
	// indices lie inside the window): written first, so that no op reads it unwritten.
	s.barrier()
	s.op("texpands", "", operand{w.scalarImm(0, dst.DType), elemOf(dst.DType)}, dstOp)
	// local: the indices relative to the current chunk, in the chunk tile's row
	// length.
	local := s.scratch(dtype.Int32, rows, cols)
	if plan.pad != 0 && plan.pad != v.Cols {
		f32 := func(x int) operand { return operand{w.scalarImm(float64(x), dtype.Float32), "f32"} }
		fi, fj := s.scratch(dtype.Float32, rows, cols), s.scratch(dtype.Float32, rows, cols)
		s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", w.tileOp(in, 2), fi)
		s.op("trems", "", fi, f32(v.Cols), fj)
		s.op("tsub", "", fi, fj, fi)
		s.op("tdivs", "", fi, f32(v.Cols), fi)
		s.op("tmuls", "", fi, f32(plan.pad), fi)
		s.op("tadd", "", fi, fj, fi)
		s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", fi, local)
	} else {
		s.op("tadds", "", w.tileOp(in, 2), s.i32(0), local)
	}
	c31 := s.fill(31, rows, cols)
	zero := s.fill(0, rows, cols)
	weights := s.bitWeights(rows, cols, 1)
	byteIdx := s.byteIndex(rows, cols, mcols)
	c24 := s.fill(24, rows, mcols)
	gidx, inside, hi := s.scratch(dtype.Int32, rows, cols), s.scratch(dtype.Int32, rows, cols), s.scratch(dtype.Int32, rows, cols)
	got := s.scratch(dst.DType, rows, cols)
	bytes, next, part := s.scratch(dtype.Int32, rows, mcols), s.scratch(dtype.Int32, rows, mcols), s.scratch(dtype.Int32, rows, mcols)
	mask := s.scratch(dtype.Int8, rows, mcols)
	// chunk selects from one loaded chunk of n local indices into dst, then moves
	// local on to the next chunk.
	chunk := func(tile operand, n int, last operand) {
		s.op("tmax", "", local, zero, gidx)
		s.op("tmin", "", gidx, last, gidx)
		s.op("tgather", "", tile, gidx, got)
		// inside: 0 <= local < n, from the sign bits of local and local - n.
		s.op("tshr", "", local, c31, inside)
		s.op("txors", "", inside, s.i32(-1), inside)
		s.op("tadds", "", local, s.i32(int64(-n)), hi)
		s.op("tshr", "", hi, c31, hi)
		s.op("tand", "", inside, hi, inside)
		s.op("tand", "", inside, weights, inside)
		s.gatherBytes(inside, byteIdx, bytes, next, part)
		s.toMask(bytes, c24, mask)
		s.op("tsel", "", mask, got, dstOp, dstOp)
		s.op("tadds", "", local, s.i32(int64(-n)), local)
	}
	if plan.n > 0 {
		tile := s.scratch(d, plan.rows, plan.cols)
		last := s.fill(int64(plan.elems-1), rows, cols)
		lb, ub, step := w.castIndex(w.i64(0)), w.castIndex(w.i64(int64(plan.n))), w.castIndex(w.i64(1))
		iv := w.value("chunk")
		w.line("scf.for %s = %s to %s step %s {", iv, lb, ub, step)
		w.depth++
		at := w.value("v")
		w.line(`%s = "emitc.cast"(%s) : (index) -> i64`, at, iv)
		view := w.chunkView(v, plan, at, 0, plan.viewRows, plan.viewCols)
		s.op("tload", "operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>", view, tile)
		s.barrier()
		chunk(tile, plan.elems, last)
		s.barrier()
		w.depth--
		w.line("} {%s}", s.g(1))
	}
	if plan.tailRows > 0 {
		tile := s.scratch(d, plan.tileTailR, plan.tileTailC)
		n := plan.tileTailR * plan.tileTailC
		if plan.contiguous {
			n = plan.tailCols
		}
		last := s.fill(int64(plan.tileTailR*plan.tileTailC-1), rows, cols)
		view := w.chunkView(v, plan, "", plan.n*plan.step, plan.tailRows, plan.tailCols)
		s.op("tload", "operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>", view, tile)
		s.barrier()
		chunk(tile, n, last)
		s.barrier()
	}
}

// chunkView is the view of a chunk of window v: rows x cols elements at the window's
// offset plus at*plan.step (at an i64 value, or "" for none) plus extra.
func (w *writer) chunkView(v isa.GMView, plan gatherChunks, at string, extra, rows, cols int) operand {
	el, _ := elemType(w.p.Params[v.Param].DType)
	rowStride := v.RowStride
	if plan.contiguous {
		rowStride = plan.cols
	}
	tv := w.tensorView(isa.GMView{Param: v.Param, RowStride: rowStride, ColStride: 1})
	acc := w.i64(int64(v.Offset + extra))
	add := func(x string) {
		sum := w.value("o")
		w.line(`%s = "emitc.add"(%s, %s) : (i64, i64) -> i64`, sum, acc, x)
		acc = sum
	}
	if d := w.delta(v.Param); d != "" {
		add(d)
	}
	if r, ok := v.OffsetReg.Index(); ok {
		add(w.reg[r])
	}
	if at != "" {
		prod := w.value("o")
		w.line(`%s = "emitc.mul"(%s, %s) : (i64, i64) -> i64`, prod, at, w.i64(int64(plan.step)))
		add(prod)
	}
	off := w.castIndex(acc)
	typ := fmt.Sprintf("!pto.tile_view<%dx%dx%s>", rows, cols, el)
	sv := w.value("sv")
	w.line("%s = pto.subview %s, offsets = [%s, %s], sizes = [%s, %s] : !pto.tensor_view<2x%s> -> %s", sv, tv, w.index(0), off, w.index(rows), w.index(cols), el, typ)
	return operand{sv, typ}
}
