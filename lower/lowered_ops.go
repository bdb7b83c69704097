package lower

import "sort"

// LoweredOps lists, sorted, the Tensor Graph ops this compiler can lower to the
// device (whose lowering needs only instructions the simulator implements). Ops registered in core but absent here are refused by Compile with a
// CompileError; the Python tests use this list to expect that error until a lowering
// lands.
func LoweredOps() []string {
	names := make([]string, 0, len(lowerings))
	for n, l := range lowerings {
		if _, missing := l.unsupported(n); !missing {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
