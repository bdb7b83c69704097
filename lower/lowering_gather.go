package lower

import (
	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// Gathers (take_along_axis, index_select) read x at positions an index tensor holds.
// Output element I reads x at a(I) + j*stride_axis, where a is affine in I (x's
// strides with the gathered axis left out, 0 on axes x broadcasts along) and j the
// index for I, normalised from [-n, n). The body builds the addresses of a tile and
// gathers them from GM with MGATHER.

// gatherSourceMap is the affine part of the addresses: x's strides on the output's
// axes, 0 on the gathered axis and on axes where x has size 1.
func gatherSourceMap(x, out core.Shape, axis int) affineMap {
	st := x.Strides()
	m := affineMap{strides: make([]int, len(out))}
	for k := range out {
		if k != axis && x[k] != 1 {
			m.strides[k] = st[k]
		}
	}
	return m
}

// gatherAxis resolves an op's axis attribute against the rank.
func gatherAxis(attrs core.Attrs, def, rank int) int {
	a := attrs.Int("axis", def)
	if a < 0 {
		a += rank
	}
	return a
}

// maxGatherElems bounds the tensors a gather reads: addresses are built partly in fp32,
// which holds every integer below 2^24 exactly.
const maxGatherElems = 1 << 24

func checkGatherSize(in []core.TensorType, _ core.TensorType) *core.Error {
	if n := in[0].Shape.NumElements(); n >= maxGatherElems {
		return core.Errorf(core.CompileError, "gather from a tensor of %d elements: the device's gather addresses reach %d elements", n, maxGatherElems).
			Suggest("split the source tensor, or gather from a slice of it")
	}
	return nil
}

var gatherOps = []isa.Opcode{isa.TCI, isa.TCOLEXPAND, isa.TROWEXPANDADD, isa.TCMPS, isa.TADDS, isa.TSEL, isa.TAND, isa.TMULS, isa.TADD, isa.TSELS, isa.MGATHER, isa.TMOV}

func init() {
	idxTypes := func(in []dtype.DType, out dtype.DType) []dtype.DType { return []dtype.DType{in[0], dtype.Int32} }
	lowerings["take_along_axis"] = lowering{kind: TileElementwise, core: isa.Vector, indirect: true, body: gatherBody,
		computeIn: idxTypes, colAlign: 256, extraLive: scratch(6), uses: gatherOps, check: checkGatherSize,
		maps: func(in []core.Shape, out core.Shape, attrs core.Attrs) []affineMap {
			axis := gatherAxis(attrs, -1, len(out))
			return []affineMap{gatherSourceMap(in[0], out, axis), broadcastMap(in[1], out)}
		}}
	lowerings["index_select"] = lowering{kind: TileElementwise, core: isa.Vector, indirect: true, body: gatherBody,
		computeIn: idxTypes, colAlign: 256, extraLive: scratch(6), uses: gatherOps, check: checkGatherSize,
		maps: func(in []core.Shape, out core.Shape, attrs core.Attrs) []affineMap {
			axis := gatherAxis(attrs, 0, len(out))
			idx := affineMap{strides: make([]int, len(out))}
			idx.strides[axis] = 1 // the 1-d indices run along the gathered axis
			return []affineMap{gatherSourceMap(in[0], out, axis), idx}
		}}
}

// gatherBody gathers the tile's elements of x: addresses a + j*stride (see above),
// with indices outside [-n, n) sent past the end of x so that MGATHER reports them
// instead of reading a wrong element.
func gatherBody(b *vecBody, dst int, srcs []int) {
	j := srcs[1]
	axisLen, axisStride := b.gatherLen, b.gatherStride
	w := b.source.window(b.o, b.r0, b.c0, 1, 1) // the affine address of the tile's first element and its strides
	col := b.tile("g_col", dtype.Int32, 1, b.tc)
	spread := b.tile("g_spread", dtype.Int32, b.tr, b.tc)
	rowF := b.tile("g_rowf", dtype.Float32, b.tr, 8)
	row := b.tile("g_row", dtype.Int32, b.tr, 8)
	addr := b.tile("g_addr", dtype.Int32, b.tr, b.tc)
	b.emit(isa.TCI, isa.ModeNone, col, 0.0, float64(w.ColStride))
	b.emit(isa.TCOLEXPAND, isa.ModeNone, spread, col)
	b.emit(isa.TCI, isa.ModeNone, rowF, float64(w.Offset), float64(w.RowStride)/8) // column 0 steps one row stride per row
	b.emit(isa.TCVT, isa.ModeNone, row, rowF)
	b.emit(isa.TROWEXPANDADD, isa.ModeNone, addr, spread, row)

	neg := b.mask()
	shifted := b.tile("g_shifted", dtype.Int32, b.tr, b.tc)
	jn := b.tile("g_index", dtype.Int32, b.tr, b.tc)
	b.emit(isa.TCMPS, isa.CmpLT, neg, j, 0.0)
	b.emit(isa.TADDS, isa.ModeNone, shifted, j, float64(axisLen))
	b.emit(isa.TSEL, isa.ModeNone, jn, neg, shifted, j)
	below := b.tile("g_below", dtype.Int8, b.tr, b.tc/8)
	atLeast0 := b.tile("g_nonneg", dtype.Int8, b.tr, b.tc/8)
	inRange := b.tile("g_inrange", dtype.Int8, b.tr, b.tc/8)
	b.emit(isa.TCMPS, isa.CmpLT, below, jn, float64(axisLen))
	b.emit(isa.TCMPS, isa.CmpGE, atLeast0, jn, 0.0)
	b.emit(isa.TAND, isa.ModeNone, inRange, below, atLeast0)
	b.emit(isa.TMULS, isa.ModeNone, shifted, jn, float64(axisStride))
	b.emit(isa.TADD, isa.ModeNone, jn, addr, shifted)
	b.emit(isa.TSELS, isa.ModeNone, addr, inRange, jn, float64(b.sourceElems))

	whole := isa.GMView{Param: b.source.param, Rows: 1, Cols: b.sourceElems, RowStride: b.sourceElems, ColStride: 1}
	got := b.e.variant("g_gathered", b.e.prog.Tiles[dst].DType, b.tr, b.tc, b.vr, b.vc)
	b.e.emit(isa.MGATHER, isa.TileOp(got), isa.GMOp(whole), isa.TileOp(addr))
	b.emit(isa.TMOV, isa.ModeNone, dst, got)
}
