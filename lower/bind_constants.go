package lower

import (
	"fmt"

	"pypto/core"
)

// runBindConstants turns every constant node into a graph param after the caller's,
// whose data the Executable binds on every run: the elements reach GM with the inputs,
// and no kernel computes them. Later stages see an ordinary input.
func runBindConstants(c *compilation) error {
	taken := map[string]bool{}
	for _, p := range c.graph.Params {
		taken[c.graph.Nodes[p].Name] = true
	}
	g, err := rewriteGraph(c.graph, func(b *core.Builder, _ core.Value, n *core.Node, _ []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		if n.Op != "constant" {
			return -1, false, nil
		}
		data, err := core.ConstantBytes(n.Attrs)
		if err != nil {
			return -1, false, core.Errorf(core.InternalError, "constant with bad data reached the compiler: %v", err).WithLoc(n.Loc)
		}
		name := fmt.Sprintf("const%d", len(c.constants))
		for taken[name] {
			name += "_"
		}
		taken[name] = true
		c.constants = append(c.constants, data)
		return b.Param(name, n.Type), true, nil
	})
	if err != nil {
		return err
	}
	c.graph = g
	return nil
}
