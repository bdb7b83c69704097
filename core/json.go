package core

// The JSON form of a Tensor Graph is what the visualisation shows of this level: the
// text form's content (names as printed, ops, completed attributes, types) plus what
// the text leaves out, the user's line of every node. It is an export only; nothing
// parses it back (the text form is the one that round-trips).

// NodeJSON is one node of a Tensor Graph in its JSON form.
type NodeJSON struct {
	ID     int               `json:"id"`
	Name   string            `json:"name"` // as the text form prints it: %x, %3
	Op     string            `json:"op"`
	Inputs []int             `json:"inputs"`
	Attrs  map[string]string `json:"attrs,omitempty"` // in text-form spelling, defaults completed
	Type   string            `json:"type"`            // f16[2,3]@NZ(...)
	DType  string            `json:"dtype"`
	Shape  string            `json:"shape"`
	Layout string            `json:"layout"`
	Bytes  int               `json:"bytes"`
	Loc    Location          `json:"loc"`
	Output bool              `json:"output,omitempty"`
	// BodyOps are the ops of a fused node's body graph, in order.
	BodyOps []string `json:"body_ops,omitempty"`
}

// GraphJSON is a Tensor Graph in its JSON form: nodes in topological order, IDs their
// indices in Graph.Nodes.
type GraphJSON struct {
	Name    string     `json:"name"`
	Nodes   []NodeJSON `json:"nodes"`
	Outputs []int      `json:"outputs"`
}

// ExportJSON gives g's JSON form. Like Format it never fails: a node of an unverified
// graph that cannot be described is exported with what it has.
func ExportJSON(g *Graph) GraphJSON {
	out := GraphJSON{Name: g.Name, Outputs: make([]int, len(g.Outputs))}
	names := canonicalNames(g)
	isOut := g.OutputSet()
	for i, o := range g.Outputs {
		out.Outputs[i] = int(o)
	}
	for i, n := range g.Nodes {
		if n == nil {
			continue
		}
		nj := NodeJSON{ID: i, Name: names[i], Op: n.Op, Inputs: make([]int, len(n.Inputs)), Type: n.Type.String(),
			DType: n.Type.DType.String(), Shape: n.Type.ShapeString(), Layout: n.Type.Layout.String(),
			Loc: n.Loc, Output: isOut[Value(i)]}
		if n.Type.Dims == nil {
			nj.Bytes = n.Type.Bytes()
		}
		for k, in := range n.Inputs {
			nj.Inputs[k] = int(in)
		}
		nj.Attrs = printedAttrs(n).Strings()
		if text, ok := n.Attrs["body"].(string); ok {
			nj.Attrs["body"] = text // a graph's text: shown as such, not quoted
			if body, err := FusedBody(n.Attrs); err == nil {
				for _, bn := range body.Nodes {
					if bn != nil && bn.Op != OpParam {
						nj.BodyOps = append(nj.BodyOps, bn.Op)
					}
				}
			}
		}
		out.Nodes = append(out.Nodes, nj)
	}
	return out
}

// Strings gives the attributes in text-form spelling, by name (nil when empty).
func (a Attrs) Strings() map[string]string {
	if len(a) == 0 {
		return nil
	}
	out := make(map[string]string, len(a))
	for k, v := range a {
		out[k] = formatAttr(v)
	}
	return out
}
