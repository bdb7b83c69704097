package lower

import "pypto/core"

// The Tensor Graph clean-ups of O1 (the rewrites themselves live in core, beside the
// graph they rewrite; constant folding is in fold.go).

func runSimplify(c *compilation) error {
	g, err := core.SimplifyAlgebra(c.graph)
	if err != nil {
		return err
	}
	c.graph = g
	return nil
}

func runCSE(c *compilation) error {
	c.graph = core.EliminateCommonSubexpressions(c.graph)
	return nil
}

func runDCE(c *compilation) error {
	c.graph = core.EliminateDeadCode(c.graph)
	return nil
}
