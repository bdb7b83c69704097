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
// the edge tile (codegen_dynamic_matmul.go, codegen_dynamic_rows.go), so that a run
// costs what its size needs rather than what the bound's padding costs. Which
// candidates may stay dynamic is keepPadded's question (the positions they leave
// unwritten must not reach an axis some op combines).

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
	// Masks are the graph params (by position) that are bool masks, true exactly at
	// the valid positions of the axis to which Extents give a symbol: the padded
	// program's selects before a softmax over keys and of a contracted operand.
	Masks []int
}

// String is the sizes' part of a compile-cache key.
func (d *DynamicSizes) String() string {
	if d == nil {
		return ""
	}
	return fmt.Sprintf("param=%d;symbols=%v;extents=%v;masks=%v", d.Param, d.Symbols, d.Extents, d.Masks)
}

// DynamicRows makes a tile op compute only the first rows of its output, as many as
// element Index of the int32 tensor Sizes holds when the program runs.
type DynamicRows struct {
	Sizes int `json:"sizes"`
	Index int `json:"index"`
	// CutK says that a matmul's K (the axis it contracts) is valid up to element
	// KIndex of Sizes: the windows of its K stages stop there, the rest of each tile
	// zero-filled, so that the positions past it (which the padded program makes
	// exact zeros of, core.PlanPadding) are never read.
	CutK   bool `json:"cut_k,omitempty"`
	KIndex int  `json:"k_index,omitempty"`
}

// checkDynamicRows says what is wrong with op's dynamic rows ("" when nothing is): a
// matmul of one matrix, K not split, reading its row count from an int32 input.
func checkDynamicRows(tensors []GMTensor, op *TileOp) string {
	d := op.Dynamic
	if d == nil {
		return ""
	}
	if op.Kind != TileRows && op.Kind != TileAttention && (op.Kind != TileMatmul && op.Kind != TileMatmulEpilogue || op.Problem[0] != 1 || op.Grid[3] != 1) {
		return fmt.Sprintf("dynamic rows are for row kernels, attention and matmuls of one matrix with K whole, not a %s op of problem %v and grid %v", op.Kind, op.Problem, op.Grid)
	}
	if op.Kind == TileAttention && op.Attrs.Bool("heads_last", false) {
		return "an attention that stores its heads last has no dynamic rows"
	}
	if d.Sizes < 0 || d.Sizes >= len(tensors) || tensors[d.Sizes].Role != RoleInput || tensors[d.Sizes].Type.DType != dtype.Int32 {
		return fmt.Sprintf("the sizes of dynamic rows must be an int32 input tensor, not t%d", d.Sizes)
	}
	n := tensors[d.Sizes].Type.Shape.NumElements()
	if d.Index < 0 || d.Index >= n {
		return fmt.Sprintf("dynamic rows read element %d of t%d, which has %d", d.Index, d.Sizes, n)
	}
	if d.CutK && (d.KIndex < 0 || d.KIndex >= n) {
		return fmt.Sprintf("a dynamic K reads element %d of t%d, which has %d", d.KIndex, d.Sizes, n)
	}
	if d.CutK && op.Kind == TileRows {
		return "a row kernel has no K to cut"
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
		switch op.Kind {
		case TileRows:
			chosen[i] = dynamicRowsKernel(tg, op, ext)
		case TileAttention:
			chosen[i] = dynamicQueries(tg, op, ext)
		}
	}
	masks := maskSymbols(tg, d, ext)
	for keepPadded(tg, chosen, ext, masks) {
	}
	for i, op := range tg.Ops {
		op.Dynamic = nil
		if chosen[i] >= 0 {
			op.Dynamic = &DynamicRows{Sizes: sizes, Index: chosen[i]}
			if s := contractedSymbol(tg, op, ext); s >= 0 {
				op.Dynamic.CutK, op.Dynamic.KIndex = true, s
			}
		}
	}
	return dropRowSelects(c, tg, ext, d.Masks)
}

// A dynamic kernel leaves the padded rows of its output unwritten: they hold whatever
// the GM bytes held ("dirt"). Dirt along an axis does no harm where positions along it
// stay apart (elementwise ops, a matmul's rows and columns, the rows of a row kernel):
// it only makes more dirt at padded positions, which nothing valid reads. Where an op
// combines the positions along an axis (a matmul's K, the row a row kernel reduces,
// attention's keys), padded positions must hold what the padded program computes (the
// plan's masks make them harmless only then), so no dirt may reach it, unless the op
// never reads it: a dynamic matmul cuts its K at the run's size (contractedSymbol),
// and a row kernel may select past the run's size along its row by a mask before it
// combines the row (rowDirt).

// keepPadded finds the kernels whose dirt reaches an axis that some op combines and
// reads, and makes them padded (chosen -1); it reports whether it changed any.
func keepPadded(tg *TileGraph, chosen []int, ext []extents, masks map[int]int) bool {
	dirt := make([][]map[int]bool, len(tg.Tensors)) // tensor, axis -> the dynamic ops whose dirt it may hold
	done := make([]bool, len(tg.Tensors))
	producer := producers(tg)
	changed := false
	var of func(t int) []map[int]bool
	of = func(t int) []map[int]bool {
		if done[t] {
			return dirt[t]
		}
		x := tg.Tensors[t]
		out := make([]map[int]bool, len(x.Type.Shape))
		add := func(ax int, from map[int]bool) {
			if len(from) == 0 || x.Type.Shape[ax] == 1 {
				return
			}
			if out[ax] == nil {
				out[ax] = map[int]bool{}
			}
			for k := range from {
				out[ax][k] = true
			}
		}
		switch i, ok := producer[t]; {
		case x.Alias != 0:
			src := x.Alias - 1
			from := of(src)
			m, ok := aliasAxes(tg.Tensors[src].Type.Shape, x.View, x.Type.Shape)
			for j, d := range from {
				switch {
				case ok && m[j] >= 0:
					add(m[j], d)
				case len(d) > 0: // not followed: dirt anywhere
					for ax := range out {
						add(ax, d)
					}
				}
			}
		case ok && i >= 0:
			op := tg.Ops[i]
			flows, followed := opFlows(tg, op)
			for k, in := range op.Inputs {
				for ax, d := range of(in) {
					if len(d) == 0 {
						continue
					}
					if followed && flows[k][ax].combined {
						if sym, out, ok := unreadDirt(tg, op, chosen[i] >= 0, k, ax, ext, masks); ok && dirtOf(d, chosen, sym) {
							if out {
								add(len(x.Type.Shape)-1, d)
							}
							continue
						}
					}
					if !followed || flows[k][ax].combined {
						for s := range d { // combined: the dirt's sources stay padded
							if chosen[s] >= 0 {
								chosen[s], changed = -1, true
							}
						}
						continue
					}
					if o := flows[k][ax].out; o >= 0 {
						add(o, d)
					}
				}
			}
			if chosen[i] >= 0 {
				add(dynamicAxis(tg, op), map[int]bool{i: true})
			}
		}
		dirt[t], done[t] = out, true
		return out
	}
	for t := range tg.Tensors {
		of(t)
	}
	return changed
}

// dynamicAxis is the axis of op's output whose positions a dynamic op leaves
// unwritten past the run's size: a matmul's rows, a row kernel's one leading axis
// larger than 1.
func dynamicAxis(tg *TileGraph, op *TileOp) int {
	shape := tg.Tensors[op.Output].Type.Shape
	if op.Kind == TileRows {
		for ax := range len(shape) - 1 {
			if shape[ax] > 1 {
				return ax
			}
		}
	}
	return len(shape) - 2
}

// producers maps each tensor to the op that writes it, -1 for one written in parts.
func producers(tg *TileGraph) map[int]int {
	producer := map[int]int{}
	for i, op := range tg.Ops {
		if _, dup := producer[op.Output]; dup {
			producer[op.Output] = -1
		} else {
			producer[op.Output] = i
		}
	}
	return producer
}

// dynamicRowsOf is the index of the symbol whose value is the valid row count of op's
// output when op can compute only those rows, else -1. That is a matmul (fused with
// an epilogue or not) of one matrix, K not split, whose output rows are a symbol's;
// an epilogue must compute nothing from positions. Whether its dirt may stay is
// keepPadded's question.
func dynamicRowsOf(tg *TileGraph, op *TileOp, ext []extents, vectors int) int {
	if op.Kind != TileMatmul && op.Kind != TileMatmulEpilogue || op.Problem[0] != 1 || op.Grid[3] != 1 {
		return -1
	}
	out := ext[op.Output]
	r := len(out.axes)
	if !out.known || r < 2 || tg.Tensors[op.Output].Alias != 0 {
		return -1
	}
	if op.Kind == TileMatmulEpilogue {
		if parts := epilogueParts(op.Tile[0], vectors); vectors < 1 || vectors%parts != 0 {
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
	}
	return out.axes[r-2]
}

// positionalOps compute from the positions of their elements (vecBody's r0, c0), which
// a tile of dynamic rows knows only in registers.
var positionalOps = map[string]bool{"iota": true, "random_uniform": true}

// flow says where the positions along one axis of an op's input go in its output: to
// axis out (-1: none), and whether the op combines them (a matmul's K, the row a row
// kernel reduces, attention's keys), so that padding along the axis must hold what the
// padded program computes there.
type flow struct {
	out      int
	combined bool
}

// opFlows are the flows of every axis of every input of op; followed is false for
// kinds whose flows the inference does not know (their inputs must hold what the
// padded program computes everywhere, and their outputs' extents are unknown).
func opFlows(tg *TileGraph, op *TileOp) (flows [][]flow, followed bool) {
	out := tg.Tensors[op.Output].Type.Shape
	r := len(out)
	shape := func(k int) core.Shape { return tg.Tensors[op.Inputs[k]].Type.Shape }
	broadcast := func(k int) []flow { // numpy's rules: axes aligned from the right
		s := shape(k)
		f := make([]flow, len(s))
		for ax := range s {
			f[ax] = flow{out: -1}
			if o := ax + r - len(s); o >= 0 && s[ax] == out[o] {
				f[ax].out = o
			}
		}
		return f
	}
	for k := range op.Inputs {
		if len(shape(k)) > r {
			return nil, false
		}
	}
	switch op.Kind {
	case TileMatmul, TileMatmulEpilogue:
		if op.Grid[3] > 1 { // partial sums of K chunks, one plane each
			return nil, false
		}
		flows = make([][]flow, len(op.Inputs))
		for k := range op.Inputs {
			flows[k] = broadcast(k)
		}
		a, b := flows[0], flows[1]
		rowA, kA, kB, colB := len(a)-2, len(a)-1, len(b)-2, len(b)-1
		if op.Attrs.Bool("transpose_a", false) {
			rowA, kA = kA, rowA
		}
		if op.Attrs.Bool("transpose_b", false) {
			kB, colB = colB, kB
		}
		a[rowA], a[kA] = flow{out: r - 2}, flow{out: -1, combined: true}
		b[kB], b[colB] = flow{out: -1, combined: true}, flow{out: r - 1}
		return flows, true
	case TileElementwise:
		if l := lowerings[op.Op]; l.maps != nil || l.partial || l.indirect {
			return nil, false
		}
		flows = make([][]flow, len(op.Inputs))
		for k := range op.Inputs {
			flows[k] = broadcast(k)
		}
		return flows, true
	case TileRows:
		flows = make([][]flow, len(op.Inputs))
		for k := range op.Inputs {
			flows[k] = broadcast(k)
			if s := shape(k); len(s) > 0 { // the row (aligned with the output's last axis): reduced or normalised whole
				flows[k][len(s)-1].combined = true
			}
		}
		return flows, true
	case TileAttention: // q [batch..., l, e] -> [batch..., l, ev]; keys, values and mask combined
		if op.Attrs.Bool("heads_last", false) || len(shape(0)) != r {
			return nil, false
		}
		flows = make([][]flow, len(op.Inputs))
		for k := range op.Inputs {
			flows[k] = make([]flow, len(shape(k)))
			for ax := range flows[k] {
				flows[k][ax] = flow{out: -1, combined: true}
				if k == 0 && ax < r-1 {
					flows[k][ax] = flow{out: ax}
				}
			}
		}
		return flows, true
	}
	return nil, false
}

// inferExtents gives the valid extents of every tensor of tg, from those d gives its
// params, through aliases and the kernels whose flows opFlows knows (an output axis
// takes the extents of the input axes that flow to it).
func inferExtents(tg *TileGraph, d *DynamicSizes) []extents {
	out := make([]extents, len(tg.Tensors))
	done := make([]bool, len(tg.Tensors))
	producer := producers(tg)
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
			from := of(src)
			m, ok := aliasAxes(tg.Tensors[src].Type.Shape, x.View, shape)
			switch {
			case !from.known:
			case !from.dynamic():
				e = wholeExtents(len(shape))
			case ok:
				e = wholeExtents(len(shape))
				for j, s := range from.axes {
					if s >= 0 && m[j] < 0 && tg.Tensors[src].Type.Shape[j] > 1 {
						e = extents{} // a padded axis the alias does not walk whole
						break
					}
					if m[j] >= 0 {
						e.axes[m[j]] = s
					}
				}
			}
		default:
			if i, ok := producer[t]; ok && i >= 0 {
				op := tg.Ops[i]
				flows, followed := opFlows(tg, op)
				e = extents{}
				if followed {
					e = wholeExtents(len(shape))
					for k, in := range op.Inputs {
						x := of(in)
						if !x.known {
							e = extents{}
							break
						}
						for ax, s := range x.axes {
							if o := flows[k][ax].out; s >= 0 && o >= 0 {
								if e.axes[o] >= 0 && e.axes[o] != s {
									e = extents{} // two symbols for one axis
									break
								}
								e.axes[o] = s
							}
						}
						if !e.known {
							break
						}
					}
				}
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

// aliasAxes maps each axis of a tensor of shape from to the axis of an alias of shape
// to that walks it whole (-1: none, for axes of size 1 and axes the alias slices or
// does not walk): a contiguous reshape (view nil) that only adds or drops axes of size
// 1, or a strided view whose axes each walk a range of an axis of the tensor (the same
// stride; a column slice of a fused projection's output walks its rows whole); ok is
// false for any other alias.
func aliasAxes(from core.Shape, view *affineMap, to core.Shape) (m []int, ok bool) {
	m = make([]int, len(from))
	for j := range m {
		m[j] = -1
	}
	if view == nil {
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
			return nil, false
		}
		for k, ax := range toAxes {
			if to[ax] != from[fromAxes[k]] {
				return nil, false
			}
			m[fromAxes[k]] = ax
		}
		return m, true
	}
	strides := from.Strides()
	start := make([]int, len(from)) // the view's first element, per axis
	rem := view.offset
	for j, n := range from {
		if n > 1 {
			start[j], rem = rem/strides[j], rem%strides[j]
			if start[j] >= n {
				return nil, false
			}
		}
	}
	if rem != 0 {
		return nil, false
	}
	used := make([]bool, len(from))
	for ax, n := range to {
		if n == 1 || view.strides[ax] == 0 {
			continue
		}
		found := false
		for j := range from {
			if !used[j] && from[j] > 1 && strides[j] == view.strides[ax] && start[j]+n <= from[j] {
				used[j], found = true, true
				if start[j] == 0 && n == from[j] {
					m[j] = ax
				}
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return m, true
}

// dirtOf reports whether every dynamic source of dirt d leaves it past the run's size
// of symbol sym (any symbol for sym -1).
func dirtOf(d map[int]bool, chosen []int, sym int) bool {
	for src := range d {
		if chosen[src] >= 0 && sym >= 0 && chosen[src] != sym {
			return false
		}
	}
	return true
}

// unreadDirt says whether op combines axis ax of its input k without reading the
// dirt past the run's size of symbol sym along it (-1: of any symbol): ok false when
// it reads it. For a row kernel's row, out says whether the dirt reaches its output's
// row. dynamic is whether op itself computes only its valid rows.
func unreadDirt(tg *TileGraph, op *TileOp, dynamic bool, k, ax int, ext []extents, masks map[int]int) (sym int, out, ok bool) {
	switch op.Kind {
	case TileAttention:
		// A dynamic attention loads its keys and values up to the run's size, the rest
		// of each block zero-filled (codegen_attention.go).
		if s := contractedSymbol(tg, op, ext); dynamic && s >= 0 && (k == 1 || k == 2) && ax == len(tg.Tensors[op.Inputs[k]].Type.Shape)-2 {
			return s, false, true
		}
	case TileMatmul, TileMatmulEpilogue:
		if s := contractedSymbol(tg, op, ext); dynamic && s >= 0 && ax == contractedAxis(tg, op, k) {
			return s, false, true
		}
	case TileRows:
		if ax == len(tg.Tensors[op.Inputs[k]].Type.Shape)-1 {
			return rowDirt(tg, op, k, masks)
		}
	}
	return -1, false, false
}

// contractedAxis is the axis of matmul input k (0: A, 1: B) that the matmul contracts.
func contractedAxis(tg *TileGraph, op *TileOp, k int) int {
	r := len(tg.Tensors[op.Inputs[k]].Type.Shape)
	switch {
	case k == 0 && op.Attrs.Bool("transpose_a", false), k == 1 && !op.Attrs.Bool("transpose_b", false):
		return r - 2
	case k <= 1:
		return r - 1
	}
	return -1
}

// contractedSymbol is the symbol whose run value is the valid extent of the K a
// matmul contracts (from its operands' extents), or -1 when K is valid whole or the
// operands disagree.
func contractedSymbol(tg *TileGraph, op *TileOp, ext []extents) int {
	if op.Kind == TileAttention {
		return keysSymbol(tg, op, ext)
	}
	if op.Kind != TileMatmul && op.Kind != TileMatmulEpilogue || op.Grid[3] != 1 {
		return -1
	}
	sym := -1
	for k := range 2 {
		x := ext[op.Inputs[k]]
		if !x.known {
			return -1
		}
		if s := x.axes[contractedAxis(tg, op, k)]; s >= 0 {
			if sym >= 0 && s != sym {
				return -1
			}
			sym = s
		}
	}
	return sym
}

// keysSymbol is the symbol whose run value is the valid extent of an attention's keys
// (the axis before the last of its k and v), or -1 when they are valid whole or k and v
// disagree.
func keysSymbol(tg *TileGraph, op *TileOp, ext []extents) int {
	sym := -1
	for k := 1; k <= 2; k++ {
		x := ext[op.Inputs[k]]
		if !x.known {
			return -1
		}
		if s := x.axes[len(x.axes)-2]; s >= 0 {
			if sym >= 0 && s != sym {
				return -1
			}
			sym = s
		}
	}
	return sym
}

// dynamicQueries is the index of the symbol whose value is the valid count of an
// attention's query rows when its kernel can compute only the tiles those rows need,
// else -1: its result stored as computed (not heads-last) with a known extent.
func dynamicQueries(tg *TileGraph, op *TileOp, ext []extents) int {
	out := ext[op.Output]
	r := len(out.axes)
	if op.Attrs.Bool("heads_last", false) || !out.known || r < 2 || tg.Tensors[op.Output].Alias != 0 {
		return -1
	}
	return out.axes[r-2]
}

// maskSymbols maps each mask param (DynamicSizes.Masks) whose last axis has a symbol
// to that symbol: a mask that a row kernel may select its row by.
func maskSymbols(tg *TileGraph, d *DynamicSizes, ext []extents) map[int]int {
	out := map[int]int{}
	for _, p := range d.Masks {
		if p < 0 || p >= len(tg.Params) {
			continue
		}
		t := tg.Params[p]
		if x := ext[t]; x.known && len(x.axes) > 0 && x.axes[len(x.axes)-1] >= 0 && tg.Tensors[t].Type.DType == dtype.Bool {
			out[t] = x.axes[len(x.axes)-1]
		}
	}
	return out
}

// rowDirt follows dirt along the row (the last axis) of input k of a row kernel
// through its body: elementwise steps keep it in its positions, a select by a mask of
// the row's symbol (masks: tensor -> symbol; the mask false past the run's size)
// replaces it, and a reduction over the row, or a reshape of it, would read it (ok
// false). sym is the masks' symbol (-1: none selected), out whether dirt reaches the
// output.
func rowDirt(tg *TileGraph, op *TileOp, k int, masks map[int]int) (sym int, out, ok bool) {
	p, err := rowsPlanOf(op.Attrs)
	if err != nil || k >= len(p.body.Params) {
		return -1, false, false
	}
	body := p.body
	input := map[core.Value]int{} // body param -> op input
	for i, v := range body.Params {
		input[v] = op.Inputs[i]
	}
	maskOf := func(v core.Value) (int, bool) {
		t, isParam := input[v]
		if !isParam {
			return -1, false
		}
		if a := tg.Tensors[t].Alias; a > 0 && tg.Tensors[t].View == nil { // a reshape of the mask
			src := tg.Tensors[a-1].Type.Shape
			if sh := tg.Tensors[t].Type.Shape; len(sh) > 0 && len(src) > 0 && sh[len(sh)-1] == src[len(src)-1] {
				t = a - 1
			}
		}
		s, isMask := masks[t]
		return s, isMask
	}
	dirty := map[core.Value]bool{body.Params[k]: true}
	sym = -1
	for i, n := range body.Nodes {
		reads := false
		for _, x := range n.Inputs {
			reads = reads || dirty[x]
		}
		if !reads {
			continue
		}
		if n.Op == "where" && !dirty[n.Inputs[0]] && !dirty[n.Inputs[2]] {
			s, isMask := maskOf(n.Inputs[0])
			if !isMask || sym >= 0 && s != sym {
				return -1, false, false
			}
			sym = s // the select's result is clean past the run's size
			continue
		}
		if n.Op == "reshape" || rowReduction(body, n) || !rowElementwise(n) {
			return -1, false, false
		}
		dirty[core.Value(i)] = true
	}
	return sym, dirty[body.Outputs[0]], true
}
