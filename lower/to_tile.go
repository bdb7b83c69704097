package lower

import (
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// buildTileGraph expands every node of the Tensor Graph over a grid of tiles. Each op is
// its own tile op with its result in GM (fusion is a later pass).
func buildTileGraph(g *core.Graph, opts Options, folds map[core.Value]viewFold) (*TileGraph, error) {
	chip := opts.Chip
	tg := &TileGraph{Name: g.Name}
	isOutput := map[core.Value]bool{}
	for _, o := range g.Outputs {
		isOutput[o] = true
	}
	tensorOf := map[core.Value]int{}
	addTensor := func(v core.Value, role TensorRole) int {
		tensorOf[v] = len(tg.Tensors)
		tg.Tensors = append(tg.Tensors, GMTensor{Value: v, Type: g.Type(v), Role: role})
		return tensorOf[v]
	}
	for _, p := range g.Params {
		tg.Params = append(tg.Params, addTensor(p, RoleInput))
	}
	readers := map[core.Value]int{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			readers[in]++
		}
	}
	donated := map[core.Value]bool{}
	for _, k := range opts.Donate {
		if k >= 0 && k < len(g.Params) {
			donated[g.Params[k]] = true
		}
	}
	packs := packableConcats(g, donated)
	for i, n := range g.Nodes {
		v := core.Value(i)
		if n.Op == core.OpParam {
			continue
		}
		if pieces, ok := packs[v]; ok { // the inputs' own bytes: no kernel
			t := addTensor(v, RoleTemp)
			for _, x := range pieces {
				tg.Tensors[t].Pieces = append(tg.Tensors[t].Pieces, tensorOf[x])
			}
			tg.Tensors[t].Alias = tg.Tensors[t].Pieces[0] + 1
			continue
		}
		low, ok := lowerings[n.Op]
		if !ok {
			return nil, core.Errorf(core.CompileError, "op %s has no lowering to the device", n.Op).WithLoc(n.Loc).
				Because("every op must run on the simulated NPU; there is no host fallback")
		}
		if low.check != nil {
			ins := make([]core.TensorType, len(n.Inputs))
			for i, in := range n.Inputs {
				ins[i] = g.Type(in)
			}
			if err := low.check(ins, n.Type); err != nil {
				return nil, err.WithLoc(n.Loc)
			}
		}
		role := RoleTemp
		if isOutput[v] {
			role = RoleOutput
		}
		if f, ok := folds[v]; ok { // read in place by matrix kernels: no kernel
			src := root(tg.Tensors, tensorOf[f.src])
			t := addTensor(v, RoleTemp)
			m := f.m
			tg.Tensors[t].Alias, tg.Tensors[t].View = src+1, &m
			continue
		}
		if n.Op == "reshape" {
			// Same bytes, new shape: an alias of the input's buffer, no kernel. A result
			// that reshapes a temporary makes the temporary a result too, so that its
			// bytes live through the run in a buffer of their own.
			src := root(tg.Tensors, tensorOf[n.Inputs[0]])
			if role == RoleOutput && tg.Tensors[src].Role == RoleTemp {
				tg.Tensors[src].Role = RoleOutput
			}
			t := addTensor(v, role)
			tg.Tensors[t].Alias = src + 1
			continue
		}
		var ops []*TileOp
		if writesInPlace(low.kind) {
			ops, _ = updateOps(g, n, v, tg, tensorOf, inPlaceOK(g, n, tg.Tensors, tensorOf, readers, isOutput, donated), role)
		} else {
			ops = tileOpsOf(g, n, v, low, tensorOf, addTensor(v, role))
		}
		for _, op := range ops {
			if err := chooseTiling(op, tg.Tensors, opts); err != nil {
				if ce, ok := err.(*core.Error); ok {
					return nil, ce.WithLoc(n.Loc) // already says what failed, where in a kernel
				}
				return nil, core.Errorf(core.CompileError, "%s: %v", n.Op, err).WithLoc(n.Loc)
			}
			tg.Ops = append(tg.Ops, op)
			sum, err := splitKSum(tg, op, chip)
			if err != nil {
				return nil, core.Errorf(core.CompileError, "%s: %v", n.Op, err).WithLoc(n.Loc)
			}
			if sum != nil {
				tg.Ops = append(tg.Ops, sum)
			}
		}
	}
	for _, o := range g.Outputs {
		tg.Outputs = append(tg.Outputs, tensorOf[o])
	}
	return tg, nil
}

// chooseTiling sets the problem size, tile shape and grid of a tile op.
func chooseTiling(op *TileOp, tensors []GMTensor, opts Options) error {
	chip := opts.Chip
	var err error
	outT := tensors[op.Output].Type
	switch op.Kind {
	case TileMatmul, TileMatmulEpilogue:
		a := tensors[op.Inputs[0]].Type
		ra, out := len(a.Shape), outT.Shape
		k := a.Shape[ra-1]
		if op.Attrs.Bool("transpose_a", false) {
			k = a.Shape[ra-2]
		}
		m, nn := out[len(out)-2], out[len(out)-1]
		op.Problem = []int{out[:len(out)-2].NumElements(), m, nn, k}
		var t matmulTiling
		problem := matmulProblemOf(op, tensors)
		problem.wholeK = problem.wholeK || opts.Deterministic // see splitKSum
		user, uerr := userMatmulTiling(op, problem)
		if uerr != nil {
			return uerr
		}
		t, op.Reason, err = chooseMatmulTiling(chip, problem, user)
		op.Tile = t.tile()
		if err == nil && op.Kind == TileMatmulEpilogue {
			op.Reason, err = fitEpilogue(chip, op, tensors)
		}
	case TileConv, TileConvEpilogue:
		x := tensors[op.Inputs[0]].Type
		p := conv5HDProblem(x, outT, op.Attrs)
		op.Problem = p.list()
		shape, uerr := userTileShape(op)
		if uerr != nil {
			return uerr
		}
		epi := convEpilogueFor(op, tensors)
		if shape == nil {
			op.Tile, op.Reason, err = convTile(chip, p, x.DType, epi)
			break
		}
		if len(shape) != 5 {
			return fmt.Errorf("a convolution's tile shape is [rb, tn, gs, ra, sk] (output rows of a sub-block, output channels, channel groups a step, sub-blocks, weight steps in L1), got %v", shape)
		}
		if why := convTilingOf(shape).fits(chip, p, x.DType, epi); why != "" {
			return fmt.Errorf("convolution tile %v does not fit chip %s: %s", shape, chip.Name, why)
		}
		op.Tile, op.Reason = shape, fmt.Sprintf("given; fits chip %s", chip.Name)
	case TileAttention:
		op.Problem = attentionProblem(tensors[op.Inputs[0]].Type, tensors[op.Inputs[1]].Type, attentionOutType(op, tensors))
		op.Tile, op.Reason, err = attentionTile(chip, op, tensors)
	case TileSort:
		in := tensors[op.Inputs[0]].Type
		n := 1
		if len(in.Shape) > 0 {
			n = in.Shape[len(in.Shape)-1]
		}
		op.Problem = []int{in.Shape.NumElements() / max(n, 1), n, sortRunLength(n)}
		op.Tile, op.Reason, err = sortTile(chip, in.DType, op.Problem)
	case TileScan:
		in := tensors[op.Inputs[0]].Type
		axis := gatherAxis(op.Attrs, -1, len(in.Shape))
		op.Problem = reduceProblem(in.Shape, []int{axis})
		op.Tile, op.Reason, err = scanTile(chip, in.DType, outT.DType, op.Problem)
	case TileReduce:
		in := tensors[op.Inputs[0]].Type
		op.Problem = reduceProblem(in.Shape, reduceAxes(op.Attrs, len(in.Shape)))
		op.Tile, op.Reason, err = reduceTile(chip, reductions[op.Op], in.DType, outT.DType, op.Problem)
		if err == nil && opts.Deterministic {
			op.Reason = deterministicReduceTile(chip, op, in.DType)
		}
	case TileRows:
		p, perr := rowsPlanOf(op.Attrs)
		if perr != nil {
			return perr
		}
		op.Problem = []int{p.rows, p.cols}
		op.Tile, op.Reason, err = rowsTile(chip, p)
	case TileUpdate:
		err = updateTiling(op, tensors, chip)
	case TileScatter:
		err = scatterTiling(op, tensors, chip)
	case TileKernel:
		if kerr := kernelTiling(op, chip); kerr != nil {
			return kerr
		}
	case TileElementwise:
		op.Problem = elementwiseProblem(iterationType(tensors, op).Shape)
		ins := make([]dtype.DType, len(op.Inputs))
		for i, in := range op.Inputs {
			ins[i] = tensors[in].Type.DType
		}
		tiling := func(rows, cols int) ([]int, string, error) {
			return elementwiseTiling(chip, op.Op, op.Attrs, ins, outT.DType, rows, cols)
		}
		if op.Tile, op.Reason, err = tiling(op.Problem[1], op.Problem[2]); err == nil {
			coalescedTiling(op, tensors, tiling)
		}
	}
	if err == nil {
		err = applyUserVectorTile(chip, op, tensors)
	}
	if err != nil {
		return err
	}
	op.Grid = tileGrid(op.Kind, op.Problem, op.Tile)
	return nil
}

// tileOpsOf gives the tile ops of node n: one, or for a partial lowering (concat) one
// per input, each writing its part of the output, with its start along the axis in
// the attribute "offset".
func tileOpsOf(g *core.Graph, n *core.Node, v core.Value, low lowering, tensorOf map[core.Value]int, out int) []*TileOp {
	if !low.partial {
		op := &TileOp{Node: v, Op: n.Op, Kind: low.kind, Core: low.core, Attrs: n.Attrs, Loc: n.Loc, Output: out}
		for _, in := range n.Inputs {
			op.Inputs = append(op.Inputs, tensorOf[in])
		}
		return []*TileOp{op}
	}
	ops := make([]*TileOp, len(n.Inputs))
	offset := int64(0)
	axis := n.Attrs.Int("axis", 0)
	if axis < 0 {
		axis += len(n.Type.Shape)
	}
	for i, in := range n.Inputs {
		attrs := core.Attrs{"axis": int64(axis), "offset": offset}
		ops[i] = &TileOp{Node: v, Op: n.Op, Kind: low.kind, Core: low.core, Attrs: attrs, Loc: n.Loc, Inputs: []int{tensorOf[in]}, Output: out}
		offset += int64(g.Type(in).Shape[axis])
	}
	return ops
}

// elementwiseTiling sizes the tiles of an elementwise op: its loaded inputs, their
// converted copies, the output and the scratch its body keeps live must fit the UB.
func elementwiseTiling(chip *device.Chip, name string, attrs core.Attrs, ins []dtype.DType, out dtype.DType, rows, cols int) ([]int, string, error) {
	low := lowerings[name]
	minSize, maxSize := out.Size(), out.Size()
	live := 1 // the output tile
	for i, ct := range low.operandTypes(ins, out) {
		for _, d := range []dtype.DType{ins[i], ct} {
			minSize, maxSize = min(minSize, d.Size()), max(maxSize, d.Size())
		}
		live++
		if ct != ins[i] {
			live++ // the converted copy
		}
	}
	colAlign := low.colAlign
	if name == "fused" { // intermediates of any dtype live in the body
		colAlign, _ = fusedShape(attrs)
		minSize, maxSize = 1, max(maxSize, 4)
	}
	if colAlign > 0 {
		live += 2 // the mask and a constant or scratch tile
	}
	if low.extraLive != nil {
		live += low.extraLive(attrs)
	}
	return elementwiseTile(chip, minSize, maxSize, live, colAlign, rows, cols)
}
