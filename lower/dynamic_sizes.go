package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
)

// Sizes known when a program runs. A symbolic executor serves a bucket of sizes with
// one program compiled for the bucket's bound, its inputs padded to it
// (session/buckets.go). Options.Dynamic names the param that holds the run's values of
// the symbols and the axes of the params whose valid extent they are; the
// dynamic-sizes pass then marks the kernels that compute only the valid rows of their
// output (TileOp.Dynamic): they read the size into a scalar register and derive from
// it their count of output tiles, each block's share of them and the valid rows of
// the edge tile (codegen_dynamic_matmul.go), so that a run costs what its size needs
// rather than what the bound's padding costs.
//
// A kernel that stays padded reads every position of its inputs, so whatever produces
// them must write every position: being padded spreads from a kernel to the producers
// of everything it reads. A dynamic kernel reads only the valid rows of its inputs,
// so it may follow kernels of either kind.

// DynamicSizes tells the compiler which sizes of a graph are known only when it runs.
type DynamicSizes struct {
	// Param is the graph param (by position) holding the run's value of each symbol,
	// one int32 per symbol in the order of Symbols.
	Param   int
	Symbols []string
	// Extents gives, per graph param (by position) and axis, the index in Symbols of
	// the symbol whose run value is the axis's valid extent (the leading positions are
	// valid, the others padding), or -1 for an axis valid whole. Params past its end
	// are valid whole.
	Extents [][]int
}

// String is the sizes' part of a compile-cache key.
func (d *DynamicSizes) String() string {
	if d == nil {
		return ""
	}
	return fmt.Sprintf("param=%d;symbols=%v;extents=%v", d.Param, d.Symbols, d.Extents)
}

// DynamicRows makes a tile op compute only the first rows of its output, as many as
// element Index of the int32 tensor Sizes holds when the program runs.
type DynamicRows struct {
	Sizes int `json:"sizes"`
	Index int `json:"index"`
}

// checkDynamicRows says what is wrong with op's dynamic rows ("" when nothing is): a
// matmul of one matrix, K not split, reading its row count from an int32 input.
func checkDynamicRows(tensors []GMTensor, op *TileOp) string {
	d := op.Dynamic
	if d == nil {
		return ""
	}
	if op.Kind != TileMatmul && op.Kind != TileMatmulEpilogue || op.Problem[0] != 1 || op.Grid[3] != 1 {
		return fmt.Sprintf("dynamic rows are for matmuls of one matrix with K whole, not a %s op of problem %v and grid %v", op.Kind, op.Problem, op.Grid)
	}
	if d.Sizes < 0 || d.Sizes >= len(tensors) || tensors[d.Sizes].Role != RoleInput || tensors[d.Sizes].Type.DType != dtype.Int32 {
		return fmt.Sprintf("the sizes of dynamic rows must be an int32 input tensor, not t%d", d.Sizes)
	}
	if n := tensors[d.Sizes].Type.Shape.NumElements(); d.Index < 0 || d.Index >= n {
		return fmt.Sprintf("dynamic rows read element %d of t%d, which has %d", d.Index, d.Sizes, n)
	}
	return ""
}

// extents is what extent inference knows of a tensor's valid region: per axis the
// index of the symbol whose value is its valid extent, or -1 for an axis valid whole
// (size-1 axes always are). known is false when the valid region is not such a box,
// or the inference does not follow the kernel that makes it.
type extents struct {
	axes  []int
	known bool
}

func wholeExtents(rank int) extents {
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = -1
	}
	return extents{axes: axes, known: true}
}

// dynamic reports whether some axis has a valid extent known only at run time.
func (x extents) dynamic() bool {
	for _, a := range x.axes {
		if a >= 0 {
			return true
		}
	}
	return false
}

// runDynamicSizes marks the tile ops that compute only their valid rows.
func runDynamicSizes(c *compilation) error {
	d := c.opts.Dynamic
	if d == nil {
		return nil
	}
	tg := c.tile
	if d.Param < 0 || d.Param >= len(tg.Params) {
		return core.Errorf(core.InternalError, "dynamic sizes in param %d, but the graph has %d params", d.Param, len(tg.Params))
	}
	sizes := tg.Params[d.Param]
	if t := tg.Tensors[sizes].Type; t.DType != dtype.Int32 || t.Shape.NumElements() != len(d.Symbols) {
		return core.Errorf(core.InternalError, "dynamic sizes param %d is %s, not int32[%d]", d.Param, t, len(d.Symbols))
	}
	ext := inferExtents(tg, d)
	vectors := c.chip.VectorCores / max(c.chip.CubeCores, 1)
	chosen := make([]int, len(tg.Ops)) // symbol index of the op's dynamic rows, or -1
	for i, op := range tg.Ops {
		chosen[i] = dynamicRowsOf(tg, op, ext, vectors)
	}
	// Padded kernels read whole inputs: their producers must write them whole.
	producers := map[int][]int{}
	for i, op := range tg.Ops {
		producers[root(tg.Tensors, op.Output)] = append(producers[root(tg.Tensors, op.Output)], i)
	}
	var padded []int
	for i := range tg.Ops {
		if chosen[i] < 0 {
			padded = append(padded, i)
		}
	}
	for len(padded) > 0 {
		i := padded[len(padded)-1]
		padded = padded[:len(padded)-1]
		for _, in := range tg.Ops[i].Inputs {
			for _, p := range producers[root(tg.Tensors, in)] {
				if chosen[p] >= 0 {
					chosen[p] = -1
					padded = append(padded, p)
				}
			}
		}
	}
	for i, op := range tg.Ops {
		op.Dynamic = nil
		if chosen[i] >= 0 {
			op.Dynamic = &DynamicRows{Sizes: sizes, Index: chosen[i]}
		}
	}
	return nil
}

// dynamicRowsOf is the index of the symbol whose value is the valid row count of op's
// output when op can compute only those rows, else -1. That is a matmul (fused with
// an epilogue or not) of one matrix, K not split, whose rows are the only axis of its
// output with a valid extent known at run time and whose operands are padded along
// no other axis; an epilogue must split each tile between the vector cores and
// compute nothing from positions.
func dynamicRowsOf(tg *TileGraph, op *TileOp, ext []extents, vectors int) int {
	if op.Kind != TileMatmul && op.Kind != TileMatmulEpilogue || op.Problem[0] != 1 || op.Grid[3] != 1 {
		return -1
	}
	out := ext[op.Output]
	r := len(out.axes)
	if !out.known || r < 2 || tg.Tensors[op.Output].Alias != 0 {
		return -1
	}
	sym := out.axes[r-2]
	for ax, s := range out.axes {
		if s >= 0 && ax != r-2 {
			return -1
		}
	}
	if sym < 0 {
		return -1
	}
	a, b := ext[op.Inputs[0]], ext[op.Inputs[1]]
	if !a.known || !b.known || b.dynamic() {
		return -1
	}
	rowAxis := len(a.axes) - 2
	if op.Attrs.Bool("transpose_a", false) {
		rowAxis++
	}
	for ax, s := range a.axes {
		if s >= 0 && ax != rowAxis {
			return -1
		}
	}
	if op.Kind == TileMatmulEpilogue {
		if vectors < 1 || epilogueParts(op.Tile[0], vectors) != vectors {
			return -1
		}
		body, err := core.FusedBody(op.Attrs)
		if err != nil {
			return -1
		}
		for _, n := range body.Nodes {
			if positionalOps[n.Op] {
				return -1
			}
		}
		for _, in := range op.Inputs[2:] {
			x := ext[in]
			if !x.known {
				return -1
			}
			for ax, s := range x.axes { // right-aligned with the output
				if s >= 0 && ax+r-len(x.axes) != r-2 {
					return -1
				}
			}
		}
	}
	return sym
}

// positionalOps compute from the positions of their elements (vecBody's r0, c0), which
// a tile of dynamic rows knows only in registers.
var positionalOps = map[string]bool{"iota": true, "random_uniform": true}

// inferExtents gives the valid extents of every tensor of tg, from those d gives its
// params, through aliases and the kernels whose rules it knows: matmuls (rows from
// A, columns from B, batch axes from either), and elementwise and row kernels (numpy
// broadcasting, which keeps-dims reductions along the last axis follow too), and
// attention (the queries' rows).
func inferExtents(tg *TileGraph, d *DynamicSizes) []extents {
	out := make([]extents, len(tg.Tensors))
	done := make([]bool, len(tg.Tensors))
	producer := map[int]int{}
	for i, op := range tg.Ops {
		if _, dup := producer[op.Output]; dup {
			producer[op.Output] = -1 // written in parts
		} else {
			producer[op.Output] = i
		}
	}
	param := map[int]int{}
	for i, t := range tg.Params {
		param[t] = i
	}
	var of func(t int) extents
	of = func(t int) extents {
		if done[t] {
			return out[t]
		}
		x := tg.Tensors[t]
		shape := x.Type.Shape
		var e extents
		switch p, isParam := param[t]; {
		case isParam:
			e = wholeExtents(len(shape))
			if p < len(d.Extents) && len(d.Extents[p]) == len(shape) {
				copy(e.axes, d.Extents[p])
			}
		case x.Alias != 0:
			src := x.Alias - 1
			if x.View != nil {
				e = viewExtents(tg.Tensors[src].Type.Shape, of(src), *x.View, shape)
			} else {
				e = reshapeExtents(tg.Tensors[src].Type.Shape, of(src), shape)
			}
		default:
			if i, ok := producer[t]; ok && i >= 0 {
				op := tg.Ops[i]
				ins := make([]extents, len(op.Inputs))
				for k, in := range op.Inputs {
					ins[k] = of(in)
				}
				e = opExtents(tg, op, ins)
			}
		}
		for ax, n := range shape { // a size-1 axis is valid whole
			if e.known && n == 1 {
				e.axes[ax] = -1
			}
		}
		out[t], done[t] = e, true
		return e
	}
	for t := range tg.Tensors {
		of(t)
	}
	return out
}

// reshapeExtents carries the extents of a contiguous tensor of shape from to its
// reshape to shape to when the reshape only adds or drops axes of size 1.
func reshapeExtents(from core.Shape, x extents, to core.Shape) extents {
	if !x.known {
		return extents{}
	}
	if !x.dynamic() {
		return wholeExtents(len(to))
	}
	var fromAxes, toAxes []int
	for ax, n := range from {
		if n != 1 {
			fromAxes = append(fromAxes, ax)
		}
	}
	for ax, n := range to {
		if n != 1 {
			toAxes = append(toAxes, ax)
		}
	}
	if len(fromAxes) != len(toAxes) {
		return extents{}
	}
	e := wholeExtents(len(to))
	for k, ax := range toAxes {
		if to[ax] != from[fromAxes[k]] {
			return extents{}
		}
		e.axes[ax] = x.axes[fromAxes[k]]
	}
	return e
}

// viewExtents carries the extents of a tensor of shape from to a strided view of it
// (an affine map of the view's index to the tensor's elements): each view axis that
// walks a whole axis of the tensor (the same stride and size) takes its extent. A
// view that starts past the first element, or walks only part of a padded axis, is
// not followed.
func viewExtents(from core.Shape, x extents, m affineMap, to core.Shape) extents {
	if !x.known {
		return extents{}
	}
	if !x.dynamic() {
		return wholeExtents(len(to))
	}
	if m.offset != 0 {
		return extents{}
	}
	strides := from.Strides()
	used := make([]bool, len(from))
	e := wholeExtents(len(to))
	for ax, n := range to {
		if n == 1 || m.strides[ax] == 0 {
			continue
		}
		found := false
		for j := range from {
			if !used[j] && strides[j] == m.strides[ax] && from[j] == n {
				used[j], found = true, true
				e.axes[ax] = x.axes[j]
				break
			}
		}
		if !found {
			return extents{}
		}
	}
	for j, s := range x.axes {
		if s >= 0 && !used[j] {
			return extents{}
		}
	}
	return e
}

// opExtents are the extents of op's output from those of its inputs.
func opExtents(tg *TileGraph, op *TileOp, ins []extents) extents {
	for _, x := range ins {
		if !x.known {
			return extents{}
		}
	}
	out := tg.Tensors[op.Output].Type.Shape
	switch op.Kind {
	case TileMatmul, TileMatmulEpilogue:
		if op.Grid[3] > 1 { // partial sums of K chunks, one plane each
			return extents{}
		}
		r := len(out)
		a, b := ins[0].axes, ins[1].axes
		e := wholeExtents(r)
		rowA, colB := len(a)-2, len(b)-1
		if op.Attrs.Bool("transpose_a", false) {
			rowA++
		}
		if op.Attrs.Bool("transpose_b", false) {
			colB--
		}
		e.axes[r-2], e.axes[r-1] = a[rowA], b[colB]
		batch := func(x []int, shape core.Shape) { // batch axes align from the right
			for ax := range r - 2 {
				if k := ax + len(x) - r; k >= 0 && shape[k] == out[ax] && x[k] >= 0 {
					e.axes[ax] = x[k]
				}
			}
		}
		batch(a, tg.Tensors[op.Inputs[0]].Type.Shape)
		batch(b, tg.Tensors[op.Inputs[1]].Type.Shape)
		if op.Kind == TileMatmulEpilogue {
			return broadcastExtents(tg, op.Inputs[2:], ins[2:], out, e)
		}
		return e
	case TileElementwise:
		if l := lowerings[op.Op]; l.maps != nil || l.partial || l.indirect {
			return extents{}
		}
	case TileRows:
	case TileAttention: // [batch..., l, ev]: the query rows' extents, from q
		q := ins[0].axes
		if op.Attrs.Bool("heads_last", false) || len(q) != len(out) {
			return extents{}
		}
		e := wholeExtents(len(out))
		copy(e.axes[:len(out)-1], q[:len(out)-1])
		return e
	default:
		return extents{}
	}
	return broadcastExtents(tg, op.Inputs, ins, out, wholeExtents(len(out)))
}

// broadcastExtents adds to e, the extents of a result of shape out, those of operands
// broadcast to it (numpy's rules: axes aligned from the right); an operand of higher
// rank, or two operands padded along one axis by different symbols, leave the
// result's extents unknown.
func broadcastExtents(tg *TileGraph, inputs []int, ins []extents, out core.Shape, e extents) extents {
	for k, x := range ins {
		shape := tg.Tensors[inputs[k]].Type.Shape
		if len(shape) > len(out) {
			return extents{}
		}
		for ax, s := range x.axes {
			o := ax + len(out) - len(shape)
			if s < 0 || shape[ax] != out[o] {
				continue
			}
			if e.axes[o] >= 0 && e.axes[o] != s {
				return extents{}
			}
			e.axes[o] = s
		}
	}
	return e
}
