package lower

import (
	"fmt"
	"maps"
	"math"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// reduceProblem views a reduction over one contiguous run of axes as [outer, r, inner]:
// outer is the product of the dims before the run, r of the run, inner of those after.
func reduceProblem(in core.Shape, axes []int) []int {
	if len(in) == 0 {
		return []int{1, 1, 1}
	}
	lo, hi := axes[0], axes[len(axes)-1]
	return []int{in[:lo].NumElements(), in[lo : hi+1].NumElements(), in[hi+1:].NumElements()}
}

// reduceKernel holds the tiles of a reduction block.
type reduceKernel struct {
	e        *emitter
	in, acc  dtype.DType
	out      dtype.DType
	tr, tc   int
	variants map[[3]int]int // (slot, valid rows, valid cols) -> loaded input tile
	converts map[[3]int]int // same, converted to the accumulate type
}

// loaded returns the input tile of ping-pong slot s whose valid region is vr x vc
// (edge tiles get their own declaration, so reductions never read padding).
func (k *reduceKernel) loaded(s, vr, vc int, convert bool) int {
	m, dt, name := k.variants, k.in, "x"
	if convert {
		m, dt, name = k.converts, k.acc, "x_acc"
	}
	key := [3]int{s, vr, vc}
	if t, ok := m[key]; ok {
		return t
	}
	t := k.e.tile(fmt.Sprintf("%s_%d_%dx%d", name, s, vr, vc), isa.Vec, dt, k.tr, k.tc)
	k.e.prog.Tiles[t].ValidRows, k.e.prog.Tiles[t].ValidCols = vr, vc
	m[key] = t
	return t
}

// load brings the vr x vc window into a tile of the accumulate type.
func (k *reduceKernel) load(s, vr, vc int, view isa.GMView) int {
	x := k.loaded(s, vr, vc, false)
	k.e.emit(isa.TLOAD, isa.TileOp(x), isa.GMOp(view))
	if k.in == k.acc {
		return x
	}
	xc := k.loaded(s, vr, vc, true)
	k.e.emit(isa.TCVT, isa.TileOp(xc), isa.TileOp(x))
	return xc
}

// reduceLaneWidth is the width of the lane tiles of a deterministic row reduction: one
// fp32 repeat, the vector unit's isa.ReduceLanes.
const reduceLaneWidth = isa.ReduceLanes

// deterministicReduceTile fixes the order of a float sum or product under
// Options.Deterministic, whatever the chip's buffers: a row reduction loads tiles of 64
// columns and adds them lane-wise (emitLaneReduce), a column reduction adds one row at
// a time; both then give the bits of one reduction instruction over the whole row or
// column (docs/isa.md, "Numerics"). Max and min give the same value in any order.
func deterministicReduceTile(chip *device.Chip, op *TileOp, in dtype.DType) string {
	red := reductions[op.Op]
	if !red.accumulateWide || !in.IsFloat() {
		return op.Reason
	}
	if op.Problem[2] == 1 {
		// Eight tiles of tr x 64 fp32 at most are live (two loads and their converted
		// copies, the padded one, two lane tiles, the result columns); rows stay a
		// multiple of 16 so an f16 result column is whole 32-byte blocks.
		fit := chip.Capacity(isa.Vec) / (8 * reduceLaneWidth * 4) / 16 * 16
		op.Tile[0] = max(16, min(op.Tile[0], fit))
		op.Tile[1] = reduceLaneWidth
		op.Attrs = maps.Clone(op.Attrs) // the node's attributes are shared
		op.Attrs["lanes"] = true
		return fmt.Sprintf("deterministic: %d-column tiles added lane-wise; %s", reduceLaneWidth, op.Reason)
	}
	op.Tile[0] = 1
	return "deterministic: one row at a time; " + op.Reason
}

// emitReduce generates a vector block of a reduction: per output tile, reduce each
// input tile along the reduced axis into a partial result and fold the partials into an
// accumulator (two accumulators alternate so no instruction reads and writes the same
// tile), then convert to the output dtype and store.
func emitReduce(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	red := reductions[op.Op]
	inT, outT := tg.Tensors[op.Inputs[0]].Type, tg.Tensors[op.Output].Type
	outer, r, inner := op.Problem[0], op.Problem[1], op.Problem[2]
	k := &reduceKernel{e: e, in: inT.DType, out: outT.DType, tr: op.Tile[0], tc: op.Tile[1],
		variants: map[[3]int]int{}, converts: map[[3]int]int{}}
	k.acc = red.accumulateType(inT.DType, outT.DType)
	src, dst := e.params[op.Inputs[0]], e.params[op.Output]
	if op.Attrs.Bool("lanes", false) {
		k.emitLaneReduce(red, op, tiles, src, dst)
		return
	}

	rowWise := inner == 1
	accRows, accCols, layout := 1, k.tc, isa.LayoutND
	if rowWise {
		accRows, accCols, layout = k.tr, 1, isa.LayoutDN // a compact column: one value per row
	}
	decl := func(name string, dt dtype.DType) int {
		t := e.tile(name, isa.Vec, dt, accRows, accCols)
		e.prog.Tiles[t].Layout = layout
		return t
	}
	part := decl("part", k.acc)
	accs := [2]int{decl("acc_0", k.acc), decl("acc_1", k.acc)}
	res := accs[0]
	outTile := -1
	if k.out != k.acc {
		outTile = decl("out", k.out)
	}

	slot := 0
	for _, t := range tiles {
		var steps, valid int
		var window func(i, v int) isa.GMView
		var store isa.GMView
		if rowWise { // tile t covers output rows [r0, r0+vr); loop over column tiles
			r0 := t / op.Grid[1] * k.tr
			valid = min(k.tr, outer-r0)
			steps = ceilDiv(r, k.tc)
			window = func(i, v int) isa.GMView {
				return isa.GMView{Param: src, Offset: r0*r + i*k.tc, Rows: v, Cols: min(k.tc, r-i*k.tc), RowStride: r, ColStride: 1}
			}
			store = isa.GMView{Param: dst, Offset: r0, Rows: valid, Cols: 1, RowStride: 1, ColStride: 1}
		} else { // tile t covers columns [c0, c0+vc) of outer index o; loop over row tiles
			o, c0 := t/op.Grid[1], t%op.Grid[1]*k.tc
			valid = min(k.tc, inner-c0)
			steps = ceilDiv(r, k.tr)
			window = func(i, v int) isa.GMView {
				return isa.GMView{Param: src, Offset: o*r*inner + i*k.tr*inner + c0, Rows: min(k.tr, r-i*k.tr), Cols: v, RowStride: inner, ColStride: 1}
			}
			store = isa.GMView{Param: dst, Offset: o*inner + c0, Rows: 1, Cols: valid, RowStride: inner, ColStride: 1}
		}
		if steps == 0 { // an empty reduction gives the identity
			res = accs[0]
			e.emit(isa.TEXPANDS, isa.TileOp(res), isa.ImmOp(red.identity))
		}
		for i := 0; i < steps; i++ {
			w := window(i, valid)
			x := k.load(slot%2, w.Rows, w.Cols, w)
			slot++
			into := part
			if i == 0 {
				into = accs[0]
			}
			instr := red.row
			if !rowWise {
				instr = red.col
			}
			e.emit(instr, isa.TileOp(into), isa.TileOp(x))
			res = accs[0]
			if i > 0 {
				from, to := accs[(i-1)%2], accs[i%2]
				e.emit(red.combine, isa.TileOp(to), isa.TileOp(from), isa.TileOp(part))
				res = to
			}
		}
		if outTile >= 0 {
			e.emit(isa.TCVT, isa.TileOp(outTile), isa.TileOp(res))
			res = outTile
		}
		e.emit(isa.TSTORE, isa.GMOp(store), isa.TileOp(res))
	}
}

// emitLaneReduce is a deterministic row reduction (deterministicReduceTile): each row
// tile loads the row in tiles of 64 columns, pads a last narrower one with the
// identity (-0 for sums, which adds exactly, 1 for products), combines them lane-wise
// (lane j takes columns j, j+64, ... in order, as one reduction instruction's lanes
// do) and reduces the 64 lanes with one row instruction, whose fold is the rest of the
// order.
func (k *reduceKernel) emitLaneReduce(red reduction, op *TileOp, tiles []int, src, dst int) {
	e, outer, r := k.e, op.Problem[0], op.Problem[1]
	pad := math.Copysign(0, -1)
	if red.identity == 1 {
		pad = 1
	}
	column := func(name string, dt dtype.DType) int {
		t := e.tile(name, isa.Vec, dt, k.tr, 1)
		e.prog.Tiles[t].Layout = isa.LayoutDN
		return t
	}
	// The lane tiles of each valid height (an edge row tile has fewer rows).
	laneTiles := map[[2]int]int{}
	laneTile := func(name string, which, rows int) int {
		key := [2]int{which, rows}
		if t, ok := laneTiles[key]; ok {
			return t
		}
		t := e.tile(fmt.Sprintf("%s_%d", name, rows), isa.Vec, k.acc, k.tr, reduceLaneWidth)
		e.prog.Tiles[t].ValidRows = rows
		laneTiles[key] = t
		return t
	}
	res := column("acc_0", k.acc)
	outTile := -1
	if k.out != k.acc {
		outTile = column("out", k.out)
	}
	slot := 0
	for _, t := range tiles {
		r0 := t / op.Grid[1] * k.tr
		valid := min(k.tr, outer-r0)
		acc := -1
		for i := 0; i*reduceLaneWidth < r; i++ {
			w := min(reduceLaneWidth, r-i*reduceLaneWidth)
			x := k.load(slot%2, valid, w, isa.GMView{Param: src, Offset: r0*r + i*reduceLaneWidth, Rows: valid, Cols: w, RowStride: r, ColStride: 1})
			slot++
			if w < reduceLaneWidth {
				padded := laneTile("lanes_pad", 2, valid)
				e.emit(isa.TFILLPAD, isa.TileOp(padded), isa.TileOp(x), isa.ImmOp(pad))
				x = padded
			}
			if acc < 0 {
				acc = x
				continue
			}
			to := laneTile(fmt.Sprintf("lanes%d", i%2), i%2, valid)
			e.emit(red.combine, isa.TileOp(to), isa.TileOp(acc), isa.TileOp(x))
			acc = to
		}
		if acc < 0 { // an empty row: the identity
			e.emit(isa.TEXPANDS, isa.TileOp(res), isa.ImmOp(red.identity))
		} else {
			e.emit(red.row, isa.TileOp(res), isa.TileOp(acc))
		}
		out := res
		if outTile >= 0 {
			e.emit(isa.TCVT, isa.TileOp(outTile), isa.TileOp(res))
			out = outTile
		}
		e.emit(isa.TSTORE, isa.GMOp(isa.GMView{Param: dst, Offset: r0, Rows: valid, Cols: 1, RowStride: 1, ColStride: 1}), isa.TileOp(out))
	}
}
