package lower

import (
	"fmt"
	"sort"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// index_put and scatter are written in place like slice_update (lowering_update.go:
// the result takes x's bytes when x is donated or read by nothing else, else x is
// copied first). Their task reads the values and the indices and scatters each value
// into the result with MSCATTER (MSCATTER.add when the writes accumulate), so a run
// moves O(values) bytes, never the whole of x.
//
// The work is tiled over an iteration space: scatter's index shape; index_put's index
// shape when it indexes every axis of x ("elements"), else [positions, T] with T the
// trailing elements one index names ("rows"). Each tile's values go to one GM window
// of the result, which holds every element the tile can write: the index decides the
// position along the scattered axis, the tile's place the rest. The destination of
// each element is its flat index in that window, built on the vector unit from the
// tile's coordinates and the index values; an index outside its axis gets a
// destination past the window, which MSCATTER refuses, and the failure is explained
// by the reference (run_errors.go), which names the index and the user's line.
//
// Tiles whose windows can overlap go to one block, in tile order, so writes to one
// element happen in the order of the index elements (the last wins; sums add in that
// order, as the reference adds) and blocks of the task never share written bytes.

func init() {
	lowerings["index_put"] = lowering{kind: TileScatter, core: isa.Vector, check: func(in []core.TensorType, _ core.TensorType) *core.Error {
		return checkScatterIndices(in[2:])
	}}
	lowerings["scatter"] = lowering{kind: TileScatter, core: isa.Vector, check: func(in []core.TensorType, _ core.TensorType) *core.Error {
		return checkScatterIndices(in[1:2])
	}}
}

var scatterInstructions = []isa.Opcode{isa.TLOAD, isa.TCI, isa.TCOLEXPAND, isa.TCVT, isa.TROWEXPANDADD, isa.TCMPS, isa.TADDS,
	isa.TSEL, isa.TAND, isa.TMULS, isa.TSELS, isa.TADD, isa.TEXPANDS, isa.MSCATTER, isa.TSTORE, isa.SLD, isa.SMOV, isa.LOOP, isa.ENDLOOP, isa.SSUB, isa.SMAX,
	isa.SMIN, isa.SMUL, isa.SADD}

// maxScatterWindow bounds a tile's window: destinations are built partly in fp32
// (the row part, as the gathers build theirs), exact below 2^24.
const maxScatterWindow = 1 << 24

func checkScatterIndices(idx []core.TensorType) *core.Error {
	for i, t := range idx {
		if t.DType != dtype.Int32 {
			return core.Errorf(core.CompileError, "index %d is %s; the device reads indices as int32", i, t.DType.LongName()).
				Suggest("cast the indices: idx.astype(p.int32) (p.index_put and p.scatter do)")
		}
	}
	return nil
}

// scatterMode is how a scatter op's iteration space and windows are laid out.
type scatterMode int

const (
	scatterAlongCols scatterMode = iota // scatter along the last axis: a window per (outer, row tile)
	scatterAlongRows                    // scatter along the second-last axis: a window per (outer, col tile)
	scatterAlongLead                    // scatter along an earlier axis: a window per (outer without dim, row tile)
	putElements                         // index_put of every axis: one window, all of x
	putRows                             // index_put of leading axes: a window per col tile
)

// scatterPlan is what tiling, dealing and code generation need of a scatter op.
type scatterPlan struct {
	mode     scatterMode
	iter     core.Shape // the iteration space
	x        core.Shape
	dim, n   int       // scatter: the scattered axis and its size
	src      affineMap // the values, seen from the iteration space
	indices  []int     // positions in op.Inputs of the index tensors
	idxMaps  []affineMap
	idxLens  []int // the size of the axis each index runs along (range check)
	idxRows  []int // putElements: x's stride per index; putRows: rows of [N, T] per index
	wrap     bool  // negative indices count from the end (index_put)
	add      bool
	rowElems int // putRows: T
}

// scatterPlanOf derives the plan from the op and its tensors.
func scatterPlanOf(op *TileOp, tensors []GMTensor) scatterPlan {
	x := tensors[op.Inputs[0]].Type.Shape
	p := scatterPlan{x: x}
	if op.Op == "scatter" {
		idx := tensors[op.Inputs[1]].Type.Shape
		src := tensors[op.Inputs[2]].Type.Shape
		p.iter, p.indices = idx, []int{1}
		p.dim, _ = normDim(op.Attrs.Int("dim", 0), len(x))
		p.n = x[p.dim]
		p.src = affineMap{strides: src.Strides()}
		p.idxMaps, p.idxLens = []affineMap{reshapeMap(idx)}, []int{p.n}
		p.add = op.Attrs.Str("reduce", "none") == "add"
		switch r := len(x); {
		case p.dim == r-1:
			p.mode = scatterAlongCols
		case p.dim == r-2:
			p.mode = scatterAlongRows
		default:
			p.mode = scatterAlongLead
		}
		return p
	}
	k := len(op.Inputs) - 2
	b := tensors[op.Inputs[2]].Type.Shape
	p.wrap, p.add = true, op.Attrs.Bool("accumulate", false)
	p.idxLens = append([]int(nil), x[:k]...)
	for j := range k {
		p.indices = append(p.indices, 2+j)
	}
	if k == len(x) {
		p.mode, p.iter = putElements, b
		p.idxRows = x.Strides()
	} else {
		p.mode, p.rowElems = putRows, x[k:].NumElements()
		p.iter = core.Shape{b.NumElements(), p.rowElems}
		p.idxRows = x[:k].Strides()
	}
	p.src = reshapeMap(p.iter)
	for range k {
		p.idxMaps = append(p.idxMaps, reshapeMap(p.iter))
	}
	return p
}

func normDim(d, rank int) (int, bool) {
	if d < 0 {
		d += rank
	}
	return d, d >= 0 && d < rank
}

// scatterWindow is where one tile's values go: the window of the result and, for the
// tile's element (r, c) with index values j, the flat destination in it,
// rowCoef*r + colCoef*c + sum(j * idxCoef).
type scatterWindow struct {
	view             isa.GMView
	rowCoef, colCoef int
	idxCoef          []int
}

// window gives the tile at grid point (o, rt, ct), of valid size vr x vc in tiles of
// tr x tc, its window, and the key that tiles whose windows may overlap share.
func (p scatterPlan) window(o, rt, ct, tr, tc, vr, vc int, grid []int) (scatterWindow, int) {
	xs := p.x.Strides()
	r0, c0 := rt*tr, ct*tc
	var outer []int
	if len(p.iter) > 2 {
		outer = p.iter[:len(p.iter)-2]
	}
	base, keyOuter := 0, 0 // the window's offset from the leading axes; o without dim
	for ax, rest := len(outer)-1, o; ax >= 0; ax-- {
		c := rest % outer[ax]
		rest /= outer[ax]
		if p.mode == scatterAlongLead && ax == p.dim {
			continue
		}
		base += c * xs[ax]
	}
	for ax, rest, scale := len(outer)-1, o, 1; ax >= 0; ax-- {
		if !(p.mode == scatterAlongLead && ax == p.dim) {
			keyOuter += (rest % outer[ax]) * scale
			scale *= outer[ax]
		}
		rest /= outer[ax]
	}
	rowStride := p.n // the stride of the iteration space's rows in x (rank 1: one row)
	if len(p.x) >= 2 {
		rowStride = xs[len(p.x)-2]
	}
	var w scatterWindow
	switch p.mode {
	case scatterAlongCols: // rows r0.. of the slab, every column
		w.view = isa.GMView{Offset: base + r0*rowStride, Rows: vr, Cols: p.n, RowStride: rowStride, ColStride: 1}
		w.rowCoef, w.idxCoef = p.n, []int{1}
		return w, o*grid[1] + rt
	case scatterAlongRows: // every row of the slab, columns c0..
		w.view = isa.GMView{Offset: base + c0, Rows: p.n, Cols: vc, RowStride: rowStride, ColStride: 1}
		w.colCoef, w.idxCoef = 1, []int{vc}
		return w, o*grid[2] + ct
	case scatterAlongLead: // along dim, the stretch of each slab from (r0, c0) to (r0 + vr - 1, c0 + vc - 1)
		cols := (vr-1)*rowStride + vc
		w.view = isa.GMView{Offset: base + r0*rowStride + c0, Rows: p.n, Cols: cols, RowStride: xs[p.dim], ColStride: 1}
		w.rowCoef, w.colCoef, w.idxCoef = rowStride, 1, []int{cols}
		return w, keyOuter*grid[1] + rt
	case putElements: // all of x
		n := p.x.NumElements()
		w.view = isa.GMView{Rows: 1, Cols: n, RowStride: n, ColStride: 1}
		w.idxCoef = p.idxRows
		return w, 0
	}
	// putRows: the rows of [N, T], columns c0..
	w.view = isa.GMView{Offset: c0, Rows: p.x[:len(p.indices)].NumElements(), Cols: vc, RowStride: p.rowElems, ColStride: 1}
	w.colCoef = 1
	for _, rows := range p.idxRows {
		w.idxCoef = append(w.idxCoef, rows*vc)
	}
	return w, ct
}

// tileAt is grid point t of op: its outer index, row and column tile, and valid size.
func tileAt(op *TileOp, t int) (o, rt, ct, vr, vc int) {
	per := op.Grid[1] * op.Grid[2]
	o, rt, ct = t/per, (t%per)/op.Grid[2], t%op.Grid[2]
	return o, rt, ct, min(op.Tile[0], op.Problem[1]-rt*op.Tile[0]), min(op.Tile[1], op.Problem[2]-ct*op.Tile[1])
}

// tileWindow is p.window of grid point t of op.
func (p scatterPlan) tileWindow(op *TileOp, t int) (scatterWindow, int) {
	o, rt, ct, vr, vc := tileAt(op, t)
	return p.window(o, rt, ct, op.Tile[0], op.Tile[1], vr, vc, op.Grid)
}

// scatterTiling sizes a scatter op's tiles over its iteration space: the values, the
// index and destination tiles (int32) and their scratch, double-buffered.
func scatterTiling(op *TileOp, tensors []GMTensor, chip *device.Chip) error {
	p := scatterPlanOf(op, tensors)
	op.Problem = elementwiseProblem(p.iter)
	size := tensors[op.Output].Type.DType.Size()
	t, reason, err := elementwiseTile(chip, min(size, 1), 4, 6, 0, op.Problem[1], op.Problem[2])
	if err != nil {
		return err
	}
	// Windows are per row tile or per column tile (see window): narrower tiles spread
	// the work over the cores, down to 256 elements (a tile's fixed costs), or for row
	// stores to the narrowest row a store still pays for.
	cores := chip.Cores(isa.Vector)
	k := len(p.indices)
	rowStores := p.mode == putRows && rowStoresPay(chip, k, min(t[1], op.Problem[2]), size)
	switch {
	case rowStores:
		narrowest := roundUp(k*chip.ScalarLoadCycles*chip.UBToGMBytesPerCycle/(32-min(size, 31))+1, 32)
		t[0], t[1] = 1, min(t[1], max(narrowest, roundUp(ceilDiv(op.Problem[2], cores), 32)))
		reason = "one row of values per tile, stored where its indices say (rows wider than an element scatter pays for); " + reason
	case p.mode == scatterAlongRows || p.mode == putRows:
		t[1] = min(t[1], max(256, roundUp(ceilDiv(op.Problem[2], cores), 32)))
	case p.mode == scatterAlongCols || p.mode == scatterAlongLead:
		t[0] = min(t[0], max(1, 256/t[1], ceilDiv(op.Problem[1], cores)))
	}
	op.Tile = append(t, scatterWrites(rowStores))
	op.Grid = tileGrid(TileScatter, op.Problem, t)
	for _, tile := range []int{0, op.Grid[2] - 1} { // the widest windows are the first and last columns'
		if w, _ := p.tileWindow(op, tile); !rowStores && w.view.Rows*w.view.Cols > maxScatterWindow {
			return core.Errorf(core.CompileError, "%s: a tile writes a window of %d elements of x; the device's scatter addresses reach %d", op.Op, w.view.Rows*w.view.Cols, maxScatterWindow).
				Suggest("split x, or scatter into a slice of it")
		}
	}
	if op.Reason == "" {
		op.Reason = fmt.Sprintf("in place: scatters the values only (%s); %s", describeScatterMode(p.mode), reason)
	}
	return nil
}

// rowStoresPay reports whether index_put's rows of cols elements of size bytes are
// cheaper stored one row at a time than scattered element by element, by the chip's
// own costs: a row store waits for its k indices (SLD, each ScalarLoadCycles) and
// moves the row's bytes; MSCATTER moves a 32-byte transfer per element.
func rowStoresPay(chip *device.Chip, k, cols, size int) bool {
	rowStore := k*chip.ScalarLoadCycles + ceilDiv(cols*size, chip.UBToGMBytesPerCycle)
	elementScatter := ceilDiv(cols*32, chip.UBToGMBytesPerCycle)
	return rowStore < elementScatter
}

// A scatter op's tile is [tr, tc, writes]: writes says how a tile's values are
// written, by one MSCATTER (writeElements) or row by row (writeRows).
const (
	writeElements = 1
	writeRows     = 2
)

func scatterWrites(rowStores bool) int {
	if rowStores {
		return writeRows
	}
	return writeElements
}

// scatterBlocks deals a scatter op's tiles to at most nb blocks: tiles sharing a
// window key stay together, in tile order.
func scatterBlocks(op *TileOp, tensors []GMTensor, nb int) [][]int {
	p := scatterPlanOf(op, tensors)
	group := map[int]int{}
	var groups [][]int
	for t := 0; t < op.NumTiles(); t++ {
		_, key := p.tileWindow(op, t)
		g, ok := group[key]
		if !ok {
			g = len(groups)
			group[key] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], t)
	}
	blocks := make([][]int, min(nb, len(groups)))
	for g, tiles := range groups {
		blocks[g%len(blocks)] = append(blocks[g%len(blocks)], tiles...)
	}
	for _, b := range blocks {
		sort.Ints(b)
	}
	return blocks
}

func describeScatterMode(m scatterMode) string {
	return [...]string{"along the last axis", "along the second-last axis", "along a leading axis", "every axis indexed", "rows of the trailing axes"}[m]
}
