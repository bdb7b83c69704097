package core

import "math"

// VJP rules of the elementwise ops. Binary ops broadcast, so each cotangent is summed
// back to its input's shape (sumTo). Where torch picks a convention at a kink, so do
// these: relu's gradient at 0 is 0, abs's is 0, maximum and minimum split it evenly
// between equal operands.

var elementwiseVJPs = map[string]VJPFunc{
	"add": func(c *VJPContext) []Value { return []Value{c.to(c.G, 0), c.to(c.G, 1)} },
	"sub": func(c *VJPContext) []Value { return []Value{c.to(c.G, 0), c.to(c.neg(c.G), 1)} },
	"mul": func(c *VJPContext) []Value {
		return []Value{c.to(c.mul(c.G, c.x(1)), 0), c.to(c.mul(c.G, c.x(0)), 1)}
	},
	"div": func(c *VJPContext) []Value { // d(a/b)/db = -(a/b)/b
		gb := c.neg(c.div(c.mul(c.G, c.Out), c.x(1)))
		return []Value{c.to(c.div(c.G, c.x(1)), 0), c.to(gb, 1)}
	},
	"pow": vjpPow,
	"mod": func(c *VJPContext) []Value { // a - floor(a/b) * b
		gb := c.neg(c.mul(c.G, c.op("floor_divide", nil, c.x(0), c.x(1))))
		return []Value{c.to(c.G, 0), c.to(gb, 1)}
	},
	"maximum": vjpExtremum("greater"),
	"minimum": vjpExtremum("less"),
	"where": func(c *VJPContext) []Value {
		zero := c.constLike(c.G, 0)
		return []Value{-1, c.to(c.op("where", nil, c.x(0), c.G, zero), 1), c.to(c.op("where", nil, c.x(0), zero, c.G), 2)}
	},
	"neg": func(c *VJPContext) []Value { return []Value{c.neg(c.G)} },
	"abs": func(c *VJPContext) []Value {
		x := c.x(0)
		zero := c.constLike(x, 0)
		sign := c.op("sub", nil, c.mask(c.op("greater", nil, x, zero), c.G), c.mask(c.op("less", nil, x, zero), c.G))
		return []Value{c.mul(c.G, sign)}
	},
	"relu": func(c *VJPContext) []Value {
		return []Value{c.mul(c.G, c.mask(c.op("greater", nil, c.x(0), c.constLike(c.x(0), 0)), c.G))}
	},
	"exp":  func(c *VJPContext) []Value { return []Value{c.mul(c.G, c.Out)} },
	"log":  func(c *VJPContext) []Value { return []Value{c.div(c.G, c.x(0))} },
	"sqrt": func(c *VJPContext) []Value { return []Value{c.div(c.mul(c.G, c.constLike(c.G, 0.5)), c.Out)} },
	"rsqrt": func(c *VJPContext) []Value { // -x^(-3/2) / 2
		cube := c.mul(c.mul(c.Out, c.Out), c.Out)
		return []Value{c.mul(c.G, c.mul(cube, c.constLike(c.G, -0.5)))}
	},
	"reciprocal": func(c *VJPContext) []Value { return []Value{c.neg(c.mul(c.G, c.mul(c.Out, c.Out)))} },
	"sin":        func(c *VJPContext) []Value { return []Value{c.mul(c.G, c.op("cos", nil, c.x(0)))} },
	"cos":        func(c *VJPContext) []Value { return []Value{c.neg(c.mul(c.G, c.op("sin", nil, c.x(0))))} },
	"tanh": func(c *VJPContext) []Value {
		return []Value{c.mul(c.G, c.op("sub", nil, c.constLike(c.Out, 1), c.mul(c.Out, c.Out)))}
	},
	"erf": func(c *VJPContext) []Value { // 2/sqrt(pi) * exp(-x^2)
		x := c.f32(c.x(0))
		e := c.op("exp", nil, c.neg(c.mul(x, x)))
		return []Value{c.mul(c.f32(c.G), c.mul(e, c.constLike(e, 2/math.Sqrt(math.Pi))))}
	},
	"sigmoid": func(c *VJPContext) []Value {
		s := c.f32(c.Out)
		return []Value{c.mul(c.f32(c.G), c.mul(s, c.op("sub", nil, c.constLike(s, 1), s)))}
	},
	"silu": func(c *VJPContext) []Value { // s * (1 + x * (1 - s)), s = sigmoid(x)
		x := c.f32(c.x(0))
		s := c.op("sigmoid", nil, x)
		one := c.constLike(s, 1)
		d := c.mul(s, c.op("add", nil, one, c.mul(x, c.op("sub", nil, one, s))))
		return []Value{c.mul(c.f32(c.G), d)}
	},
	"cast": func(c *VJPContext) []Value {
		if !c.isFloat(0) {
			return []Value{-1}
		}
		return []Value{c.G}
	},
}

// vjpPow: d(a^b)/da = b * a^(b-1); d(a^b)/db = a^b * log(a), taken as 0 where a is 0
// (torch's convention, so that x ** 2 at 0 does not give NaN for a float exponent).
func vjpPow(c *VJPContext) []Value {
	a, b := c.x(0), c.x(1)
	one := c.constLike(c.G, 1)
	ga := c.mul(c.G, c.mul(b, c.op("pow", nil, a, c.op("sub", nil, b, one))))
	var gb Value = -1
	if c.isFloat(1) {
		zero := c.constLike(a, 0)
		isZero := c.op("equal", nil, a, zero)
		safe := c.op("where", nil, isZero, c.constLike(a, 1), a)
		gb = c.to(c.mul(c.G, c.mul(c.Out, c.op("log", nil, safe))), 1)
	}
	return []Value{c.to(ga, 0), gb}
}

// vjpExtremum is the rule of maximum (wins = "greater") and minimum ("less"): the
// cotangent goes to the winning operand, half to each when they are equal.
func vjpExtremum(wins string) VJPFunc {
	return func(c *VJPContext) []Value {
		a, b := c.x(0), c.x(1)
		half := c.mul(c.mask(c.op("equal", nil, a, b), c.G), c.constLike(c.G, 0.5))
		wa := c.op("add", nil, c.mask(c.op(wins, nil, a, b), c.G), half)
		wb := c.op("add", nil, c.mask(c.op(wins, nil, b, a), c.G), half)
		return []Value{c.to(c.mul(c.G, wa), 0), c.to(c.mul(c.G, wb), 1)}
	}
}

// noGradOps lists the ops of ops_*.go no gradient flows through, with the reason.
var noGradOps = map[string]string{
	"floor":            "piecewise constant: its gradient is 0 wherever it exists",
	"ceil":             "piecewise constant: its gradient is 0 wherever it exists",
	"round":            "piecewise constant: its gradient is 0 wherever it exists",
	"floor_divide":     "piecewise constant: its gradient is 0 wherever it exists",
	"trunc":            "piecewise constant: its gradient is 0 wherever it exists",
	"sign":             "piecewise constant: its gradient is 0 wherever it exists",
	"isinf":            "bool result",
	"isposinf":         "bool result",
	"isneginf":         "bool result",
	"isnan":            "bool result",
	"isfinite":         "bool result",
	"logical_not":      "bool result",
	"logical_and":      "bool result",
	"logical_or":       "bool result",
	"logical_xor":      "bool result",
	"equal":            "bool result",
	"not_equal":        "bool result",
	"less":             "bool result",
	"less_equal":       "bool result",
	"greater":          "bool result",
	"greater_equal":    "bool result",
	"argmax":           "integer result",
	"argmin":           "integer result",
	"argsort":          "integer result",
	"topk_indices":     "integer result",
	"iota":             "integer result with no inputs",
	"random_uniform":   "random numbers with no inputs",
	"full":             "a constant: it has no inputs",
	"constant":         "a constant: it has no inputs",
	"prod":             "no gradient rule (the quotient form fails at zeros); for positive x write exp(sum(log(x)))",
	"layout_transform": "no gradient rule: differentiate the ND computation, then tag layouts",
	"call_kernel":      "a user's block program: the compiler cannot see inside it",
	"fused":            "formed by the compiler after differentiation",
	"fused_rows":       "formed by the compiler after differentiation",
	"fused_matmul":     "formed by the compiler after differentiation",
	"flash_attention":  "formed by the compiler after differentiation (scaled_dot_product_attention is differentiable)",
}
