package lower

import "pypto/core"

// View folding. A slice, transpose, reshape or broadcast of a tensor that only matrix
// kernels read (matmul and batch_matmul operands, the q, k and v of flash attention)
// needs no kernel of its own: those kernels address their operands through 2-D strided
// GM windows per matrix, so they can read the viewed bytes where they lie. The view
// becomes a GM tensor aliasing its source with an affine map (GMTensor.View); kernels
// bind the source as their param. A multi-head attention's q, k and v, sliced from one
// projection and transposed to [batch, heads, seq, dim], so cost no copies.

// runFoldViews chooses the views to fold; the tile pass makes them strided aliases.
func runFoldViews(c *compilation) error {
	c.folds = viewFolds(c.graph)
	return nil
}

// matrixOperands lists the operands of each op that matrix kernels read through
// strided windows.
var matrixOperands = map[string][]int{
	"matmul": {0, 1}, "batch_matmul": {0, 1}, "fused_matmul": {0, 1}, "flash_attention": {0, 1, 2},
}

// viewFolds finds the view nodes of g whose values only matrix kernels read (directly
// or through other such views) and returns the map of each from its own index space
// to the elements of its source, the first non-view value up the chain.
func viewFolds(g *core.Graph) map[core.Value]viewFold {
	maps := map[core.Value]viewFold{}
	for i, n := range g.Nodes {
		v := core.Value(i)
		src, m, ok := core.Value(-1), affineMap{}, false
		if len(n.Inputs) == 1 {
			x := n.Inputs[0]
			base, known := maps[x]
			if !known {
				base = viewFold{src: x, m: affineMap{strides: g.Type(x).Shape.Strides()}}
			}
			src = base.src
			m, ok = composeView(n, g.Type(x).Shape, base.m)
		}
		if ok {
			maps[v] = viewFold{src: src, m: m}
		}
	}
	// Keep the views every reader of which can take them, from the last node back.
	users := g.Users()
	isOut := g.OutputSet()
	folds := map[core.Value]viewFold{}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		v := core.Value(i)
		f, ok := maps[v]
		if !ok || isOut[v] || len(users[i]) == 0 || g.Type(f.src).Shape.NumElements() == 0 {
			continue
		}
		all := true
		for _, u := range users[i] {
			if _, folded := folds[u]; folded {
				continue
			}
			if !readsAsMatrix(g.Nodes[u], v) {
				all = false
				break
			}
		}
		if all {
			folds[v] = f
		}
	}
	return folds
}

// viewFold is a view's source and the map from the view's index to its elements.
type viewFold struct {
	src core.Value
	m   affineMap
}

// readsAsMatrix reports whether node n reads v only at operands its kernel windows.
func readsAsMatrix(n *core.Node, v core.Value) bool {
	slots := matrixOperands[n.Op]
	for j, x := range n.Inputs {
		if x != v {
			continue
		}
		ok := false
		for _, s := range slots {
			ok = ok || s == j
		}
		if !ok {
			return false
		}
	}
	return len(slots) > 0
}

// composeView gives the map of view node n's index space, given m, the map of its
// input (of shape in). Only maps with non-negative strides are kept: GM windows walk
// forwards.
func composeView(n *core.Node, in core.Shape, m affineMap) (affineMap, bool) {
	out := n.Type.Shape
	var r affineMap
	switch n.Op {
	case "slice":
		starts, steps := n.Attrs.Ints("starts"), n.Attrs.Ints("steps")
		if len(starts) != len(in) || len(steps) != len(in) {
			return r, false
		}
		r = affineMap{offset: m.offset, strides: make([]int, len(in))}
		for k := range in {
			r.offset += starts[k] * m.strides[k]
			r.strides[k] = steps[k] * m.strides[k]
		}
	case "transpose":
		perm := n.Attrs.Ints("perm")
		if len(perm) == 0 {
			for k := range in {
				perm = append(perm, len(in)-1-k)
			}
		}
		r = affineMap{offset: m.offset, strides: make([]int, len(perm))}
		for k, p := range perm {
			r.strides[k] = m.strides[p]
		}
	case "broadcast_to":
		r = affineMap{offset: m.offset, strides: make([]int, len(out))}
		for k := range in {
			if in[k] != 1 {
				r.strides[len(out)-len(in)+k] = m.strides[k]
			}
		}
	case "reshape":
		var ok bool
		if r, ok = reshapeView(m, in, out); !ok {
			return r, false
		}
	default:
		return r, false
	}
	for _, s := range r.strides {
		if s < 0 {
			return r, false
		}
	}
	return r, true
}

// reshapeView re-indexes a strided view of shape in as shape out, when it can be: each
// run of axes whose sizes multiply to the same product on both sides must be
// contiguous within itself in the view (as numpy reshapes without a copy).
func reshapeView(m affineMap, in, out core.Shape) (affineMap, bool) {
	r := affineMap{offset: m.offset, strides: make([]int, len(out))}
	i, o := 0, 0
	for i < len(in) || o < len(out) {
		// Size-1 axes take any stride; skip them on both sides.
		if i < len(in) && in[i] == 1 {
			i++
			continue
		}
		if o < len(out) && out[o] == 1 {
			o++
			continue
		}
		if i >= len(in) || o >= len(out) {
			return r, false
		}
		// Grow a run on each side until the products agree.
		i0, o0 := i, o
		pi, po := in[i], out[o]
		i++
		o++
		for pi != po {
			if pi < po {
				if i >= len(in) {
					return r, false
				}
				pi *= in[i]
				i++
			} else {
				if o >= len(out) {
					return r, false
				}
				po *= out[o]
				o++
			}
		}
		// The input run must be one strided block: each axis (size-1 axes aside) steps
		// over the next.
		last := -1
		for k := i0; k < i; k++ {
			if in[k] == 1 {
				continue
			}
			if last >= 0 && m.strides[last] != m.strides[k]*in[k] {
				return r, false
			}
			last = k
		}
		stride := m.strides[last]
		for k := o - 1; k >= o0; k-- {
			r.strides[k] = stride
			stride *= out[k]
		}
	}
	return r, true
}
