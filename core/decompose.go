package core

// DecomposeGraph returns a copy of g in which every composite op (an OpDef with
// Decompose) is replaced by its decomposition, repeated until only primitives remain,
// so that the device needs lowerings for primitives only. Each replacement must have
// exactly the type of the node it replaces, and keeps its location, so errors in later
// stages still point at the user's line. g itself is not modified.
//
// The result is the physical graph: every layout tag is dropped (each value's data is
// row-major over its shape whatever its layout, and layout_transform has become the
// pads, reshapes, transposes and slices that move the data), so types match up to
// layout. g must be concrete: the compiler takes the graphs Specialize makes.
func DecomposeGraph(g *Graph) (*Graph, error) {
	if err := Verify(g); err != nil {
		return nil, err
	}
	if syms := GraphSymbols(g); len(syms) > 0 {
		return nil, Errorf(InternalError, "graph %s has symbolic dims (%v); specialise it (core.Specialize) before compiling", quoteName(g.Name), syms)
	}
	const maxRounds = 16 // composites of composites nest a few levels deep, never this many
	for round := 0; round < maxRounds; round++ {
		if !hasComposite(g) && !hasLayouts(g) {
			return g, nil
		}
		next, err := decomposeOnce(g)
		if err != nil {
			return nil, err
		}
		g = next
	}
	return nil, Errorf(InternalError, "graph %s: composite ops still remain after %d rounds of decomposition", quoteName(g.Name), maxRounds)
}

// IsComposite reports whether an op is defined by a decomposition into other ops.
func IsComposite(op string) bool {
	d, ok := LookupOp(op)
	return ok && d.Decompose != nil
}

func hasComposite(g *Graph) bool {
	for _, n := range g.Nodes {
		if IsComposite(n.Op) {
			return true
		}
	}
	return false
}

func decomposeOnce(g *Graph) (*Graph, error) {
	b := NewBuilder(g.Name)
	vals := make([]Value, len(g.Nodes))
	for _, p := range g.Params {
		vals[p] = b.Param(g.Nodes[p].Name, g.Nodes[p].Type.withoutLayout())
	}
	names := indexNames(g)
	for i, n := range g.Nodes {
		if n.Op == OpParam {
			continue
		}
		ins := n.mapInputs(vals)
		def, _ := LookupOp(n.Op)
		var v Value
		var err error
		first := len(b.g.Nodes)
		if typed, ok := typedDecompositions[n.Op]; ok {
			types := make([]TensorType, len(n.Inputs))
			for k, in := range n.Inputs {
				types[k] = g.Nodes[in].Type
			}
			v, err = typed(b, ins, types, printedAttrs(n), n.Loc)
		} else if def.Decompose != nil {
			v, err = def.Decompose(b, ins, printedAttrs(n), n.Loc)
		}
		if def.Decompose != nil {
			if err == nil && !b.Type(v).Equal(n.Type.withoutLayout()) {
				err = Errorf(InternalError, "graph %s: %s: the decomposition of %s gives %s", quoteName(g.Name), formatNodeWith(g, names, i), n.Op, b.Type(v))
			}
		} else {
			v, err = b.Op(n.Op, ins, n.Attrs, n.Loc)
		}
		if err != nil {
			return nil, AsInternal(err, "graph %s: decomposing %s", quoteName(g.Name), formatNodeWith(g, names, i))
		}
		if def.Decompose != nil {
			inheritTileAttrs(b.g.Nodes[first:], n.Attrs)
		}
		vals[i] = v
	}
	for _, o := range g.Outputs {
		b.Output(vals[o])
	}
	return b.Graph(), nil
}

// AsInternal wraps an error from a stage that should not fail on a verified graph as
// an InternalError that says where, keeping the original message and location.
func AsInternal(err error, format string, args ...any) *Error {
	e, ok := err.(*Error)
	if !ok {
		e = Errorf(InternalError, "%v", err)
	}
	if e.Kind == InternalError {
		return e
	}
	w := Errorf(InternalError, format, args...)
	w.Message += ": " + e.Message
	w.Loc = e.Loc
	w.Causes = append(w.Causes, e.Causes...)
	return w
}
