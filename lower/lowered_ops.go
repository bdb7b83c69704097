package lower

import "sort"

// expandedOps are ops a compiler pass rewrites into others before tiling (see
// arg_reduce.go, pad.go, bind_constants.go), with the ops they become.
var expandedOps = map[string][]string{
	"argmax": {"max", "equal", "isnan", "logical_or", "iota", "full", "where", "min"},
	"argmin": {"min", "equal", "isnan", "logical_or", "iota", "full", "where"},
	"pad":    {"full", "concat", "reshape"},
	// constant becomes an input whose data the program binds itself (bind-constants)
	"constant": {},
}

// LoweredOps lists, sorted, the Tensor Graph ops this compiler can lower to the
// device: those with a lowering whose instructions the simulator implements, and those
// a pass rewrites into such ops. Ops registered in core but absent here are refused by
// Compile with a CompileError; the Python tests use this list to expect that error
// until a lowering lands.
func LoweredOps() []string {
	ok := map[string]bool{}
	for n, l := range lowerings {
		if _, missing := l.unsupported(n); !missing {
			ok[n] = true
		}
	}
	names := make([]string, 0, len(ok))
	for n := range ok {
		names = append(names, n)
	}
	for n, parts := range expandedOps {
		all := true
		for _, p := range parts {
			all = all && ok[p]
		}
		if all {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
