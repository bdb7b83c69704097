package lower

import (
	"sort"

	"pypto/core"
	"pypto/dtype"
)

// Projection fusion. Matmuls of one activation by several weights, such as the query,
// key and value projections of an attention layer, become one matmul of the
// activation by the weights concatenated along N: one task instead of several, with
// wider output tiles and the activation's tiles loaded once per output tile row
// instead of once per projection. When every projection adds a bias, the biases are
// concatenated too and added once, so the sum joins the matmul's epilogue. Each
// projection is then a column slice of the product, read in place by the matrix
// kernels that use it (fold-views): a projection read otherwise stays apart, so the
// slices never cost a copy. A row-wise op on a projection (a padded program's zeroing
// of its padded rows) joins the product's epilogue, kept to its columns (rowOp).
//
// The weights and biases must be graph inputs: their concatenations along their first
// axis are then the inputs placed one after another in GM (packInputs), so building
// them costs nothing at run time either.

// projection is one matmul of a group and the value the group's slice replaces: the
// matmul, its bias add, or a row-wise op on either (rowOp).
type projection struct {
	mm, add, row, out core.Value // add and row -1 when there is none
	w, bias           core.Value // bias -1 when the group has none
	n                 int        // the projection's columns
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
		changed := false
		for gi, group := range groups {
			var members []projection
			for j, s := range slices[gi] {
				if _, folded := folds[s]; folded {
					members = append(members, group[j])
				}
			}
			changed = changed || len(members) < len(group)
			if len(members) >= 2 {
				kept = append(kept, members)
			}
		}
		if !changed {
			c.graph = core.EliminateDeadCode(ng) // the row-wise ops' operands made again
			return nil
		}
		groups = kept // some slices would be copies: fuse the other projections only
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
		p := projection{mm: m, add: -1, row: -1, out: m, w: w, bias: -1, n: n.Type.Shape[1]}
		if b, add := biasOf(g, users, m); b >= 0 && params[b] && !packed[b] && !isOut[add] && packable(g, b) {
			p.bias, p.add, p.out = b, add, add
		}
		if r := rowOp(g, users, isOut, p.out); r >= 0 {
			p.row, p.out = r, r
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

// rowOp returns the one reader of v when it is an elementwise op that could join a
// fused kernel, of v's type, whose other operands are the same for every column (0-d,
// or a last axis of 1, of rank 2 at most: a row mask, a per-row scale), made of
// inputs, constants and reshapes of them; else -1. Applied to the whole product and
// kept in v's columns only (buildProjections), it gives v's projection its value
// while the others keep theirs: a padded program's zeroing of the value projection's
// padded rows is such an op.
func rowOp(g *core.Graph, users [][]core.Value, isOut map[core.Value]bool, v core.Value) core.Value {
	if len(users[v]) != 1 {
		return -1
	}
	u := users[v][0]
	n := g.Nodes[u]
	if isOut[u] || !fusable(n) || n.Op == "cast" || !n.Type.Shape.Equal(g.Type(v).Shape) || n.Type.DType != g.Type(v).DType {
		return -1
	}
	seen := 0
	for _, x := range n.Inputs {
		if x == v {
			seen++
			continue
		}
		s := g.Type(x).Shape
		if (len(s) > 0 && (len(s) > 2 || s[len(s)-1] != 1)) || !rebuildable(g, x) {
			return -1
		}
	}
	if seen != 1 {
		return -1
	}
	return u
}

// rebuildable reports whether x is an input, a constant, a full or reshapes of them:
// a value buildProjections can make again where a group's first matmul is.
func rebuildable(g *core.Graph, x core.Value) bool {
	switch n := g.Nodes[x]; n.Op {
	case core.OpParam, "constant", "full":
		return true
	case "reshape":
		return rebuildable(g, n.Inputs[0])
	}
	return false
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
			for _, x := range []core.Value{p.mm, p.add} {
				if x >= 0 && x != p.out {
					dropped[x] = true // the slice (or its row-wise op) takes its place
				}
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
			return -1, true, nil
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
		if y, err = b.Op("add", []core.Value{y, bias}, nil, g.Nodes[group[0].add].Loc); err != nil {
			return nil, err
		}
	}
	// Row-wise ops of projections: applied to the whole product, kept in the columns
	// of their projection (where(columns, op(y), y)).
	total := 0
	for _, p := range group {
		total += p.n
	}
	off := 0
	for _, p := range group {
		if p.row >= 0 {
			var err error
			if y, err = applyInColumns(b, g, p, y, off, total, val); err != nil {
				return nil, err
			}
		}
		off += p.n
	}
	rows := int64(mm.Type.Shape[0])
	var out []core.Value
	start := int64(0)
	for _, p := range group {
		s, err := b.Op("slice", []core.Value{y}, core.Attrs{"starts": []int64{0, start}, "stops": []int64{rows, start + int64(p.n)}, "steps": []int64{1, 1}}, g.Nodes[p.out].Loc)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		start += int64(p.n)
	}
	return out, nil
}

// applyInColumns is where(in p's columns, row(y), y) for projection p's row-wise op
// on the whole product y (total columns, p's from off), its other operands made again
// here.
func applyInColumns(b *core.Builder, g *core.Graph, p projection, y core.Value, off, total int, val func(core.Value) core.Value) (core.Value, error) {
	n := g.Nodes[p.row]
	args := make([]core.Value, len(n.Inputs))
	for j, x := range n.Inputs {
		if x == p.add || x == p.mm {
			args[j] = y
			continue
		}
		var err error
		if args[j], err = rebuild(b, g, x, val); err != nil {
			return -1, err
		}
	}
	z, err := b.Op(n.Op, args, n.Attrs, n.Loc)
	if err != nil {
		return -1, err
	}
	cols := core.NewArray(core.TensorType{DType: dtype.Bool, Shape: core.Shape{total}})
	for c := off; c < off+p.n; c++ {
		cols.Data[c] = 1
	}
	sel, err := b.Op("constant", nil, core.ConstantAttrs(cols), n.Loc)
	if err != nil {
		return -1, err
	}
	return b.Op("where", []core.Value{sel, z, y}, nil, n.Loc)
}

// rebuild makes value x (rebuildable) again in b.
func rebuild(b *core.Builder, g *core.Graph, x core.Value, val func(core.Value) core.Value) (core.Value, error) {
	n := g.Nodes[x]
	switch n.Op {
	case core.OpParam:
		return val(x), nil
	case "reshape":
		in, err := rebuild(b, g, n.Inputs[0], val)
		if err != nil {
			return -1, err
		}
		return b.Op("reshape", []core.Value{in}, n.Attrs, n.Loc)
	}
	return b.Op(n.Op, nil, n.Attrs, n.Loc) // a constant or a full
}

// packable reports whether input x can be a piece of a packed concat anywhere in it:
// its bytes fill whole GM granules.
func packable(g *core.Graph, x core.Value) bool { return g.Type(x).Bytes()%gmAlign == 0 }
