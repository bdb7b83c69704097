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
	g := c.graph
	needs := false
	for _, n := range g.Nodes {
		if reductionOps[n.Op] && len(axisRuns(reduceAxes(n.Attrs, len(g.Type(n.Inputs[0]).Shape)))) > 1 {
			needs = true
		}
	}
	if !needs {
		return nil
	}
	b := core.NewBuilder(g.Name)
	vals := make([]core.Value, len(g.Nodes))
	for _, p := range g.Params {
		vals[p] = b.Param(g.Nodes[p].Name, g.Nodes[p].Type)
	}
	for i, n := range g.Nodes {
		if n.Op == core.OpParam {
			continue
		}
		ins := make([]core.Value, len(n.Inputs))
		for j, in := range n.Inputs {
			ins[j] = vals[in]
		}
		var runs [][]int
		if reductionOps[n.Op] {
			runs = axisRuns(reduceAxes(n.Attrs, len(g.Type(n.Inputs[0]).Shape)))
		}
		if len(runs) <= 1 {
			v, err := b.Op(n.Op, ins, n.Attrs, n.Loc)
			if err != nil {
				return err
			}
			vals[i] = v
			continue
		}
		v := ins[0]
		for r := len(runs) - 1; r >= 0; r-- {
			axes := make([]int64, len(runs[r]))
			for j, a := range runs[r] {
				axes[j] = int64(a)
			}
			var err error
			if v, err = b.Op(n.Op, []core.Value{v}, core.Attrs{"axis": axes, "keepdims": true}, n.Loc); err != nil {
				return err
			}
		}
		shape := make([]int64, len(n.Type.Shape))
		for j, d := range n.Type.Shape {
			shape[j] = int64(d)
		}
		v, err := b.Op("reshape", []core.Value{v}, core.Attrs{"shape": shape}, n.Loc)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	for _, o := range g.Outputs {
		b.Output(vals[o])
	}
	c.graph = b.Graph()
	return nil
}
