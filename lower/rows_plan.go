package lower

import (
	"fmt"

	"pypto/core"
)

// A fused_rows body computes over a row space S = [..., C]: its reductions run along
// the last axis of S, and every value in it is one of a few shapes relative to S,
// which says what tile holds it in the kernel (see rowKind). rowsPlan is that reading
// of a body; the grouping pass builds it to accept a group, the code generator to emit
// the kernel, so the two cannot disagree.

// rowKind is how a value of a fused_rows body lies over the row space S.
type rowKind uint8

const (
	kindFull   rowKind = iota // S itself: tr whole rows of C elements per tile
	kindRow                   // one value per row (S[:-1]+[1], or S[:-1] from a reduction without keepdims)
	kindCol                   // one value per column, the same for every row ([C], [1, C], ...)
	kindScalar                // one value (a 0-d constant or input)
)

func (k rowKind) String() string { return [...]string{"full", "row", "col", "scalar"}[k] }

// rowsPlan is the reading of a fused_rows body over its row space.
type rowsPlan struct {
	body  *core.Graph
	space core.Shape // S
	rows  int        // the product of S[:-1]: rows of the flattened [rows, C] space
	cols  int        // C
	kind  []rowKind  // per body value
	// invariant values are the same in every tile (constants, per-column inputs and
	// what is computed from them only): the kernel computes them once, before its tiles.
	invariant []bool
	lastUse   []int // per body value, the last node that reads it (len(Nodes) for the output)
	// soleUser is the one member that reads a value, -1 when none or several do: an
	// invariant read only to compute another invariant needs no tile of its own after.
	soleUser []core.Value
	// period, for a whole-row input broadcast along leading axes of S only (an
	// attention mask [S, S] over scores [B, H, S, S]), is the number of rows after which
	// its rows repeat; 0 for the others.
	period []int
	// level is the number of reductions a value waits for, one after another: a row
	// too long for the UB is computed in that many passes over its chunks plus one
	// (rows_chunked.go); passes is the number the result needs.
	level  []int
	passes int
}

// repeatPeriod is the number of rows of the row space after which a value of shape s
// repeats, when s is S with leading axes of size 1 (s broadcasts along them), else 0.
func repeatPeriod(s, space core.Shape) int {
	if len(s) > len(space) || len(s) == 0 {
		return 0
	}
	padded := padTo(s, len(space))
	j := 0
	for j < len(space)-1 && padded[j] == 1 && space[j] != 1 {
		j++
	}
	if j == 0 || !padded[j:].Equal(space[j:]) {
		return 0
	}
	return space[j : len(space)-1].NumElements()
}

// rowReduction reports whether n reduces the last axis of its input alone, and so
// becomes a row reduction (TROWSUM, TROWMAX, ...) of a float input.
func rowReduction(g *core.Graph, n *core.Node) bool {
	if _, ok := reductions[n.Op]; !ok || len(n.Inputs) != 1 {
		return false
	}
	in := g.Type(n.Inputs[0])
	axes := reduceAxes(n.Attrs, len(in.Shape))
	return len(in.Shape) > 0 && len(axes) == 1 && axes[0] == len(in.Shape)-1 && in.DType.IsFloat()
}

// rowElementwise reports whether n can be a step of a row kernel as an elementwise op:
// an op fusion takes that does not depend on the element's position (iota does).
func rowElementwise(n *core.Node) bool {
	return n.Op != "iota" && fusable(n)
}

// padTo is s with leading 1s up to rank n (s itself when it has n axes or more).
func padTo(s core.Shape, n int) core.Shape {
	if len(s) >= n {
		return s
	}
	out := make(core.Shape, n)
	for i := range out {
		out[i] = 1
	}
	copy(out[n-len(s):], s)
	return out
}

// rowShapes are the shapes a row value has over S: S[:-1]+[1] and S[:-1].
func rowShapes(space core.Shape) (keep, flat core.Shape) {
	flat = space[:len(space)-1].Clone()
	keep = append(flat.Clone(), 1)
	return keep, flat
}

// shapeKind says how a value of shape s broadcasts over the row space, in the order
// full, scalar, row, column; ok is false for shapes that are none of them (a value
// broadcast along some leading axes only).
func shapeKind(s, space core.Shape) (rowKind, bool) {
	keep, flat := rowShapes(space)
	c := space[len(space)-1]
	switch {
	case s.Equal(space):
		return kindFull, true
	case s.NumElements() == 1:
		return kindScalar, true
	case len(s) <= len(space) && padTo(s, len(space)).Equal(keep), s.Equal(flat):
		return kindRow, true
	case len(s) <= len(space) && s[len(s)-1] == c && s.NumElements() == c:
		return kindCol, true
	}
	return 0, false
}

// operandFits checks that input in, of kind k, is indexed by numpy broadcasting of
// shape s against out (of kind outKind) exactly as the kernel reads a tile of kind k:
// per row, per column or one value.
func operandFits(s core.Shape, k rowKind, out core.Shape, outKind rowKind) bool {
	switch {
	case k == kindScalar:
		return s.NumElements() == 1
	case k == outKind:
		return padTo(s, len(out)).Equal(out) || (k == kindCol && s.NumElements() == out.NumElements()) ||
			(k == kindFull && repeatPeriod(s, out) > 0)
	case outKind == kindFull && k == kindRow:
		keep := append(out[:len(out)-1].Clone(), 1)
		return len(s) <= len(out) && padTo(s, len(out)).Equal(keep)
	case outKind == kindFull && k == kindCol:
		return len(s) <= len(out) && s[len(s)-1] == out[len(out)-1] && s.NumElements() == out[len(out)-1]
	}
	return false
}

// rowsPlanError says why a group is no row kernel, and at which member.
type rowsPlanError struct {
	at  core.Value
	msg string
}

func (e *rowsPlanError) Error() string { return e.msg }

// planRows reads a fused_rows body: its params are the group's inputs, its other
// nodes the group, the last of them its result.
func planRows(body *core.Graph) (*rowsPlan, error) {
	var members []core.Value
	for i, n := range body.Nodes {
		if n.Op != core.OpParam {
			members = append(members, core.Value(i))
		}
	}
	if len(members) == 0 || members[len(members)-1] != body.Outputs[0] {
		return nil, fmt.Errorf("the body's result is not its last step")
	}
	return planGroup(body, members)
}

// planGroup reads members of g (in node order, the result last) as a row kernel whose
// inputs are the values they read from outside. An error at a member is a
// *rowsPlanError.
func planGroup(g *core.Graph, members []core.Value) (*rowsPlan, error) {
	p := &rowsPlan{body: g, kind: make([]rowKind, len(g.Nodes)), invariant: make([]bool, len(g.Nodes)),
		lastUse: make([]int, len(g.Nodes)), soleUser: make([]core.Value, len(g.Nodes)), period: make([]int, len(g.Nodes)), level: make([]int, len(g.Nodes))}
	for i := range p.soleUser {
		p.soleUser[i] = -1
	}
	users := map[core.Value]int{}
	member := map[core.Value]bool{}
	for _, v := range members {
		member[v] = true
		if n := g.Nodes[v]; p.space == nil && rowReduction(g, n) {
			p.space = g.Type(n.Inputs[0]).Shape
		}
	}
	if p.space == nil {
		return nil, fmt.Errorf("no reduction along the last axis")
	}
	p.cols = p.space[len(p.space)-1]
	p.rows = p.space[:len(p.space)-1].NumElements()
	if p.cols < 2 || p.rows == 0 {
		return nil, fmt.Errorf("%d rows of %d element(s) need no row kernel", p.rows, p.cols)
	}
	keep, flat := rowShapes(p.space)
	seen := map[core.Value]bool{}
	for _, v := range members {
		n := g.Nodes[v]
		fail := func(format string, args ...any) error {
			return &rowsPlanError{at: v, msg: fmt.Sprintf(format, args...)}
		}
		for _, x := range uniqueInputs(n) {
			if users[x]++; users[x] == 1 {
				p.soleUser[x] = v
			} else {
				p.soleUser[x] = -1
			}
		}
		for _, x := range n.Inputs {
			p.lastUse[x] = int(v)
			if member[x] || seen[x] {
				continue
			}
			seen[x] = true
			k, ok := shapeKind(g.Type(x).Shape, p.space)
			if period := repeatPeriod(g.Type(x).Shape, p.space); !ok && period > 0 {
				k, ok, p.period[x] = kindFull, true, period
			}
			if !ok {
				return nil, fail("%s reads %s, which is not whole rows, columns or one value of rows of %v", n.Op, g.Type(x), p.space)
			}
			p.kind[x], p.invariant[x] = k, k == kindCol || k == kindScalar
		}
		for _, x := range n.Inputs {
			p.level[v] = max(p.level[v], p.level[x])
		}
		t := g.Type(v)
		switch {
		case rowReduction(g, n):
			p.level[v]++
			p.passes = max(p.passes, p.level[v])
			if !g.Type(n.Inputs[0]).Shape.Equal(p.space) || p.kind[n.Inputs[0]] != kindFull || p.invariant[n.Inputs[0]] {
				return nil, fail("%s reduces %s, not rows of %v", n.Op, g.Type(n.Inputs[0]), p.space)
			}
			p.kind[v] = kindRow
		case n.Op == "reshape":
			if p.kind[n.Inputs[0]] != kindRow || !(t.Shape.Equal(keep) || t.Shape.Equal(flat)) {
				return nil, fail("reshape to %v is not between the row shapes %v and %v", t.Shape, keep, flat)
			}
			p.kind[v], p.invariant[v] = kindRow, p.invariant[n.Inputs[0]]
		case rowElementwise(n):
			k, err := p.elementwiseKind(n, t.Shape)
			if err != nil {
				return nil, fail("%v", err)
			}
			p.kind[v] = k
			p.invariant[v] = true
			for _, x := range n.Inputs {
				p.invariant[v] = p.invariant[v] && p.invariant[x]
			}
		default:
			return nil, fail("%s is no step of a row kernel", n.Op)
		}
	}
	out := members[len(members)-1]
	p.lastUse[out] = len(g.Nodes)
	if p.kind[out] == kindFull {
		p.passes = max(p.passes, p.level[out]+1)
	}
	if k := p.kind[out]; (k != kindFull && k != kindRow) || p.invariant[out] {
		return nil, &rowsPlanError{at: out, msg: fmt.Sprintf("the result (%s, %s) is not computed per row", g.Type(out), k)}
	}
	return p, nil
}

// elementwiseKind is the kind of an elementwise step with result shape s: full over S,
// else the kind of its operands (rows, or columns) that must agree.
func (p *rowsPlan) elementwiseKind(n *core.Node, s core.Shape) (rowKind, error) {
	k := kindScalar
	if s.Equal(p.space) {
		k = kindFull
	} else {
		for _, x := range n.Inputs {
			switch xk := p.kind[x]; {
			case xk == kindScalar:
			case k == kindScalar || k == xk:
				k = xk
			default:
				return 0, fmt.Errorf("%s mixes %s and %s operands into %v", n.Op, k, xk, s)
			}
		}
		if k == kindScalar && s.NumElements() != 1 {
			k, _ = shapeKind(s, p.space) // a constant of a row or column shape (full)
		}
	}
	if k != kindFull && k != kindScalar && lowerings[n.Op].colAlign > 0 {
		return 0, fmt.Errorf("%s packs bits per element and runs on whole rows only", n.Op)
	}
	for _, x := range n.Inputs {
		if !operandFits(p.body.Type(x).Shape, p.kind[x], s, k) {
			return 0, fmt.Errorf("%s reads %s as %s values of %v", n.Op, p.body.Type(x), p.kind[x], s)
		}
	}
	return k, nil
}
