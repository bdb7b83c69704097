package lower

import (
	"fmt"

	"pypto/core"
)

// Weight preparation. A model's weights are the same bytes in every run, so work that
// reads nothing else — a convolution weight's conversion to the cube's fractal layout,
// a bias cast to float32, a constant table's transpose — computes the same result
// every time. The prepare-weights pass marks those ops (TileOp.WeightPrep) and the
// params they start from (GMTensor.Weight: the caller's Options.Weights and the
// constants bind-constants added). A run then executes the marked tasks only when it
// has no result of them for the same weight bytes; otherwise it copies their results
// (the prepared tensors the other tasks read) into device memory with the inputs and
// skips them (weight_cache.go). The first run pays for the preparation, as a framework
// that converts weights at load time does; later runs move only the compulsory bytes.
//
// The memory plan gives every prepared tensor another task reads a buffer of its own
// for the whole run (preparedTensors), since later runs write it before any task.

// runPrepareWeights marks the weight params and the ops that compute from them alone.
func runPrepareWeights(c *compilation) error {
	tg := c.tile
	nCaller := len(tg.Params) - len(c.constants)
	for _, k := range c.opts.Weights {
		if k < 0 || k >= nCaller {
			return core.Errorf(core.ValueError, "lower.Options.Weights names param %d, but the graph has %d params", k, nCaller)
		}
		for _, d := range c.opts.Donate {
			if d == k {
				return core.Errorf(core.ValueError, "param %d is both a weight (the same bytes every run) and donated (the program may overwrite it)", k).
					Suggest("donate only inputs that change between runs")
			}
		}
		tg.Tensors[tg.Params[k]].Weight = true
	}
	for _, t := range tg.Params[nCaller:] {
		tg.Tensors[t].Weight = true
	}
	markWeightPrep(tg)
	return nil
}

// markWeightPrep marks, in order, every op whose inputs are all weights or results of
// marked ops and that writes a whole temporary of its own: not a graph output, not an
// in-place update, not a kernel of the user's own (which may store into any param), not
// an op that reads its sizes at run time. The parts of one concat are marked together.
func markWeightPrep(tg *TileGraph) {
	fromWeights := make([]bool, len(tg.Tensors))
	for i, t := range tg.Tensors {
		fromWeights[i] = t.Weight
	}
	// Bytes that an op writes in place (an update, a scatter into a zeroed gradient,
	// a user's kernel storing into its params) change during the run: what computes
	// them is not preparation, whatever it reads.
	written := writtenInPlace(tg)
	for i := 0; i < len(tg.Ops); {
		j := i + 1 // ops[i:j] write one tensor: a concat's parts
		for j < len(tg.Ops) && continuesPartialWrite(tg.Ops, j) {
			j++
		}
		ok := true
		for _, op := range tg.Ops[i:j] {
			ok = ok && mayPrepare(tg, op, written)
			for _, in := range op.Inputs {
				ok = ok && fromWeights[root(tg.Tensors, in)]
			}
		}
		for _, op := range tg.Ops[i:j] {
			op.WeightPrep = ok
		}
		fromWeights[tg.Ops[i].Output] = ok
		i = j
	}
}

// mayPrepare reports whether op, when it reads only weights, is preparation: it writes
// a whole temporary of its own (not a graph output, not an update in place, not a
// user's kernel, which may store into any param) that no op writes in place, and does
// not read its sizes at run time. written is writtenInPlace(tg).
func mayPrepare(tg *TileGraph, op *TileOp, written []bool) bool {
	out := tg.Tensors[op.Output]
	return op.Kind != TileKernel && !writesInPlace(op.Kind) && op.Dynamic == nil && out.Role == RoleTemp && out.Alias == 0 && !written[op.Output]
}

// writtenInPlace marks the owner tensors whose bytes an op writes in place.
func writtenInPlace(tg *TileGraph) []bool {
	w := make([]bool, len(tg.Tensors))
	for _, op := range tg.Ops {
		switch {
		case writesInPlace(op.Kind):
			w[root(tg.Tensors, op.Output)] = true
		case op.Kind == TileKernel:
			for _, in := range op.Inputs {
				w[root(tg.Tensors, in)] = true
			}
		}
	}
	return w
}

// preparedTensors lists the owner tensors that weight-prep ops write and other ops
// read: what a run that skips the preparation must find in device memory.
func preparedTensors(tg *TileGraph) []int {
	prepared := map[int]bool{}
	for _, op := range tg.Ops {
		if op.WeightPrep {
			prepared[op.Output] = true
		}
	}
	var out []int
	seen := map[int]bool{}
	for _, op := range tg.Ops {
		if op.WeightPrep {
			continue
		}
		for _, in := range op.Inputs {
			if r := root(tg.Tensors, in); prepared[r] && !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// preparedMask marks the tensors preparedTensors lists.
func preparedMask(tg *TileGraph) []bool {
	m := make([]bool, len(tg.Tensors))
	for _, t := range preparedTensors(tg) {
		m[t] = true
	}
	return m
}

// verifyWeightPrep checks the marks: a weight is an input, and a weight-prep op reads
// only weights and the results of earlier weight-prep ops and writes a temporary that
// no op writes in place.
func verifyWeightPrep(g *TileGraph) error {
	written := writtenInPlace(g)
	fromWeights := make([]bool, len(g.Tensors))
	for i, t := range g.Tensors {
		if t.Weight && t.Role != RoleInput {
			return fmt.Errorf("tilegraph: t%d is marked a weight but is a %s tensor (weights are inputs)", i, t.Role)
		}
		fromWeights[i] = t.Weight
	}
	for i, op := range g.Ops {
		if !op.WeightPrep {
			continue
		}
		for _, in := range op.Inputs {
			if !fromWeights[root(g.Tensors, in)] {
				return fmt.Errorf("tilegraph: op%d (%s) prepares weights but reads t%d, which is neither a weight nor prepared from weights", i, op.Op, in)
			}
		}
		if !mayPrepare(g, op, written) {
			return fmt.Errorf("tilegraph: op%d (%s) prepares weights but does not write a whole temporary of its own that nothing writes in place", i, op.Op)
		}
		fromWeights[op.Output] = true
	}
	for i := 1; i < len(g.Ops); i++ {
		if continuesPartialWrite(g.Ops, i) && g.Ops[i].WeightPrep != g.Ops[i-1].WeightPrep {
			return fmt.Errorf("tilegraph: op%d and op%d write parts of t%d, but only one of them prepares weights", i-1, i, g.Ops[i].Output)
		}
	}
	return nil
}
