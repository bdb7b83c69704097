package core

import "math"

// VJP rules of the further elementwise math functions (ops_math.go).

var mathVJPs = map[string]VJPFunc{
	"erfc": func(c *VJPContext) []Value { // -2/sqrt(pi) * exp(-x^2)
		x := c.f32(c.x(0))
		e := c.op("exp", nil, c.neg(c.mul(x, x)))
		return []Value{c.mul(c.f32(c.G), c.mul(e, c.constLike(e, -2/math.Sqrt(math.Pi))))}
	},
	"exp2": func(c *VJPContext) []Value { return []Value{c.mul(c.G, c.mul(c.Out, c.constLike(c.Out, math.Ln2)))} },
	"expm1": func(c *VJPContext) []Value {
		return []Value{c.mul(c.G, c.op("add", nil, c.Out, c.constLike(c.Out, 1)))}
	},
	"log1p": func(c *VJPContext) []Value {
		return []Value{c.div(c.G, c.op("add", nil, c.x(0), c.constLike(c.G, 1)))}
	},
	"log2":  vjpLogBase(math.Ln2),
	"log10": vjpLogBase(math.Ln10),
	"logaddexp": func(c *VJPContext) []Value { // softmax weights of the two operands
		wa := c.op("exp", nil, c.op("sub", nil, c.x(0), c.Out))
		wb := c.op("exp", nil, c.op("sub", nil, c.x(1), c.Out))
		return []Value{c.to(c.mul(c.G, wa), 0), c.to(c.mul(c.G, wb), 1)}
	},
	"hypot": func(c *VJPContext) []Value { // a / r, b / r
		return []Value{c.to(c.mul(c.G, c.div(c.x(0), c.Out)), 0), c.to(c.mul(c.G, c.div(c.x(1), c.Out)), 1)}
	},
	"atan2": func(c *VJPContext) []Value { // (b, -a) / (a^2 + b^2)
		a, b := c.x(0), c.x(1)
		r2 := c.op("add", nil, c.mul(a, a), c.mul(b, b))
		return []Value{c.to(c.div(c.mul(c.G, b), r2), 0), c.to(c.neg(c.div(c.mul(c.G, a), r2)), 1)}
	},
}

// vjpLogBase is the rule of the logarithm to a base whose natural log is ln: 1/(x ln).
func vjpLogBase(ln float64) VJPFunc {
	return func(c *VJPContext) []Value {
		return []Value{c.div(c.G, c.mul(c.x(0), c.constLike(c.G, ln)))}
	}
}
