package core

// Builder constructs a Graph one node at a time, inferring and checking types as it
// goes so that an error points at the user's call that caused it.
type Builder struct {
	g *Graph
}

// NewBuilder starts an empty graph.
func NewBuilder(name string) *Builder { return &Builder{g: &Graph{Name: name}} }

// Param adds a graph input.
func (b *Builder) Param(name string, t TensorType) Value {
	v := Value(len(b.g.Nodes))
	b.g.Nodes = append(b.g.Nodes, &Node{Op: OpParam, Type: t.clone(), Name: name})
	b.g.Params = append(b.g.Params, v)
	return v
}

// Op applies a registered op. Errors are *Error carrying loc.
func (b *Builder) Op(name string, inputs []Value, attrs Attrs, loc Location) (Value, error) {
	types := make([]TensorType, len(inputs))
	for i, in := range inputs {
		if int(in) < 0 || int(in) >= len(b.g.Nodes) {
			return -1, Errorf(InternalError, "%s: input %d refers to value %d, which does not exist", name, i, in).WithLoc(loc)
		}
		types[i] = b.g.Nodes[in].Type
	}
	t, full, err := InferOp(name, types, attrs)
	if err != nil {
		return -1, err.WithLoc(loc)
	}
	v := Value(len(b.g.Nodes))
	b.g.Nodes = append(b.g.Nodes, &Node{Op: name, Inputs: append([]Value(nil), inputs...), Attrs: full, Type: t, Loc: loc})
	return v, nil
}

// Output marks a value as a graph result.
func (b *Builder) Output(v Value) { b.g.Outputs = append(b.g.Outputs, v) }

// Graph returns the graph built so far; the builder must not be used afterwards.
func (b *Builder) Graph() *Graph { return b.g }

// Type returns the type of a value built so far.
func (b *Builder) Type(v Value) TensorType { return b.g.Nodes[v].Type }
