package lower

import (
	"fmt"
	"math"

	"pypto/core"
	"pypto/dtype"
)

// Constant folding: a node whose inputs are all constants is computed at compile time
// by the reference interpreter (the oracle, so folding can only move a result closer
// to it). A result that is the same everywhere becomes a `full`, which the device
// makes in registers and fusion puts inside its consumer: no GM read, whatever its
// size. A result that varies stays the nodes that compute it while pointwise ops read
// it: fusion runs an iota and the arithmetic on it inside the consumer's kernel,
// without touching GM. Read by any other kernel (a matmul, a reduction) or returned, a
// small varying result becomes a constant op holding its elements, which the run
// copies into GM with the inputs (bind-constants): no task computes it. Varying
// results are remembered either way, so a later node that makes them uniform again (a
// sum of an iota, a comparison that is always true) folds.

// foldLimit is the most elements the compiler computes on the host for one varying
// constant (and for each input it reads); uniform values of any size cost one element.
const foldLimit = 1 << 14

// constant is what folding knows about a value: it is uniform (every element is value),
// and/or its elements (when it has at most foldLimit of them).
type constant struct {
	uniform bool
	value   float64
	array   *core.Array
}

// elements returns the values of c at type t, or nil when it is too large to hold.
func (c *constant) elements(t core.TensorType) *core.Array {
	if c.array != nil || !c.uniform || t.Shape.NumElements() > foldLimit {
		return c.array
	}
	a := core.NewArray(t)
	for i := range a.Data {
		a.Data[i] = c.value
	}
	c.array = a
	return a
}

// movesData lists the ops whose elements are elements of their inputs, rounded to the
// result dtype: a uniform input gives a uniform result.
var movesData = map[string]bool{"reshape": true, "transpose": true, "broadcast_to": true, "slice": true, "concat": true}

// pointwise reports whether each element of n's result depends only on the elements at
// the same (broadcast) index of its inputs, so uniform inputs give a uniform result.
func pointwise(n *core.Node) bool {
	l, ok := lowerings[n.Op]
	return ok && len(n.Inputs) > 0 && l.kind == TileElementwise && !l.partial && !l.indirect && l.maps == nil &&
		(l.body != nil || n.Op == "cast") && n.Op != "fused"
}

func runFoldConstants(c *compilation) error {
	g, err := foldConstants(c.graph)
	if err != nil {
		return err
	}
	c.graph = g
	return nil
}

func foldConstants(g *core.Graph) (*core.Graph, error) {
	known := map[core.Value]*constant{} // by value of the new graph
	folded, err := rewriteGraph(g, func(b *core.Builder, _ core.Value, n *core.Node, ins []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		c := foldNode(b, n, ins, known)
		if c == nil || !c.uniform || n.Op == "full" {
			if c != nil { // keep the node; remember its value once it is built
				v, err := b.Op(n.Op, ins, n.Attrs, n.Loc)
				known[v] = c
				return v, true, err
			}
			return -1, false, nil
		}
		v, err := b.Op("full", nil, core.Attrs{"value": c.value, "dtype": n.Type.DType.LongName(), "shape": int64s(n.Type.Shape)}, n.Loc)
		known[v] = c
		return v, true, err
	})
	if err != nil {
		return nil, err
	}
	return materializeConstants(folded, known)
}

// dataLimit is the most elements of a varying constant the program carries as data.
const dataLimit = 4096

// materializeConstants replaces each varying constant that some non-constant node reads
// through a kernel of its own (a matmul, a reduction, a gather: anything but a
// pointwise op, which fusion would run the constant's computation inside), or that is
// a result, by a constant holding its elements: a run then reads them from GM with the
// inputs instead of launching a task to compute them. The nodes that computed it are
// left to DCE.
func materializeConstants(g *core.Graph, known map[core.Value]*constant) (*core.Graph, error) {
	users := g.Users()
	needsData := map[core.Value]bool{}
	for _, o := range g.Outputs {
		needsData[o] = true
	}
	for i := range g.Nodes {
		for _, u := range users[i] {
			if known[u] == nil && !pointwise(g.Nodes[u]) {
				needsData[core.Value(i)] = true
			}
		}
	}
	return rewriteGraph(g, func(b *core.Builder, v core.Value, n *core.Node, _ []core.Value, _ func(core.Value) core.Value) (core.Value, bool, error) {
		c := known[v]
		if !needsData[v] || c == nil || c.uniform || c.array == nil || n.Op == "constant" || len(c.array.Data) > dataLimit {
			return -1, false, nil
		}
		out, err := b.Op("constant", nil, core.ConstantAttrs(c.array), n.Loc)
		return out, true, err
	})
}

// foldNode computes what is known of n's value from its inputs' (nil: not a constant).
func foldNode(b *core.Builder, n *core.Node, ins []core.Value, known map[core.Value]*constant) *constant {
	switch n.Op {
	case core.OpParam, "fused":
		return nil
	case "full":
		return &constant{uniform: true, value: dtype.Round(n.Type.DType, n.Attrs.Float("value", 0))}
	case "constant":
		return evaluate(b, n, ins, nil)
	}
	args := make([]*constant, len(ins))
	allUniform := true
	for i, in := range ins {
		if args[i] = known[in]; args[i] == nil {
			return nil
		}
		allUniform = allUniform && args[i].uniform
	}
	if allUniform && len(ins) > 0 {
		if movesData[n.Op] {
			v := dtype.Round(n.Type.DType, args[0].value)
			for _, a := range args[1:] {
				if !sameValue(dtype.Round(n.Type.DType, a.value), v) {
					return evaluate(b, n, ins, args)
				}
			}
			return &constant{uniform: true, value: v}
		}
		if pointwise(n) {
			if v, ok := evaluateScalar(b, n, ins, args); ok {
				return &constant{uniform: true, value: v}
			}
			return nil
		}
	}
	return evaluate(b, n, ins, args)
}

// evaluateScalar computes a pointwise op of uniform inputs on 0-d copies of them.
func evaluateScalar(b *core.Builder, n *core.Node, ins []core.Value, args []*constant) (float64, bool) {
	sb := core.NewBuilder("fold")
	vals := make([]core.Value, len(ins))
	arrays := make([]*core.Array, len(ins))
	for i, in := range ins {
		t := core.TensorType{DType: b.Type(in).DType, Shape: core.Shape{}}
		vals[i] = sb.Param(fmt.Sprintf("x%d", i), t)
		arrays[i] = core.NewArray(t)
		arrays[i].Data[0] = args[i].value
	}
	v, err := sb.Op(n.Op, vals, n.Attrs, n.Loc)
	if err != nil || sb.Type(v).DType != n.Type.DType {
		return 0, false
	}
	sb.Output(v)
	out, err := core.Interpret(sb.Graph(), arrays)
	if err != nil {
		return 0, false
	}
	return out[0].Data[0], true
}

// evaluate runs n on the elements of its inputs when they and its result are small:
// uniform or not, the result is then known exactly.
func evaluate(b *core.Builder, n *core.Node, ins []core.Value, args []*constant) *constant {
	if n.Type.Shape.NumElements() > foldLimit {
		return nil
	}
	sb := core.NewBuilder("fold")
	vals := make([]core.Value, len(ins))
	arrays := make([]*core.Array, len(ins))
	for i, in := range ins {
		if arrays[i] = args[i].elements(b.Type(in)); arrays[i] == nil {
			return nil
		}
		vals[i] = sb.Param(fmt.Sprintf("x%d", i), b.Type(in))
	}
	v, err := sb.Op(n.Op, vals, n.Attrs, n.Loc)
	if err != nil {
		return nil
	}
	sb.Output(v)
	out, err := core.Interpret(sb.Graph(), arrays)
	if err != nil { // a data-dependent error (an index out of range): the run reports it
		return nil
	}
	c := &constant{array: out[0], uniform: true}
	for i, x := range out[0].Data {
		if i == 0 {
			c.value = x
		} else if !sameValue(x, c.value) {
			c.uniform = false
			break
		}
	}
	if len(out[0].Data) == 0 {
		c.uniform = false // nothing to fill: keep the node as it is
	}
	return c
}

// sameValue compares elements bit for bit (-0.0 is not 0.0) but takes every NaN as the
// same NaN, as the dtypes store one.
func sameValue(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}
