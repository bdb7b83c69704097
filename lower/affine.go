package lower

import "pypto/core"

// affineMap says where an operand's elements come from, seen from the output of an
// elementwise tile op: output element (i0, ..., in-1) reads element
// offset + sum(i_k * strides[k]) of the operand's contiguous GM buffer. Broadcasting
// (stride 0), transposition (permuted strides), slicing (scaled strides, an offset) and
// reshape of a contiguous tensor (the output's own strides) are all such maps, so one
// code generator serves the elementwise ops and the view ops.
type affineMap struct {
	offset  int
	strides []int
}

// broadcastMap reads an operand of shape in broadcast to shape out.
func broadcastMap(in, out core.Shape) affineMap {
	return affineMap{strides: core.BroadcastStrides(in, out)}
}

// reshapeMap reads a contiguous operand in row-major order, whatever its shape.
func reshapeMap(out core.Shape) affineMap {
	return affineMap{strides: out.Strides()}
}

// transposeMap reads an operand of shape in through the permutation perm: output
// axis k is input axis perm[k].
func transposeMap(in core.Shape, perm []int) affineMap {
	inStrides := in.Strides()
	st := make([]int, len(perm))
	for k, p := range perm {
		st[k] = inStrides[p]
	}
	return affineMap{strides: st}
}

// sliceMap reads every step-th element from start along each axis of in.
func sliceMap(in core.Shape, starts, steps []int) affineMap {
	inStrides := in.Strides()
	m := affineMap{strides: make([]int, len(in))}
	for k := range in {
		m.offset += starts[k] * inStrides[k]
		m.strides[k] = steps[k] * inStrides[k]
	}
	return m
}
