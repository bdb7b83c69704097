package ptoas

import (
	"strings"

	"pypto/dtype"
	"pypto/isa"
)

// Reductions ptoas 0.1.1 cannot compile, written as groups of ops it does: its
// tcolmax and tcolmin are miscompiled (written as TCOLEXPAND), its row reductions take
// f16 and f32 only, and the dialect has no product reduction. A group reads one row of
// a tile at a time with tgather (an index sequence from tci selects the row) and
// combines the rows with the elementwise op in the order ours does:
//
//   - a column reduction combines src's valid rows in order, row 0 first;
//   - a row reduction transposes src (ttrans) and combines the rows of the transpose,
//     src's columns: max, min and integer sums in order (their value does not depend on
//     it); a float product in the vector unit's order (isa laneReduce: column k into
//     lane k % 64, the lanes then folded pairwise), in f32.
//
// The result, one row of f32 or src's dtype, goes to dst through a last tgather whose
// index tile has dst's shape and layout (dst[r, c] = result[r*cols + c]), which writes
// dst's valid region: the group is written only where that region is what ours writes.

// reductionOps are the elementwise ops that combine two rows for each reduction.
var reductionOps = map[isa.Opcode]string{
	isa.TROWSUM: "tadd", isa.TROWPROD: "tmul", isa.TROWMAX: "tmax", isa.TROWMIN: "tmin",
	isa.TCOLSUM: "tadd", isa.TCOLPROD: "tmul", isa.TCOLMAX: "tmax", isa.TCOLMIN: "tmin",
}

func init() {
	rows := "the source transposed (ttrans), its rows read with tgather and combined by the elementwise op"
	notes[isa.TCOLMAX] = "src's rows read with tgather and combined by tmax (ptoas 0.1.1 writes tcolmax as TCOLEXPAND)"
	notes[isa.TCOLMIN] = "src's rows read with tgather and combined by tmin (ptoas 0.1.1 writes tcolmin as TCOLEXPAND)"
	notes[isa.TCOLPROD] = "src's rows read with tgather and multiplied in order in f32"
	notes[isa.TROWPROD] = rows + ", in f32 in the vector unit's lane order"
	for _, op := range []isa.Opcode{isa.TROWSUM, isa.TROWMAX, isa.TROWMIN} {
		notes[op] = strings.TrimPrefix(notes[op]+"; integers: ", "; ") + rows + " (ptoas 0.1.1's row reductions take f16 and f32 only)"
	}
	for _, op := range []isa.Opcode{isa.TCOLMAX, isa.TCOLMIN, isa.TCOLPROD, isa.TROWPROD} {
		opWriters[op] = writeReduction
	}
	// The row reductions ptoas 0.1.1 takes for f16 and f32 keep its op for those.
	native := map[isa.Opcode]opWriter{
		isa.TROWSUM: func(w *writer, in isa.Instr) { w.op("trowsum", "", "", w.tileOp(in, 1), w.tileOp(in, 0)) },
		isa.TROWMAX: func(w *writer, in isa.Instr) { w.op("trowmax", "", "", w.tileOp(in, 1), w.tileOp(in, 0)) },
		isa.TROWMIN: writeScratchReduction("trowmin"),
	}
	for op, f := range native {
		opWriters[op] = func(w *writer, in isa.Instr) {
			if d := w.p.Tiles[in.Args[1].Tile].DType; d.IsInt() {
				writeReduction(w, in)
				return
			}
			f(w, in)
		}
	}
}

// scratchTile declares a scratch tile of d's location with the given dtype, shape and
// layout, all of it valid.
func (w *writer) scratchTile(d isa.TileDecl, dt dtype.DType, rows, cols int, layout isa.Layout) operand {
	return w.scratchDecl(isa.TileDecl{Name: d.Name, Loc: d.Loc, DType: dt, Rows: rows, Cols: cols, Layout: layout})
}

// validSize is tile d's static valid rows and cols; a register-given size fails.
func (w *writer) validSize(in isa.Instr, d isa.TileDecl) (int, int) {
	if d.ValidRowsReg != 0 || d.ValidColsReg != 0 {
		w.fail("%s of tile %s, whose valid size a register gives: the dialect's %s is not compiled by ptoas 0.1.1 for it, and the ops that stand for it need the size when the kernel is written", in.Op, d.Name, in.Op)
	}
	vr, vc := d.ValidRows, d.ValidCols
	if vr == 0 {
		vr = d.Rows
	}
	if vc == 0 {
		vc = d.Cols
	}
	return vr, vc
}

// writeReduction writes a reduction as rows combined by an elementwise op (see above).
func writeReduction(w *writer, in isa.Instr) {
	src, dst := w.p.Tiles[in.Args[1].Tile], w.p.Tiles[in.Args[0].Tile]
	vr, vc := w.validSize(in, src)
	dr, dc := w.validSize(in, dst)
	row := in.Op == isa.TROWSUM || in.Op == isa.TROWPROD || in.Op == isa.TROWMAX || in.Op == isa.TROWMIN
	wantR, wantC := 1, vc
	if row {
		wantR, wantC = vr, 1
	}
	exact := dr == wantR && dc == wantC && (dst.Layout == isa.LayoutND || dst.Layout == isa.LayoutDN)
	flat := dst.Layout == isa.LayoutND || (dst.Layout == isa.LayoutDN && dst.Cols == 1)
	if src.Layout != isa.LayoutND || vr == 0 || vc == 0 || !(exact || flat) {
		w.fail("%s of %s into %s: the dialect's %s is not compiled by ptoas 0.1.1 here, and the ops that stand for it need an ND source with valid rows and columns, and an ND destination (or a DN column)", in.Op, src.Name, dst.Name, in.Op)
	}
	f := newFencedSeq(w, in)
	// Float sums and products accumulate in f32 (ours rounds once, to dst).
	work := src.DType
	if (in.Op == isa.TROWPROD || in.Op == isa.TCOLPROD || in.Op == isa.TROWSUM || in.Op == isa.TCOLSUM) && src.DType.IsFloat() {
		work = dtype.Float32
	}
	from := w.tileOp(in, 1)
	if work != src.DType {
		wide := w.scratchTile(src, work, src.Rows, src.Cols, isa.LayoutND)
		f.fenced("tcvt", "rmode = #pto<round_mode CAST_RINT>", from, wide)
		from = wide
	}
	// The rows to combine: src's valid rows, or the transpose's (src's valid columns);
	// each gives the first `written` elements of a row of `width`.
	n, width, written := vr, src.Cols, vc
	if row { // the transpose's rows padded to whole 32-byte blocks
		t := w.scratchDecl(isa.TileDecl{Name: src.Name, Loc: src.Loc, DType: work, Rows: src.Cols, Cols: roundUp(src.Rows, 32/work.Size()), ValidCols: src.Rows})
		f.fenced("ttrans", "", from, t, t)
		from, n, width, written = t, vc, roundUp(src.Rows, 32/work.Size()), vr
	}
	// One-row tiles of `width` elements (padded so that every dtype fills whole 32-byte
	// blocks), of which the first `written` are valid.
	part := func(dt dtype.DType) operand {
		return w.scratchDecl(isa.TileDecl{Name: src.Name, Loc: src.Loc, DType: dt, Rows: 1, Cols: roundUp(width, 32), ValidCols: written})
	}
	idx := w.scratchTile(src, dtype.Int32, 1, roundUp(width, 32), isa.LayoutND)
	i32 := func(v int) operand { return operand{w.scalarImm(float64(v), dtype.Int32), "i32"} }
	rowInto := func(r int, x operand) operand {
		f.fenced("tci", "descending = false", i32(r*width), idx)
		f.fenced("tgather", "", from, idx, x)
		return x
	}
	newRow := func() operand { return part(work) }
	name := reductionOps[in.Op]
	var acc operand
	if work == dtype.Float32 && row && src.DType.IsFloat() {
		acc = laneFold(f, name, n, rowInto, newRow)
	} else {
		acc = rowInto(0, newRow())
		if n > 1 {
			x := newRow()
			for r := 1; r < n; r++ {
				f.op(name, "", acc, rowInto(r, x), acc)
			}
		}
	}
	if work != dst.DType {
		c := part(dst.DType)
		f.fenced("tcvt", "rmode = #pto<round_mode CAST_RINT>", acc, c)
		acc = c
	}
	if exact { // dst's valid region is what ours writes: dst[r, c] = acc[r*cols + c]
		out := w.scratchTile(dst, dtype.Int32, dst.Rows, dst.Cols, dst.Layout)
		f.fenced("tci", "descending = false", i32(0), out)
		f.fenced("tgather", "", acc, out, w.tileOp(in, 0))
		return
	}
	// Otherwise only the elements ours writes, scattered: a row's result r to
	// dst.flat[r*cols], a column's c to dst.flat[c]; the rest of dst keeps its bytes.
	at := part(dtype.Int32)
	f.fenced("tci", "descending = false", i32(0), at)
	if row && dst.Cols > 1 {
		stride := part(dtype.Int32)
		f.op("texpands", "", i32(dst.Cols), stride)
		f.op("tmul", "", at, stride, at)
	}
	f.fenced("tscatter", "", acc, at, w.tileOp(in, 0))
}

// laneFold combines rows 0..n-1 in the vector unit's order (isa laneReduce): row k
// into lane k % 64, each lane in order, then lane i takes lane i+h for h = 32, ..., 1
// where lane i+h got a row. It returns lane 0.
func laneFold(f *fencedSeq, name string, n int, rowInto func(int, operand) operand, newRow func() operand) operand {
	used := min(n, isa.ReduceLanes)
	lanes := make([]operand, used)
	var x operand
	for k := 0; k < n; k++ {
		if k < used {
			lanes[k] = rowInto(k, newRow())
			continue
		}
		if k == used {
			x = newRow()
		}
		l := lanes[k%isa.ReduceLanes]
		f.op(name, "", l, rowInto(k, x), l)
	}
	for h := isa.ReduceLanes / 2; h >= 1; h /= 2 {
		for i := 0; i < h && i+h < used; i++ {
			f.op(name, "", lanes[i], lanes[i+h], lanes[i])
		}
	}
	return lanes[0]
}

// roundUp is n rounded up to a multiple of k.
func roundUp(n, k int) int { return (n + k - 1) / k * k }

// fencedSeq writes the ops of a group, draining every pipe around those ptoas 0.1.1
// inserts no synchronisation for (tci, tgather, tscatter, tcvt; also ttrans and
// treshape, whose result aliases its source): one barrier between two of them.
type fencedSeq struct {
	s       *opSeq
	drained bool // the last op written is a barrier
}

func newFencedSeq(w *writer, in isa.Instr) *fencedSeq {
	return &fencedSeq{s: &opSeq{w: w, g: w.group(in)}}
}

// op writes an op ptoas synchronises.
func (f *fencedSeq) op(name, props string, ops ...operand) {
	f.s.op(name, props, ops...)
	f.drained = false
}

// fenced writes an op between barriers.
func (f *fencedSeq) fenced(name, props string, ops ...operand) {
	if !f.drained {
		f.s.barrier()
	}
	f.s.op(name, props, ops...)
	f.s.barrier()
	f.drained = true
}
