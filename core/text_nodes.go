package core

// NodeNames is the printed name of every node of g, as Format prints them (%in0 for a
// param, %N for the others), indexed like g.Nodes.
func NodeNames(g *Graph) []string { return canonicalNames(g) }

// NodeLines is Format's line of every node of g ("%N = op(%a, %b) {attrs} : type"),
// indexed like g.Nodes; params have "".
func NodeLines(g *Graph) []string {
	names := canonicalNames(g)
	out := make([]string, len(g.Nodes))
	for i, n := range g.Nodes {
		if n != nil && n.Op != OpParam {
			out[i] = formatNodeWith(g, names, i)
		}
	}
	return out
}
