package core

// Symbolic shape rules of the ops whose result has the broadcast shape of their inputs
// (elementwise ops, where, clip), or the shape of their first input (softmax, sort,
// cumsum, the norms).

// elementwiseOps are the ops whose result has the broadcast shape of their inputs.
var elementwiseOps = []string{"add", "sub", "mul", "div", "floor_divide", "mod", "pow", "maximum", "minimum",
	"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
	"logical_and", "logical_or", "logical_xor", "where", "clip",
	"neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "erf",
	"floor", "ceil", "round", "relu", "sigmoid", "silu", "gelu", "logical_not", "isnan", "isfinite",
	"cast", "erfc", "exp2", "expm1", "log1p", "log2", "log10", "trunc", "sign",
	"isinf", "isposinf", "isneginf", "logaddexp", "hypot", "atan2"}

func init() {
	registerSym(symBroadcastRule, elementwiseOps...)
	for _, op := range elementwiseOps {
		broadcastOps[op] = true
	}
	registerSym(symSameShapeRule, "softmax", "log_softmax", "cumsum", "sort", "argsort")
	registerSym(symNormRule, "layer_norm", "rms_norm")
}

func symBroadcastRule(c *symCtx, in []TensorType, _ Attrs) ([]Dim, *Error) {
	shapes := make([][]Dim, len(in))
	for i, t := range in {
		shapes[i] = t.AllDims()
	}
	why := func() string { return "shapes " + joinDimShapes(in) + " broadcast together" }
	out, ok := c.broadcast(shapes, why)
	if !ok {
		return nil, Errorf(ShapeError, "%s: shapes %s cannot be broadcast together", c.op, joinDimShapes(in))
	}
	return out, nil
}

func symSameShapeRule(_ *symCtx, in []TensorType, _ Attrs) ([]Dim, *Error) {
	return in[0].AllDims(), nil
}

// symNormRule: weight and bias broadcast to x's shape, which the result keeps.
func symNormRule(c *symCtx, in []TensorType, _ Attrs) ([]Dim, *Error) {
	x := in[0].AllDims()
	for k, p := range in[1:] {
		what := []string{"weight", "bias"}[k]
		pd := p.AllDims()
		ok := len(pd) <= len(x)
		why := what + " of shape " + p.ShapeString() + " broadcasts to x's shape " + in[0].ShapeString()
		for i := 0; ok && i < len(pd); i++ {
			d, xd := pd[len(pd)-1-i], x[len(x)-1-i]
			if v, isConst := d.Const(); isConst && v == 1 {
				continue
			}
			ok = c.need(d, Equal, xd, why)
		}
		if !ok {
			return nil, Errorf(ShapeError, "%s: %s of shape %s does not broadcast to x's shape %s", c.op, what, p.ShapeString(), in[0].ShapeString()).
				Suggest("give the %s the shape of the normalised axes", what)
		}
	}
	return x, nil
}
