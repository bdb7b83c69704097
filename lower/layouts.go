package lower

import (
	"fmt"

	"pypto/core"
)

// Layout inference. Every GM tensor the kernels read or write is ND (row-major): the
// cube's fractal (NZ) format exists only in L1 and L0, where the TLOAD from GM and the
// L1 -> L0 moves put operands, so ND is the format that costs nothing to feed the cube
// in this model, and a graph needs a layout conversion only where the user asks for
// another layout (a p.layout_transform, an NZ or NCHW/NHWC/CHWN input or result).
// This pass removes the conversions that undo each other exactly and reports every one
// it keeps, with its place in the user's code and the bytes it moves, so a user can see
// what the layouts of a program cost.

// LayoutConversion is a layout_transform the compiled program keeps.
type LayoutConversion struct {
	From  string        `json:"from"`
	To    string        `json:"to"`
	Shape string        `json:"shape"` // the converted tensor's type
	Bytes int           `json:"bytes"` // read and written by the conversion
	Loc   core.Location `json:"-"`
	Where string        `json:"where"` // the user's file:line, when known
}

func (l LayoutConversion) String() string {
	at := ""
	if l.Where != "" {
		at = " at " + l.Where
	}
	return fmt.Sprintf("%s -> %s of %s (%d bytes moved)%s", l.From, l.To, l.Shape, l.Bytes, at)
}

// runInferLayouts folds layout_transform(layout_transform(x, L), layout of x) to x when
// the round trip is exact: from ND (NZ pads with zeros that the way back drops) or
// between the 4-D layouts (permutations). NZ -> ND -> NZ is kept: the padding of the
// original NZ tensor need not be zeros. A conversion to the layout x already has is
// dropped too. What remains is reported by the decompose pass, which records
// compilation.layouts at every optimisation level.
func runInferLayouts(c *compilation) error {
	g := c.graph
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, ins []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if n.Op != "layout_transform" {
			return -1, false, nil
		}
		x := n.Inputs[0]
		if g.Type(x).Layout == n.Type.Layout {
			return ins[0], true, nil
		}
		if inner := g.Nodes[x]; inner.Op == "layout_transform" {
			src := inner.Inputs[0]
			if st := g.Type(src); st.Layout == n.Type.Layout && st.Shape.Equal(n.Type.Shape) && st.Layout.Kind != core.NZ {
				return val(src), true, nil
			}
		}
		return -1, false, nil
	})
	if err != nil {
		return err
	}
	c.graph = ng
	return nil
}

// keptConversions lists the layout_transform nodes of g that compute something.
func keptConversions(g *core.Graph) []LayoutConversion {
	var out []LayoutConversion
	users := g.Users()
	isOut := g.OutputSet()
	for i, n := range g.Nodes {
		if n.Op != "layout_transform" || (len(users[i]) == 0 && !isOut[core.Value(i)]) {
			continue
		}
		in := g.Type(n.Inputs[0])
		lc := LayoutConversion{From: in.Layout.String(), To: n.Type.Layout.String(), Shape: in.String(),
			Bytes: in.Bytes() + n.Type.Bytes(), Loc: n.Loc}
		if n.Loc.File != "" {
			lc.Where = fmt.Sprintf("%s:%d", n.Loc.File, n.Loc.Line)
		}
		out = append(out, lc)
	}
	return out
}

// LayoutConversions lists the layout conversions the program keeps (see runInferLayouts).
func (e *Executable) LayoutConversions() []LayoutConversion { return e.layouts }
