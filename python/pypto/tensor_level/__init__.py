"""The tensor level: ``p.Tensor``, an eager but lazy tensor whose value lives in the Go
core, its layouts, and the ops that build its graph (elementwise, matrix products,
reductions, shape and creation ops, neural-network composites, convolutions, updates,
masks). It imports only the private core."""
