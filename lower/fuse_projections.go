package lower

import (
	"sort"

	"pypto/core"
)

// Projection fusion. Matmuls of one activation by several weights, such as the query,
// key and value projections of an attention layer, become one matmul of the
// activation by the weights concatenated along N: one task instead of several, with
// wider output tiles and the activation's tiles loaded once per output tile row
// instead of once per projection. When every projection adds a bias, the biases are
// concatenated too and added once, so the sum joins the matmul's epilogue. Each
// projection is then a column slice of the product, read in place by the matrix
// kernels that use it (fold-views): the pass applies only where every projection is
// read that way, so the slices never cost a copy.
//
// The weights and biases must be graph inputs: their concatenations along their first
// axis are then the inputs placed one after another in GM (packInputs), so building
// them costs nothing at run time either.

// projection is one matmul of a group and the value the group's slice replaces: the
// matmul, or its bias add.
type projection struct {
	mm, out core.Value
	w, bias core.Value // bias -1 when the group has none
	n       int        // the projection's columns
}

// runFuseProjections rewrites every group of two or more projections of one
// activation into one matmul (and bias add) and a slice per projection.
func runFuseProjections(c *compilation) error {
	g := c.graph
	groups := projectionGroups(g, c.opts.Donate)
	for len(groups) > 0 {
		ng, slices, err := fuseProjections(g, groups)
		if err != nil {
			return err
		}
		folds := viewFolds(ng)
		var kept [][]projection
		for gi, group := range groups {
			ok := true
			for _, s := range slices[gi] {
				_, folded := folds[s]
				ok = ok && folded
			}
			if ok {
				kept = append(kept, group)
			}
		}
		if len(kept) == len(groups) {
			c.graph = ng
			return nil
		}
		groups = kept // some slices would be copies: fuse the others only
	}
	return nil
}

// projectionKey groups matmuls that can share one: the same activation and
// transposes, and weights of one dtype with the same K.
type projectionKey struct {
	a      core.Value
	ta, tb bool
	k      int
	bias   bool
}

// projectionGroups finds the groups: 2-D matmuls without a tile of the user's, not
// results themselves, whose weight [n, k] (and bias, when each has one) is an input
// that packInputs can place beside the others (whole GM granules, not donated), of one
// dtype; in graph order.
func projectionGroups(g *core.Graph, donate []int) [][]projection {
	users := g.Users()
	isOut := g.OutputSet()
	params := map[core.Value]bool{}
	for k, p := range g.Params {
		params[p] = true
		for _, d := range donate {
			if d == k {
				params[p] = false // a donated input may be written in place: not packed
			}
		}
	}
	byKey := map[projectionKey][]projection{}
	var keys []projectionKey
	packed := map[core.Value]bool{} // each input is packed once
	for i, n := range g.Nodes {
		m := core.Value(i)
		if n.Op != "matmul" || isOut[m] || core.TileAttrs(n.Attrs) != nil || len(n.Type.Shape) != 2 {
			continue
		}
		w := n.Inputs[1]
		tb := n.Attrs.Bool("transpose_b", false)
		if !params[w] || packed[w] || n.Inputs[0] == w || !tb || !packable(g, w) {
			continue // only w [n, k] concatenates along its first axis
		}
		wt := g.Type(w)
		k := wt.Shape[0]
		if tb {
			k = wt.Shape[1]
		}
		p := projection{mm: m, out: m, w: w, bias: -1, n: n.Type.Shape[1]}
		if b, add := biasOf(g, users, m); b >= 0 && params[b] && !packed[b] && !isOut[add] && packable(g, b) {
			p.bias, p.out = b, add
		}
		key := projectionKey{a: n.Inputs[0], ta: n.Attrs.Bool("transpose_a", false), tb: tb, k: k, bias: p.bias >= 0}
		if len(byKey[key]) > 0 {
			first := byKey[key][0]
			if g.Type(first.w).DType != wt.DType || (p.bias >= 0 && g.Type(first.bias).DType != g.Type(p.bias).DType) {
				continue
			}
		}
		if _, seen := byKey[key]; !seen {
			keys = append(keys, key)
		}
		byKey[key] = append(byKey[key], p)
		packed[w] = true
		if p.bias >= 0 {
			packed[p.bias] = true
		}
	}
	var groups [][]projection
	for _, key := range keys {
		if group := byKey[key]; len(group) >= 2 {
			groups = append(groups, group)
		}
	}
	return groups
}

// biasOf returns the bias b and the add node when matmul m's one reader adds a 1-D
// bias [n] of the product's dtype to it (in either order), else -1.
func biasOf(g *core.Graph, users [][]core.Value, m core.Value) (core.Value, core.Value) {
	if len(users[m]) != 1 {
		return -1, -1
	}
	u := users[m][0]
	n := g.Nodes[u]
	if n.Op != "add" || !n.Type.Shape.Equal(g.Type(m).Shape) || n.Type.DType != g.Type(m).DType {
		return -1, -1
	}
	b := n.Inputs[1]
	if b == m {
		b = n.Inputs[0]
	}
	bt := g.Type(b)
	if b == m || len(bt.Shape) != 1 || bt.Shape[0] != g.Type(m).Shape[1] || bt.DType != n.Type.DType {
		return -1, -1
	}
	return b, u
}

// fuseProjections rewrites the groups: at each group's first matmul, the concatenated
// weights and biases, one matmul and bias add, and a column slice per projection,
// which replaces the projection's value. It returns the graph and each group's slices.
func fuseProjections(g *core.Graph, groups [][]projection) (*core.Graph, [][]core.Value, error) {
	first := map[core.Value]int{}     // the first matmul of group gi
	member := map[core.Value][2]int{} // a replaced value: its group and index
	dropped := map[core.Value]bool{}  // matmuls whose bias add takes their place
	for gi, group := range groups {
		sort.Slice(group, func(a, b int) bool { return group[a].mm < group[b].mm })
		first[group[0].mm] = gi
		for j, p := range group {
			member[p.out] = [2]int{gi, j}
			if p.out != p.mm {
				dropped[p.mm] = true
			}
		}
	}
	built := make([][]core.Value, len(groups)) // the new graph's slice per projection
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, _ []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if gi, ok := first[v]; ok {
			s, err := buildProjections(b, g, groups[gi], n, val)
			if err != nil {
				return -1, true, err
			}
			built[gi] = s
		}
		if at, ok := member[v]; ok {
			return built[at[0]][at[1]], true, nil
		}
		if dropped[v] {
			return -1, true, nil // its bias add is the slice
		}
		return -1, false, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ng, built, nil
}

// buildProjections emits group's concatenations, matmul, bias add and slices in b
// (mm is the group's first matmul) and returns the slices in group order.
func buildProjections(b *core.Builder, g *core.Graph, group []projection, mm *core.Node, val func(core.Value) core.Value) ([]core.Value, error) {
	loc := mm.Loc
	axis := int64(1)
	if mm.Attrs.Bool("transpose_b", false) {
		axis = 0 // w [n, k]
	}
	ws := make([]core.Value, len(group))
	for j, p := range group {
		ws[j] = val(p.w)
	}
	w, err := b.Op("concat", ws, core.Attrs{"axis": axis}, loc)
	if err != nil {
		return nil, err
	}
	attrs := core.Attrs{"transpose_a": mm.Attrs.Bool("transpose_a", false), "transpose_b": mm.Attrs.Bool("transpose_b", false)}
	y, err := b.Op("matmul", []core.Value{val(mm.Inputs[0]), w}, attrs, loc)
	if err != nil {
		return nil, err
	}
	if group[0].bias >= 0 {
		bs := make([]core.Value, len(group))
		for j, p := range group {
			bs[j] = val(p.bias)
		}
		bias, err := b.Op("concat", bs, core.Attrs{"axis": int64(0)}, loc)
		if err != nil {
			return nil, err
		}
		if y, err = b.Op("add", []core.Value{y, bias}, nil, g.Nodes[group[0].out].Loc); err != nil {
			return nil, err
		}
	}
	rows := int64(mm.Type.Shape[0])
	var out []core.Value
	off := int64(0)
	for _, p := range group {
		s, err := b.Op("slice", []core.Value{y}, core.Attrs{"starts": []int64{0, off}, "stops": []int64{rows, off + int64(p.n)}, "steps": []int64{1, 1}}, g.Nodes[p.out].Loc)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		off += int64(p.n)
	}
	return out, nil
}

// packable reports whether input x can be a piece of a packed concat anywhere in it:
// its bytes fill whole GM granules.
func packable(g *core.Graph, x core.Value) bool { return g.Type(x).Bytes()%gmAlign == 0 }
