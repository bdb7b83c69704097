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
	if op.Kind != TileRows && (op.Kind != TileMatmul && op.Kind != TileMatmulEpilogue || op.Problem[0] != 1 || op.Grid[3] != 1) {
		return fmt.Sprintf("dynamic rows are for row kernels and matmuls of one matrix with K whole, not a %s op of problem %v and grid %v", op.Kind, op.Problem, op.Grid)
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
		if op.Kind == TileRows {
			chosen[i] = dynamicRowsKernel(tg, op, ext)
		}
	}
	for keepPadded(tg, chosen) {
	}
	for i, op := range tg.Ops {
		op.Dynamic = nil
		if chosen[i] >= 0 {
			op.Dynamic = &DynamicRows{Sizes: sizes, Index: chosen[i]}
		}
	}
	return nil
}

// A dynamic kernel leaves the padded rows of its output unwritten: they hold whatever
// the GM bytes held ("dirt"). Dirt along an axis does no harm where positions along it
// stay apart (elementwise ops, a matmul's rows and columns, the rows of a row kernel):
// it only makes more dirt at padded positions, which nothing valid reads. Where an op
// combines the positions along an axis (a matmul's K, the row a row kernel reduces,
// attention's keys), padded positions must hold what the padded program computes (the
// plan's masks make them harmless only then), so no dirt may reach it.

// keepPadded finds the kernels whose dirt reaches an axis that some op combines, and
// makes them padded (chosen -1); it reports whether it changed any.
func keepPadded(tg *TileGraph, chosen []int) bool {
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
// to that walks it (-1: none, for axes of size 1): a contiguous reshape (view nil)
// that only adds or drops axes of size 1, or a strided view whose axes each walk a
// whole axis of the tensor (the same stride and size) from its first element; ok is
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
	if view.offset != 0 {
		return nil, false
	}
	strides := from.Strides()
	for ax, n := range to {
		if n == 1 || view.strides[ax] == 0 {
			continue
		}
		found := false
		for j := range from {
			if m[j] < 0 && strides[j] == view.strides[ax] && from[j] == n {
				m[j], found = ax, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return m, true
}
