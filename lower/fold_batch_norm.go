package lower

import (
	"pypto/core"
	"pypto/dtype"
)

// runFoldBatchNorm folds an inference batch norm into the convolution that produces
// its input: batch_norm(conv2d(x, w, b), mean, var, g, beta) is conv2d(x, w*s, b*s +
// t) with the per-output-channel s = g / sqrt(var + eps) and t = beta - mean*s, so the
// normalisation costs no pass over the activations. The new weight and bias are
// computed in float32 from the originals (small tensors; fold-constants evaluates them
// at compile time when they are constants) and rounded once to the weight's dtype. The
// convolution must feed only the batch norm (otherwise its unnormalised result is
// needed too). The rounding differs from normalising the convolution's result, so the
// pass is marked as reassociating.
func runFoldBatchNorm(c *compilation) error {
	g := c.graph
	users := g.Users()
	isOut := g.OutputSet()
	ng, err := rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, ins []core.Value, val func(core.Value) core.Value) (core.Value, bool, error) {
		if n.Op != "batch_norm" {
			return -1, false, nil
		}
		x := n.Inputs[0]
		conv := g.Nodes[x]
		if conv.Op != "conv2d" || len(users[x]) != 1 || isOut[x] {
			return -1, false, nil
		}
		scale, shift, err := core.BatchNormFold(b, ins, n.Attrs, n.Loc)
		if err != nil {
			return -1, false, err
		}
		w := val(conv.Inputs[1])
		wt := b.Type(w)
		ob := &opBuilder{b: b, loc: n.Loc}
		o := int64(wt.Shape[0])
		nw := ob.cast(ob.op("mul", nil, ob.cast(w, dtype.Float32), ob.op("reshape", core.Attrs{"shape": []int64{o, 1, 1, 1}}, scale)), wt.DType)
		bias := shift
		if len(conv.Inputs) == 3 {
			bias = ob.op("add", nil, ob.op("mul", nil, ob.cast(val(conv.Inputs[2]), dtype.Float32), scale), shift)
		}
		nb := ob.cast(bias, wt.DType)
		if ob.err != nil {
			return -1, false, ob.err
		}
		out, err := b.Op("conv2d", []core.Value{val(conv.Inputs[0]), nw, nb}, conv.Attrs, conv.Loc)
		return out, err == nil, err
	})
	if err != nil {
		return err
	}
	c.graph = core.EliminateDeadCode(ng) // the unfolded convolution, which later passes would see
	return nil
}
