package session

import "pypto/core"

// graphKey is the compile-cache key of a graph: its text form, which omits locations
// and numbers values canonically, so structurally equal graphs share one program.
func graphKey(g *core.Graph) string { return core.Format(g) }
