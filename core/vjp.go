package core

import (
	"sort"

	"pypto/dtype"
)

// Reverse-mode differentiation. Each differentiable op carries a VJP rule in its
// registry entry (OpDef.VJP), beside its shape rule: given the cotangent of the op's
// result it adds to a Builder the ops that compute the cotangent of each input. A
// composite op without a rule of its own is differentiated through its decomposition
// (OpDef.Decompose), so the rule of a composite is the rules of the ops it is made of.
// An op whose result carries no gradient says why in OpDef.NoGrad. The backward graph
// is made of ordinary registered ops, so it compiles and runs like any other.

// VJPContext is what a VJP rule builds with: the op's inputs, its result and the
// cotangent G of the result (of the result's type), all values of the builder.
type VJPContext struct {
	*dec
	In    []Value
	Out   Value
	G     Value
	Attrs Attrs
}

// VJPFunc returns one cotangent per input, each of its input's shape (-1 for an input
// that gets none, such as indices). Dtypes need not match: the caller casts each to
// its input's dtype.
type VJPFunc func(c *VJPContext) []Value

// Differentiable reports whether gradients flow through op (through a rule of its own
// or its decomposition), and if not, why.
func Differentiable(op string) (bool, string) {
	d, ok := LookupOp(op)
	switch {
	case !ok:
		return false, "unknown op"
	case d.VJP != nil || (d.NoGrad == "" && d.Decompose != nil):
		return true, ""
	case d.NoGrad != "":
		return false, d.NoGrad
	}
	return false, "no gradient rule"
}

// Gradients adds to b the nodes computing the vector-Jacobian product of the value out
// with the cotangent seed (a value of out's type; for a scalar loss, a 1): the
// cotangent of each value in wrt, of that value's type. A value out does not depend on
// (or an integer or bool one) gets -1. The nodes b has so far are the forward graph.
func Gradients(b *Builder, out, seed Value, wrt []Value) ([]Value, error) {
	n := int(out) + 1
	bw := &backward{b: b, ct: map[Value]Value{}, needs: make([]bool, n, 2*n)}
	want := map[Value]bool{}
	for _, w := range wrt {
		want[w] = true
	}
	for i := 0; i < n; i++ {
		bw.needs[i] = want[Value(i)] && b.g.Nodes[i].Type.DType.IsFloat()
		bw.markNeeds(i)
	}
	if !b.Type(seed).Equal(b.Type(out)) {
		return nil, Errorf(ShapeError, "the cotangent has type %v but the value it seeds has type %v", b.Type(seed), b.Type(out)).
			Suggest("give a gradient of the output's shape and dtype")
	}
	if !bw.needs[out] {
		return negatives(len(wrt)), nil
	}
	bw.ct[out] = seed
	if err := bw.run(0, n); err != nil {
		return nil, err
	}
	res := make([]Value, len(wrt))
	for i, w := range wrt {
		res[i] = -1
		if g, ok := bw.ct[w]; ok && bw.needs[w] {
			res[i] = g
		}
	}
	return res, nil
}

func negatives(n int) []Value {
	out := make([]Value, n)
	for i := range out {
		out[i] = -1
	}
	return out
}

type backward struct {
	b     *Builder
	ct    map[Value]Value // the cotangent accumulated for each value so far
	needs []bool          // the value is float and depends on a wrt value
}

// markNeeds sets needs[i] when node i is float, gradients flow through its op, and an
// input of it needs a gradient.
func (bw *backward) markNeeds(i int) {
	nd := bw.b.g.Nodes[i]
	if bw.needs[i] || nd.Op == OpParam || !nd.Type.DType.IsFloat() {
		return
	}
	if ok, _ := Differentiable(nd.Op); !ok {
		return
	}
	for _, in := range nd.Inputs {
		if bw.needs[in] {
			bw.needs[i] = true
			return
		}
	}
}

// run propagates cotangents through nodes hi-1 down to lo.
func (bw *backward) run(lo, hi int) error {
	for i := hi - 1; i >= lo; i-- {
		g, ok := bw.ct[Value(i)]
		nd := bw.b.g.Nodes[i]
		if !ok || nd.Op == OpParam || !bw.needs[i] {
			continue
		}
		if err := bw.node(Value(i), nd, g); err != nil {
			return err
		}
	}
	return nil
}

func (bw *backward) node(v Value, nd *Node, g Value) error {
	def, _ := LookupOp(nd.Op)
	if def.VJP == nil {
		if def.NoGrad == "" && def.Decompose != nil {
			return bw.throughDecomposition(v, nd, def, g)
		}
		return nil // no gradient flows (needs is false for such nodes' users anyway)
	}
	c := &VJPContext{dec: newDec(bw.b, nd.Loc), In: nd.Inputs, Out: v, G: g, Attrs: nd.Attrs}
	grads := def.VJP(c)
	if c.err != nil {
		return AsInternal(c.err, "the gradient of %s", nd.Op)
	}
	if len(grads) != len(nd.Inputs) {
		return Errorf(InternalError, "the gradient rule of %s gave %d cotangents for %d inputs", nd.Op, len(grads), len(nd.Inputs))
	}
	for k, in := range nd.Inputs {
		if grads[k] < 0 || !bw.needs[in] {
			continue
		}
		if err := bw.accumulate(in, grads[k], nd); err != nil {
			return err
		}
	}
	return nil
}

// throughDecomposition differentiates a composite op by building its decomposition
// (a recomputation of its result from its inputs) and propagating through that.
func (bw *backward) throughDecomposition(v Value, nd *Node, def *OpDef, g Value) error {
	first := len(bw.b.g.Nodes)
	r, err := def.Decompose(bw.b, nd.Inputs, printedAttrs(nd), nd.Loc)
	if err != nil {
		return AsInternal(err, "the gradient of %s (through its decomposition)", nd.Op)
	}
	last := len(bw.b.g.Nodes)
	for len(bw.needs) < last { // rules before it added nodes too: none needs a gradient
		bw.needs = append(bw.needs, false)
	}
	for i := first; i < last; i++ {
		bw.markNeeds(i)
	}
	if int(r) < first { // the decomposition is one of its inputs
		return bw.accumulate(r, g, nd)
	}
	bw.ct[r] = g
	return bw.run(first, last)
}

// accumulate adds cotangent g (cast to in's dtype, which must have in's shape) to
// what in has so far.
func (bw *backward) accumulate(in, g Value, from *Node) error {
	want := bw.b.Type(in)
	d := newDec(bw.b, from.Loc)
	g = d.cast(g, want.DType)
	if d.err == nil && !d.typ(g).Shape.Equal(want.Shape) {
		return Errorf(InternalError, "the gradient rule of %s gave a cotangent of shape %v for an input of shape %v", from.Op, d.typ(g).Shape, want.Shape)
	}
	if prev, ok := bw.ct[in]; ok {
		g = d.op("add", nil, prev, g)
	}
	if d.err != nil {
		return AsInternal(d.err, "accumulating the gradient of %s", from.Op)
	}
	bw.ct[in] = g
	return nil
}

// --- helpers the rules share ---------------------------------------------------------

func (c *VJPContext) x(k int) Value { return c.In[k] }

// sumTo reduces v (a broadcast result) to shape: the sum over the axes broadcasting
// added or stretched from 1, then a reshape to shape.
func (c *VJPContext) sumTo(v Value, shape Shape) Value {
	vs := c.typ(v).Shape
	if c.err != nil || vs.Equal(shape) {
		return v
	}
	lead := len(vs) - len(shape)
	var axes []int64
	for i := range vs {
		if i < lead || (shape[i-lead] == 1 && vs[i] != 1) {
			axes = append(axes, int64(i))
		}
	}
	if len(axes) > 0 {
		v = c.op("sum", Attrs{"axis": axes, "keepdims": false}, v)
	}
	return c.op("reshape", Attrs{"shape": int64s(shape)}, v)
}

// to reduces v to the shape of input k.
func (c *VJPContext) to(v Value, k int) Value { return c.sumTo(v, c.typ(c.In[k]).Shape) }

func (c *VJPContext) mul(a, b Value) Value { return c.op("mul", nil, a, b) }
func (c *VJPContext) div(a, b Value) Value { return c.op("div", nil, a, b) }
func (c *VJPContext) neg(a Value) Value    { return c.op("neg", nil, a) }

// constLike is a 0-d constant of v's dtype.
func (c *VJPContext) constLike(v Value, x float64) Value { return c.scalar(c.typ(v).DType, x) }

// mask is cond (a bool value) as 1 and 0 of v's dtype.
func (c *VJPContext) mask(cond, v Value) Value { return c.cast(cond, c.typ(v).DType) }

// keepReduced reshapes g, the result of a reduction over axes of x without keepdims,
// to the keepdims shape, so that it broadcasts against x.
func (c *VJPContext) keepReduced(g Value, axes []int, x Shape) Value {
	return c.op("reshape", Attrs{"shape": int64s(reducedShape(x, axes, true))}, g)
}

// reducedAxes is the normalised axis list of a reduction node.
func (c *VJPContext) reducedAxes(x Shape) []int {
	axes, _ := normAxes("", c.Attrs.Ints("axis"), len(x))
	sort.Ints(axes)
	return axes
}

// isFloat reports whether input k carries gradients.
func (c *VJPContext) isFloat(k int) bool { return c.typ(c.In[k]).DType.IsFloat() }

// f32 is v cast to float32 (rules of ops that compute in float32 compute there too).
func (c *VJPContext) f32(v Value) Value { return c.cast(v, dtype.Float32) }

// vjpRules holds the rules of the ops registered in ops_*.go, by family; Register
// attaches each to its op (package variables, so they exist before any init
// registers an op).
var vjpRules = mergeRules(elementwiseVJPs, mathVJPs, linalgVJPs, reduceVJPs, shapeVJPs, gatherVJPs)

func mergeRules(families ...map[string]VJPFunc) map[string]VJPFunc {
	out := map[string]VJPFunc{}
	for _, f := range families {
		for name, r := range f {
			out[name] = r
		}
	}
	return out
}
