package session

import "pypto/core"

// graphKey is the compile-cache key of a graph: the fingerprint of its text form,
// which omits locations and numbers values canonically, so structurally equal graphs
// share one program (a hash of the text's content, a tenth of the cost of printing it).
func graphKey(g *core.Graph) string { return core.Fingerprint(g) }
