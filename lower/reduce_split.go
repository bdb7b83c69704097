package lower

import (
	"sort"

	"pypto/core"
)

// reductionOps are the reductions the device lowers, over one contiguous run of axes.
var reductionOps = map[string]bool{"sum": true, "prod": true, "max": true, "min": true}

// reduceAxes resolves a reduction's axis attribute: empty means every axis; negative
// axes count from the end. The result is sorted and free of repeats.
func reduceAxes(attrs core.Attrs, ndim int) []int {
	raw := attrs.Ints("axis")
	if len(raw) == 0 {
		all := make([]int, ndim)
		for i := range all {
			all[i] = i
		}
		return all
	}
	seen := map[int]bool{}
	var axes []int
	for _, a := range raw {
		if a < 0 {
			a += ndim
		}
		if !seen[a] {
			seen[a] = true
			axes = append(axes, a)
		}
	}
	sort.Ints(axes)
	return axes
}

// axisRuns splits sorted axes into maximal runs of consecutive axes.
func axisRuns(axes []int) [][]int {
	var runs [][]int
	for i, a := range axes {
		if i > 0 && a == axes[i-1]+1 {
			runs[len(runs)-1] = append(runs[len(runs)-1], a)
		} else {
			runs = append(runs, []int{a})
		}
	}
	return runs
}

// runSplitReductions rewrites every reduction over axes that are not one contiguous run
// (sum over axes 0 and 2) into a chain of reductions over contiguous runs, last run
// first, each keeping its reduced axes as size 1, then a reshape to the result type.
// The device kernel reduces the middle axis of an [outer, r, inner] view, which a
// contiguous run always is.
func runSplitReductions(c *compilation) error {
	g, err := rewriteGraph(c.graph, func(b *core.Builder, _ core.Value, n *core.Node, ins []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		if !reductionOps[n.Op] {
			return -1, false, nil
		}
		runs := axisRuns(reduceAxes(n.Attrs, len(b.Type(ins[0]).Shape)))
		if len(runs) <= 1 {
			return -1, false, nil
		}
		v := ins[0]
		for r := len(runs) - 1; r >= 0; r-- {
			var err error
			if v, err = b.Op(n.Op, []core.Value{v}, core.Attrs{"axis": int64s(runs[r]), "keepdims": true}, n.Loc); err != nil {
				return -1, false, err
			}
		}
		v, err := b.Op("reshape", []core.Value{v}, core.Attrs{"shape": int64s(n.Type.Shape)}, n.Loc)
		return v, true, err
	})
	if err != nil {
		return err
	}
	c.graph = g
	return nil
}
