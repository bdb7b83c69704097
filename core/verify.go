package core

import (
	"fmt"
	"sort"

	"pypto/internal/checked"
)

// Verify checks that g is well-formed IR: the invariant every pass must keep and every
// later stage may assume.
//
//   - nodes are in topological order: each input is an earlier node;
//   - the params are exactly the OpParam nodes, each listed once in g.Params, each with a
//     non-empty name that no other param has, and without inputs or attributes;
//   - every other node's op is registered, has the op's arity, and has only attributes
//     the op declares, holding values of the declared default's type;
//   - every type has a valid dtype and non-negative dims whose product fits in an int, and
//     every op node's type is exactly what InferOp gives for its inputs and attributes;
//   - there is at least one output and every output names an existing node.
//
// A failure is an *Error of kind InternalError: a graph that breaks these rules was built
// wrongly by our code, not by the user. The message names the node as it would print,
// with values numbered by node index (e.g. "%3 = matmul(%x, %2) ... : f16[4,4]").
func Verify(g *Graph) error {
	if g == nil {
		return Errorf(InternalError, "verify: nil graph")
	}
	v := verifier{g: g, names: indexNames(g)}
	if err := v.params(); err != nil {
		return err
	}
	for i := range g.Nodes {
		if err := v.node(i); err != nil {
			return err
		}
	}
	if len(g.Outputs) == 0 {
		return v.errorf("graph has no outputs").Suggest("mark at least one value as a result")
	}
	for k, o := range g.Outputs {
		if int(o) < 0 || int(o) >= len(g.Nodes) {
			return v.errorf("output %d refers to value %d, which does not exist", k, int(o))
		}
	}
	return nil
}

type verifier struct {
	g      *Graph
	names  []string
	listed map[Value]bool
}

func (v *verifier) errorf(format string, args ...any) *Error {
	return Errorf(InternalError, "graph %s: %s", quoteName(v.g.Name), fmt.Sprintf(format, args...))
}

func (v *verifier) nodeErrorf(i int, format string, args ...any) *Error {
	return v.errorf("%s: %s", formatNodeWith(v.g, v.names, i), fmt.Sprintf(format, args...))
}

func (v *verifier) params() *Error {
	v.listed = map[Value]bool{}
	byName := map[string]Value{}
	for k, p := range v.g.Params {
		if int(p) < 0 || int(p) >= len(v.g.Nodes) || v.g.Nodes[p] == nil {
			return v.errorf("parameter %d refers to value %d, which does not exist", k, int(p))
		}
		n := v.g.Nodes[p]
		switch {
		case n.Op != OpParam:
			return v.nodeErrorf(int(p), "listed as parameter %d but its op is %q, not %q", k, n.Op, OpParam)
		case v.listed[p]:
			return v.nodeErrorf(int(p), "listed twice among the parameters")
		case n.Name == "":
			return v.nodeErrorf(int(p), "parameter %d has no name", k)
		}
		if prev, dup := byName[n.Name]; dup {
			return v.nodeErrorf(int(p), "parameter name is also used by node %d", int(prev))
		}
		v.listed[p] = true
		byName[n.Name] = p
	}
	return nil
}

func (v *verifier) node(i int) *Error {
	n := v.g.Nodes[i]
	if n == nil {
		return v.errorf("node %d is nil", i)
	}
	if msg := checkType(n.Type); msg != "" {
		return v.nodeErrorf(i, "%s", msg)
	}
	if n.Op == OpParam {
		switch {
		case !v.listed[Value(i)]:
			return v.nodeErrorf(i, "param node is not listed in the graph's parameters")
		case len(n.Inputs) != 0 || len(n.Attrs) != 0:
			return v.nodeErrorf(i, "param node has inputs or attributes")
		}
		return nil
	}
	def, ok := LookupOp(n.Op)
	if !ok {
		return v.nodeErrorf(i, "op %q is not registered", n.Op)
	}
	if !def.AcceptsArity(len(n.Inputs)) {
		return v.nodeErrorf(i, "%s takes %s inputs, node has %d", n.Op, def.ArityString(), len(n.Inputs))
	}
	types := make([]TensorType, len(n.Inputs))
	for k, in := range n.Inputs {
		if int(in) < 0 || int(in) >= i {
			return v.nodeErrorf(i, "input %d refers to value %d, which is not defined before this node", k, int(in))
		}
		if v.g.Nodes[in] == nil {
			return v.nodeErrorf(i, "input %d refers to nil node %d", k, int(in))
		}
		types[k] = v.g.Nodes[in].Type
	}
	if err := v.attrs(i, def); err != nil {
		return err
	}
	t, _, err := InferOp(n.Op, types, n.Attrs)
	if err != nil {
		return v.nodeErrorf(i, "op rejects its inputs: %s", err.Message)
	}
	if !t.Equal(n.Type) {
		return v.nodeErrorf(i, "node type is %s but %s infers %s", n.Type, n.Op, t)
	}
	return nil
}

// attrs checks attribute names and value types, in name order so that the first error
// reported does not depend on map iteration.
func (v *verifier) attrs(i int, def *OpDef) *Error {
	keys := make([]string, 0, len(v.g.Nodes[i].Attrs))
	for k := range v.g.Nodes[i].Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val := v.g.Nodes[i].Attrs[k]
		if err := checkAttrValue(val); err != nil {
			return v.nodeErrorf(i, "attribute %s: %v", k, err)
		}
		spec := def.attrSpec(k)
		if spec == nil {
			return v.nodeErrorf(i, "attribute %s is not one %s declares", k, def.Name)
		}
		if !attrTypeMatches(val, spec.Default) {
			return v.nodeErrorf(i, "attribute %s has type %T, want %T", k, val, spec.Default)
		}
	}
	return nil
}

// checkType returns what is wrong with a type, or "". The byte size must fit in an int
// so that the interpreter and the memory planner can size buffers without overflow.
func checkType(t TensorType) string {
	if !t.DType.Valid() {
		return fmt.Sprintf("invalid dtype %s", t.DType)
	}
	if msg := checkLayout(t); msg != "" {
		return msg
	}
	if t.Dims != nil {
		return checkSymbolicShape(t)
	}
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Sprintf("negative dimension in shape %s", t.Shape)
		}
	}
	// The widest array of a value is the reference interpreter's (float64).
	if _, ok := checked.Bytes(t.Shape, referenceElemBytes); !ok {
		return fmt.Sprintf("shape %s has too many elements", t.Shape)
	}
	return ""
}

// checkSymbolicShape checks that Shape and Dims of a symbolic type agree: Shape holds
// each constant dim (non-negative) and -1 for each symbolic one.
func checkSymbolicShape(t TensorType) string {
	if len(t.Dims) != len(t.Shape) {
		return fmt.Sprintf("symbolic type has %d dims but a rank-%d shape", len(t.Dims), len(t.Shape))
	}
	symbolic := false
	for i, d := range t.Dims {
		v, isConst := d.Const()
		switch {
		case isConst && v < 0:
			return fmt.Sprintf("negative dimension in shape %s", DimsString(t.Dims))
		case isConst && t.Shape[i] != v, !isConst && t.Shape[i] != -1:
			return fmt.Sprintf("shape %s does not match its dims %s", t.Shape, DimsString(t.Dims))
		}
		symbolic = symbolic || !isConst
	}
	if !symbolic {
		return fmt.Sprintf("type %s lists dims but none is symbolic (build it with SymbolicType)", t)
	}
	return ""
}
