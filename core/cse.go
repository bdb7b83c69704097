package core

import (
	"fmt"
	"slices"
	"strings"
)

// commutative ops give the same bytes with their two operands swapped (IEEE + and * are
// commutative, NaN and signed zeros included; maximum and minimum give NaN for a NaN
// either side and +0 above -0 either way), so CSE keys them by their sorted operands.
var commutative = map[string]bool{
	"add": true, "mul": true, "maximum": true, "minimum": true, "equal": true, "not_equal": true,
	"logical_and": true, "logical_or": true, "logical_xor": true,
}

// EliminateCommonSubexpressions returns g with every node that repeats an earlier one
// (the same op on the same inputs with the same attributes, defaults included) replaced
// by the earlier one, and the repeats removed. Every op is a pure function of its
// inputs and attributes, so the values are the same; the kept node's location is the
// first occurrence's, where an error would first have been raised. Operands of
// commutative ops are compared in either order. Params are never
// merged: each is its own input.
func EliminateCommonSubexpressions(g *Graph) *Graph {
	same := make([]Value, len(g.Nodes)) // each value's representative, an earlier or equal value
	seen := map[string]Value{}
	keep := make([]bool, len(g.Nodes))
	var key strings.Builder
	for i, n := range g.Nodes {
		same[i], keep[i] = Value(i), true
		if n.Op == OpParam {
			continue
		}
		key.Reset()
		fmt.Fprintf(&key, "%s(", n.Op)
		ins := n.mapInputs(same)
		if commutative[n.Op] {
			slices.Sort(ins)
		}
		for _, in := range ins {
			fmt.Fprintf(&key, "%d,", in)
		}
		fmt.Fprintf(&key, ")%s:%s", printedAttrs(n), n.Type)
		if first, ok := seen[key.String()]; ok {
			same[i], keep[i] = first, false
			continue
		}
		seen[key.String()] = Value(i)
	}
	return keepNodes(replaceUses(g, same), keep)
}

// replaceUses returns a copy of g whose node inputs and outputs read by[v] instead of
// each value v (a node's replacement always comes earlier in the graph).
func replaceUses(g *Graph, by []Value) *Graph {
	out := &Graph{Name: g.Name, Params: g.Params, Nodes: make([]*Node, len(g.Nodes))}
	for i, n := range g.Nodes {
		c := *n
		c.Inputs = make([]Value, len(n.Inputs))
		for k, in := range n.Inputs {
			c.Inputs[k] = by[in]
		}
		out.Nodes[i] = &c
	}
	for _, o := range g.Outputs {
		out.Outputs = append(out.Outputs, by[o])
	}
	return out
}
