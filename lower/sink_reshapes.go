package lower

import "pypto/core"

// runSinkReshapes moves reshapes below the elementwise ops that read them: op(reshape(a),
// y) with y of the result's shape becomes reshape(op(a, reshape(y))). A reshape is free
// (an alias of its input's bytes), but it ends a fusion chain: a linear layer on a 3-D
// input is reshape -> matmul -> bias add -> reshape, and the residual add after it
// would otherwise be a kernel of its own instead of joining the matmul's epilogue.
// Only reshapes of a matmul's product (or of an elementwise chain on it) move, as only
// there does moving join kernels: elsewhere it would just cut the fusion chains at
// another place. A result may end as a reshape: it is an alias of the op's output, which
// then gets a result's buffer. Ops whose operands broadcast stay (their indexing depends
// on the shape), unless the reshape only drops leading 1s: then a broadcast operand
// drops them too.
func runSinkReshapes(c *compilation) error {
	for range 8 { // each round moves every reshape past one more op
		changed, err := sinkReshapesOnce(c)
		if err != nil {
			return err
		}
		// The reshapes left behind are dead; as readers they would keep the ops they
		// read out of the fusion chains.
		c.graph = core.EliminateDeadCode(c.graph)
		if !changed {
			break
		}
	}
	return nil
}

func sinkReshapesOnce(c *compilation) (bool, error) {
	g := c.graph
	changed := false
	mm := matmulChains{}
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, ins []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		if !fusable(n) || n.Op == "full" {
			return -1, false, nil
		}
		nb := b.Graph()
		var from core.Shape // the shape the reshaped operands come from
		for _, x := range ins {
			xn := nb.Nodes[x]
			if xn.Op != "reshape" || !nb.Type(x).Shape.Equal(n.Type.Shape) {
				continue
			}
			if !mm.reaches(nb, xn.Inputs[0]) {
				continue
			}
			src := nb.Type(xn.Inputs[0]).Shape
			if from == nil {
				from = src
			} else if !from.Equal(src) {
				return -1, false, nil
			}
		}
		if from == nil || from.Equal(n.Type.Shape) {
			return -1, false, nil
		}
		args := make([]core.Value, len(ins))
		for j, x := range ins {
			t := nb.Type(x)
			switch xn := nb.Nodes[x]; {
			case xn.Op == "reshape" && t.Shape.Equal(n.Type.Shape) && nb.Type(xn.Inputs[0]).Shape.Equal(from) && mm.reaches(nb, xn.Inputs[0]):
				args[j] = xn.Inputs[0]
			case len(t.Shape) == 0:
				args[j] = x // a scalar broadcasts to any shape
			case t.Shape.Equal(n.Type.Shape):
				r, err := b.Op("reshape", []core.Value{x}, core.Attrs{"shape": int64s(from)}, n.Loc)
				if err != nil {
					return -1, false, err
				}
				args[j] = r
			default:
				// A broadcast operand moves too when the reshape only drops leading
				// 1s ([1,s,h] -> [s,h]): it loses its axes before from's (all 1).
				drop := len(t.Shape) - len(from)
				if !dropsLeadingOnes(n.Type.Shape, from) || drop < 0 || !allOnes(t.Shape[:drop]) {
					return -1, false, nil
				}
				r, err := b.Op("reshape", []core.Value{x}, core.Attrs{"shape": int64s(t.Shape[drop:])}, n.Loc)
				if err != nil {
					return -1, false, err
				}
				args[j] = r
			}
		}
		inner, err := b.Op(n.Op, args, n.Attrs, n.Loc)
		if err != nil {
			return -1, false, err
		}
		changed = true
		r, err := b.Op("reshape", []core.Value{inner}, core.Attrs{"shape": int64s(n.Type.Shape)}, n.Loc)
		return r, true, err
	})
	if err != nil || !changed {
		return false, err
	}
	c.graph = ng
	return true, nil
}

// dropsLeadingOnes reports whether shape is from with 1s before it.
func dropsLeadingOnes(shape, from core.Shape) bool {
	k := len(shape) - len(from)
	return k > 0 && allOnes(shape[:k]) && shape[k:].Equal(from)
}

func allOnes(s core.Shape) bool {
	for _, d := range s {
		if d != 1 {
			return false
		}
	}
	return true
}

// matmulChains remembers which values of the graph being built are a matmul's product
// or an elementwise op on one (through any chain of them).
type matmulChains map[core.Value]bool

func (m matmulChains) reaches(g *core.Graph, v core.Value) bool {
	if r, ok := m[v]; ok {
		return r
	}
	n := g.Nodes[v]
	r := n.Op == "matmul"
	if !r && fusable(n) {
		for _, x := range n.Inputs {
			if m.reaches(g, x) {
				r = true
				break
			}
		}
	}
	m[v] = r
	return r
}
