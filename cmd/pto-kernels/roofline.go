package main

import (
	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// roofline is the chip's lower bound on a program's time, in ms, and what sets it:
// the largest of
//   - cube time: the FLOPs of its matmuls and convolutions (2*m*n*k each, a
//     convolution's k its C*KH*KW; causal attention counts the half of the scores it
//     must compute) at every cube core's peak,
//   - vector time: one pass of every other op over its output at every vector core's
//     peak bytes per cycle, in fp32 (the precision the kernels compute in), and
//   - memory time: the compulsory GM bytes (inputs read once, outputs written once)
//     at the full HBM bandwidth.
//
// It is a bound, not a model: a program meets it only if nothing else costs time.
func roofline(chip *device.Chip, g *core.Graph, compulsory int64) (float64, string) {
	var flops, vecBytes float64
	for _, n := range g.Nodes {
		if n.Op == core.OpParam {
			continue
		}
		switch n.Op {
		case "matmul", "batch_matmul", "linear":
			a := g.Type(n.Inputs[0]).Shape
			k := a[len(a)-1]
			if n.Attrs.Bool("transpose_a", false) {
				k = a[len(a)-2]
			}
			flops += 2 * float64(n.Type.Shape.NumElements()) * float64(k)
		case "scaled_dot_product_attention":
			q := g.Type(n.Inputs[0]).Shape
			s, d := float64(q[len(q)-2]), float64(q[len(q)-1])
			heads := float64(q.NumElements()) / (s * d)
			kv := float64(g.Type(n.Inputs[1]).Shape[len(q)-2])
			f := 4 * heads * s * kv * d // two matmuls
			if n.Attrs.Bool("is_causal", false) {
				f /= 2
			}
			flops += f
		case "conv2d":
			w := g.Type(n.Inputs[1]).Shape // [O, C/groups, KH, KW]
			flops += 2 * float64(n.Type.Shape.NumElements()) * float64(w[1]*w[2]*w[3])
		case "reshape", "full":
		default:
			vecBytes += float64(n.Type.Shape.NumElements()) * float64(dtype.Float32.Size())
		}
	}
	clock := chip.ClockHz
	cubeFlopsPerCycle := 2 * float64(chip.CubeM*chip.CubeK*chip.CubeN*chip.CubeCores)
	cube := flops / cubeFlopsPerCycle / clock
	vector := vecBytes / float64(chip.VectorBytesPerCycle*chip.VectorCores) / clock
	memory := float64(compulsory) / float64(chip.HBMBytesPerCycle) / clock
	bound, t := "cube", cube
	if vector > t {
		bound, t = "vector", vector
	}
	if memory > t {
		bound, t = "memory", memory
	}
	return 1e3 * t, bound
}
