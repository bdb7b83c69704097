package lower

import (
	"fmt"
	"slices"

	"pypto/core"
	"pypto/dtype"
)

// A padded program zeroes the padded rows of an operand that a matmul contracts
// (where(keep, v, 0), core.PlanPadding), and the select usually joins the epilogue of
// the matmul that makes v (the value projection). Where that matmul computes only the
// run's rows, the select is the identity on every row it computes (keep is true
// exactly there) and the rows past them are left unwritten whatever it says; the
// zeros it was there for are read by no one either, as the kernels that read those
// rows cut their K at the run's size (else keepPadded has made v's producer padded).
// So a dynamic matmul's epilogue drops such a select: the bits of the rows it writes
// are the same, its vector cores no longer load the mask nor select per row (on a2 a
// select by a row mask costs more than the bias add it follows), and the tile search
// chooses its tile again without it.

// dropRowSelects rewrites the epilogue of every dynamic matmul of tg whose body selects
// by a row mask of its own dynamic rows, and searches its tile again.
func dropRowSelects(c *compilation, tg *TileGraph, ext []extents, masks []int) error {
	rowMasks := map[int]bool{} // the masks' tensors, params and their reshapes
	for _, p := range masks {
		if p >= 0 && p < len(tg.Params) {
			rowMasks[tg.Params[p]] = true
		}
	}
	est := newEstimator(c.chip)
	est.wholeK = c.opts.Deterministic
	vectors := c.chip.VectorCores / max(c.chip.CubeCores, 1)
	for _, op := range tg.Ops {
		if op.Kind != TileMatmulEpilogue || op.Dynamic == nil {
			continue
		}
		attrs, inputs, changed, err := withoutRowSelects(tg, op, ext, rowMasks)
		if err != nil {
			return core.Errorf(core.InternalError, "%s: dropping the selects of its padded rows: %v", op.Op, err).WithLoc(op.Loc)
		}
		if !changed {
			continue
		}
		old := *op
		op.Attrs, op.Inputs = attrs, inputs
		if given, err := userTileShape(op); err != nil || given != nil {
			continue // the user's tile stays
		}
		ch, err := searchTiling(est, tg, op, matmulCandidates)
		if err != nil {
			*op = old // keep the select with the tile found for it
			continue
		}
		grid := tileGrid(op.Kind, op.Problem, ch.tile)
		if parts := epilogueParts(ch.tile[0], vectors); grid[3] != 1 || vectors < 1 || vectors%parts != 0 {
			continue // the new tile would not be dynamic: the old one serves the new body
		}
		op.Tile, op.Grid, op.Reason = ch.tile, grid, ch.reason
	}
	return nil
}

// withoutRowSelects is op's epilogue with every where(m, x, c) whose condition m is a
// row mask of op's dynamic rows replaced by x, and op's inputs less those no longer
// read; changed is false when the body has no such select.
func withoutRowSelects(tg *TileGraph, op *TileOp, ext []extents, rowMasks map[int]bool) (core.Attrs, []int, bool, error) {
	body, err := core.FusedBody(op.Attrs)
	if err != nil {
		return nil, nil, false, err
	}
	outShape := body.Type(body.Outputs[0]).Shape
	// The body's first param is the product; param k > 0 is the op's input k+1 (after
	// A and B).
	input := func(k int) int { return op.Inputs[k+1] }
	if len(body.Params)+1 != len(op.Inputs) {
		return nil, nil, false, fmt.Errorf("the epilogue takes %d params for %d inputs", len(body.Params), len(op.Inputs))
	}
	isRowMask := map[core.Value]bool{}
	for k, prm := range body.Params[1:] {
		if rowMaskOf(tg, input(k+1), op.Dynamic.Index, ext, rowMasks) {
			isRowMask[prm] = true
		}
	}
	replaced := map[core.Value]core.Value{} // a select -> the value it passes on
	for i, n := range body.Nodes {
		if n.Op == "where" && isRowMask[n.Inputs[0]] && body.Type(n.Inputs[1]).Shape.Equal(n.Type.Shape) && body.Type(n.Inputs[1]).DType == n.Type.DType {
			replaced[core.Value(i)] = n.Inputs[1]
		}
	}
	if len(replaced) == 0 {
		return nil, nil, false, nil
	}
	resolve := func(v core.Value) core.Value {
		for {
			r, ok := replaced[v]
			if !ok {
				return v
			}
			v = r
		}
	}
	// The nodes the output still needs, from it back.
	live := map[core.Value]bool{}
	var mark func(v core.Value)
	mark = func(v core.Value) {
		v = resolve(v)
		if live[v] {
			return
		}
		live[v] = true
		for _, x := range body.Nodes[v].Inputs {
			mark(x)
		}
	}
	mark(body.Outputs[0])
	if !live[body.Params[0]] {
		return nil, nil, false, nil // the product itself must stay the first input
	}
	b := core.NewBuilder(body.Name)
	inner := map[core.Value]core.Value{}
	inputs := slices.Clone(op.Inputs[:2])
	for k, prm := range body.Params {
		if live[prm] {
			inner[prm] = b.Param(body.Nodes[prm].Name, body.Type(prm))
			if k > 0 {
				inputs = append(inputs, input(k))
			}
		}
	}
	for i, n := range body.Nodes {
		v := core.Value(i)
		if n.Op == core.OpParam || !live[v] {
			continue
		}
		args := make([]core.Value, len(n.Inputs))
		for j, x := range n.Inputs {
			args[j] = inner[resolve(x)]
		}
		if inner[v], err = b.Op(n.Op, args, n.Attrs, n.Loc); err != nil {
			return nil, nil, false, err
		}
	}
	out := inner[resolve(body.Outputs[0])]
	if !b.Type(out).Shape.Equal(outShape) {
		return nil, nil, false, fmt.Errorf("the epilogue's result would be %s, not %s", b.Type(out).Shape, outShape)
	}
	b.Output(out)
	attrs := core.Attrs{}
	for k, v := range op.Attrs {
		attrs[k] = v
	}
	attrs["body"] = core.Format(b.Graph())
	return attrs, inputs, true, nil
}

// rowMaskOf reports whether tensor t is one of the plan's bool masks (or a reshape of
// one) that is true exactly at the run's rows of symbol sym along the epilogue's rows
// (the axis before the last), and of size 1 along the columns.
func rowMaskOf(tg *TileGraph, t, sym int, ext []extents, rowMasks map[int]bool) bool {
	x := tg.Tensors[t]
	root := t
	for a := tg.Tensors[root].Alias; a != 0; a = tg.Tensors[root].Alias {
		root = a - 1
	}
	shape := x.Type.Shape
	r := len(shape)
	if !rowMasks[root] || x.Type.DType != dtype.Bool || r < 2 || shape[r-1] != 1 || !ext[t].known {
		return false
	}
	return ext[t].axes[r-2] == sym && !slices.ContainsFunc(ext[t].axes[:r-2], func(s int) bool { return s >= 0 })
}
