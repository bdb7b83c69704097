package core

// VJP rules of the matrix products. For C = op(A) op(B), with op an optional
// transpose, dA = G op(B)^T and dB = op(A)^T G, written with the transpose flags so
// that no transpose is materialised; batch dimensions that broadcast are summed back.

var linalgVJPs = map[string]VJPFunc{
	"matmul":       vjpMatmul("matmul"),
	"batch_matmul": vjpMatmul("batch_matmul"),
}

func vjpMatmul(op string) VJPFunc {
	return func(c *VJPContext) []Value {
		if !c.isFloat(0) {
			return []Value{-1, -1}
		}
		a, b, g := c.x(0), c.x(1), c.cast(c.G, c.typ(c.x(0)).DType)
		ta, tb := c.Attrs.Bool("transpose_a", false), c.Attrs.Bool("transpose_b", false)
		mm := func(x, y Value, tx, ty bool) Value {
			return c.op(op, Attrs{"transpose_a": tx, "transpose_b": ty}, x, y)
		}
		var ga, gb Value
		switch {
		case !ta && !tb: // C = A B
			ga, gb = mm(g, b, false, true), mm(a, g, true, false)
		case ta && !tb: // C = A^T B, A is [k, m]
			ga, gb = mm(b, g, false, true), mm(a, g, false, false)
		case !ta && tb: // C = A B^T, B is [n, k]
			ga, gb = mm(g, b, false, false), mm(g, a, true, false)
		default: // C = A^T B^T
			ga, gb = mm(b, g, true, true), mm(g, a, true, true)
		}
		return []Value{c.to(ga, 0), c.to(gb, 1)}
	}
}
