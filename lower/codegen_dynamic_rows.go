package lower

import "pypto/isa"

// Row kernels whose rows are known when the program runs (TileOp.Dynamic). Block b of
// nb runs the tiles b, b+nb, b+2nb, ... of those the run's rows fill, as the static
// kernel deals them (dealTiles: round-robin), in groups of slots tiles (groupedLoop:
// the load slots rotate by tile, so each tile of a group keeps its slot):
//
//	sld rows, sizes[i];  tiles = ceil(rows/tr);  count = ceil((tiles - b) / nb)
//	loop g, ceil(count / slots)
//	  per slot s:  tile b + nb*(g*slots + s), its rows max(0, min(tr, rows - r0)),
//	               read and written through registers (none past the last tile)
//	endloop
//
// The tile's steps are the static kernel's, so the values have the same bits.

// dynamicRowsKernel reports whether the row kernel of op can loop over rows known at
// run time: rows that are a symbol's alone (one leading axis of the row space larger
// than 1), not chunked, no input repeating along the rows (period).
func dynamicRowsKernel(tg *TileGraph, op *TileOp, ext []extents) int {
	if op.Kind != TileRows {
		return -1
	}
	p, err := rowsPlanOf(op.Attrs)
	if err != nil || op.Tile[1] < p.cols {
		return -1
	}
	for _, per := range p.period {
		if per > 0 {
			return -1
		}
	}
	for _, n := range p.body.Nodes {
		if positionalOps[n.Op] {
			return -1
		}
	}
	out := ext[op.Output]
	shape := tg.Tensors[op.Output].Type.Shape
	if !out.known || len(shape) != len(p.space) || len(shape) < 2 || tg.Tensors[op.Output].Alias != 0 {
		return -1
	}
	sym, wide := -1, 0
	for ax := range len(shape) - 1 {
		if shape[ax] != p.space[ax] {
			return -1
		}
		if shape[ax] > 1 {
			wide++
			sym = out.axes[ax]
		}
	}
	if wide != 1 {
		return -1
	}
	return sym
}

// emitDynamicRows is block b (of nb) of a row kernel with dynamic rows.
func emitDynamicRows(e *emitter, tg *TileGraph, op *TileOp, b, nb int) {
	k := rowsKernelOf(e, op)
	p := k.p
	tr, slots := k.tr, k.slots
	reg, imm := isa.RegOp, func(v int) isa.Operand { return isa.ImmOp(float64(v)) }
	rows, tiles, count := e.reg("rows"), e.reg("tiles"), e.reg("count")
	r0, off, vr := e.reg("r0"), e.reg("off"), e.reg("vr")
	e.emit(isa.SLD, reg(rows), isa.GMOp(isa.GMView{Param: e.params[op.Dynamic.Sizes], Offset: op.Dynamic.Index, Rows: 1, Cols: 1, RowStride: 1, ColStride: 1}))
	e.emit(isa.SADD, reg(tiles), reg(rows), imm(tr-1))
	e.emit(isa.SDIV, reg(tiles), reg(tiles), imm(tr))
	e.emit(isa.SSUB, reg(count), reg(tiles), imm(b-nb+1))
	e.emit(isa.SDIV, reg(count), reg(count), imm(nb))
	e.emit(isa.SMAX, reg(count), reg(count), imm(0))
	k.r0, k.vr = 0, min(tr, p.rows) // the windows' static bounds
	k.offReg, k.rowReg, k.vrReg = isa.UseReg(off), isa.UseReg(r0), isa.UseReg(vr)
	named := map[string]int{}
	regOf := func(name string) int {
		if _, ok := named[name]; !ok {
			named[name] = e.reg(name)
		}
		return named[name]
	}
	groupedLoop(e, regOf, count, slots, nil, func(s int, j isa.RegRef) {
		e.emit(isa.SMUL, reg(r0), reg(int(j)-1), imm(nb*tr))
		e.emit(isa.SADD, reg(r0), reg(r0), imm(b*tr))
		e.emit(isa.SMUL, reg(off), reg(r0), imm(p.cols))
		e.emit(isa.SSUB, reg(vr), reg(rows), reg(r0))
		e.emit(isa.SMIN, reg(vr), reg(vr), imm(tr))
		e.emit(isa.SMAX, reg(vr), reg(vr), imm(0)) // a tile past the last: no rows
		k.emitTile(s, 0, k.vr)
	})
}
