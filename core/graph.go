package core

// Value names the result of a node: its index in Graph.Nodes.
type Value int

// OpParam is the pseudo-op of graph inputs.
const OpParam = "param"

// Node is one SSA definition: an op applied to earlier values, or a graph input.
type Node struct {
	Op     string
	Inputs []Value
	Attrs  Attrs
	Type   TensorType
	Name   string   // the parameter name, for OpParam nodes
	Loc    Location // where the user's code created it (not part of the text form)
}

// OutputSet is the set of values g returns.
func (g *Graph) OutputSet() map[Value]bool {
	out := make(map[Value]bool, len(g.Outputs))
	for _, o := range g.Outputs {
		out[o] = true
	}
	return out
}

// mapInputs gives n's inputs as values of a graph being rebuilt from n's: vals maps
// every earlier value of n's graph to its counterpart.
func (n *Node) mapInputs(vals []Value) []Value {
	ins := make([]Value, len(n.Inputs))
	for k, in := range n.Inputs {
		ins[k] = vals[in]
	}
	return ins
}

// Graph is a Tensor Graph: nodes in topological order (every input of a node is an
// earlier node), the parameters among them, and the values it returns.
type Graph struct {
	Name    string
	Nodes   []*Node
	Params  []Value
	Outputs []Value
}

// Type returns the type of a value.
func (g *Graph) Type(v Value) TensorType { return g.Nodes[v].Type }

// Users returns, for each value, the nodes that read it (in node order).
func (g *Graph) Users() [][]Value {
	users := make([][]Value, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			users[in] = append(users[in], Value(i))
		}
	}
	return users
}
