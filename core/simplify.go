package core

import (
	"math"

	"pypto/dtype"
)

// Algebraic simplification: rewrites that give exactly the same bytes for every input
// of every dtype, NaN, infinities and signed zeros included. Each rule says why it is
// exact; rules that hold only for some values are left out on purpose:
//
//   - x + 0 is not x for floats: -0.0 + 0.0 is +0.0 (x + -0.0 is x, and is a rule);
//   - x - -0.0 is not x for the same reason (x - 0.0 is);
//   - x * 0 is not 0: NaN * 0 is NaN, inf * 0 is NaN, -1 * 0 is -0.0;
//   - x - x is not 0 (NaN, inf) and x / x is not 1 (0, NaN, inf);
//   - cast(cast(x, a), b) is not cast(x, b) when a narrows x (the first rounding shows).
//
// Every rule keeps a result's type: a rule whose shortcut has another dtype or shape
// than the node (x * 1 where the 1 is float32 and x float16, or where the 1 broadcasts x
// to a larger shape) does not apply.
type simplification struct {
	name string
	ops  []string
	// apply returns the value that replaces n (an existing one or one it adds to b),
	// or ok=false when the rule does not hold for this node.
	apply func(b *Builder, n *Node, ins []Value) (v Value, ok bool, err error)
}

var simplifications = []simplification{
	// x * 1 and 1 * x are x: multiplying by one is exact in every dtype and keeps NaN, inf
	// and -0.0
	{"mul-one",
		[]string{"mul"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			return operandWithConstant(b, n, ins, func(c float64, _ dtype.DType) bool { return c == 1 }, true)
		}},
	// x + -0.0 (x + 0 for integers) is x: -0.0 is the additive identity of IEEE floats,
	// +0.0 is not (-0.0 + 0.0 is +0.0)
	{"add-zero",
		[]string{"add"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			return operandWithConstant(b, n, ins, isAdditiveIdentity, true)
		}},
	// x - 0.0 (x - 0 for integers) is x: it equals x + -0.0
	{"sub-zero",
		[]string{"sub"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			return operandWithConstant(b, n, ins, func(c float64, d dtype.DType) bool {
				return c == 0 && (!d.IsFloat() || !math.Signbit(c))
			}, false)
		}},
	// x / 1 is x: dividing by one is exact and keeps NaN, inf and -0.0
	{"div-one",
		[]string{"div"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			return operandWithConstant(b, n, ins, func(c float64, _ dtype.DType) bool { return c == 1 }, false)
		}},
	// neg(neg(x)) and logical_not(logical_not(x)) of bool x are x: negation is its own
	// inverse, wrapping included (-(-128) is -128 in int8 both times)
	{"involution",
		[]string{"neg", "logical_not"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			inner := b.g.Nodes[ins[0]]
			if inner.Op != n.Op || !b.Type(inner.Inputs[0]).Equal(n.Type) {
				return -1, false, nil
			}
			return inner.Inputs[0], true, nil
		}},
	// f(f(x)) is f(x) for abs, relu, floor, ceil and round: their results are fixed points
	// (abs(-128) wraps to -128 in int8, whose abs is -128 again)
	{"idempotent",
		[]string{"abs", "relu", "floor", "ceil", "round"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			if b.g.Nodes[ins[0]].Op != n.Op {
				return -1, false, nil
			}
			return ins[0], true, nil
		}},
	// maximum(x, x), minimum(x, x), where(c, x, x), and logical_and/logical_or of a bool x
	// with itself are x
	{"same-operands",
		[]string{"maximum", "minimum", "logical_and", "logical_or", "where"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			a, c := ins[0], ins[1]
			if n.Op == "where" {
				a, c = ins[1], ins[2]
			}
			if a != c || !b.Type(a).Equal(n.Type) {
				return -1, false, nil
			}
			return a, true, nil
		}},
	// cast to x's own dtype, reshape or broadcast_to x's own shape, transpose by the
	// identity, a step-1 slice of everything and concat of one tensor are x
	{"identity-view",
		[]string{"cast", "reshape", "broadcast_to", "transpose", "slice", "concat"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			if len(ins) != 1 || !b.Type(ins[0]).Equal(n.Type) {
				return -1, false, nil
			}
			switch n.Op {
			case "transpose":
				perm, _ := transposePerm(n.Type.Shape, n.Attrs.Ints("perm"))
				for i, p := range perm {
					if p != i {
						return -1, false, nil
					}
				}
			case "slice":
				for _, s := range n.Attrs.Ints("steps") {
					if s != 1 { // a reversed axis has the same shape
						return -1, false, nil
					}
				}
			}
			return ins[0], true, nil
		}},
	// cast(cast(x, a), b) is cast(x, b), or x when b is x's dtype, when a holds every
	// value of x's dtype (f16 or bf16 in f32, int8 in int32 or any float, bool in
	// anything): the first cast changes no value, NaN, inf and -0.0 included
	{"cast-through-wider",
		[]string{"cast"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			inner := b.g.Nodes[ins[0]]
			if inner.Op != "cast" {
				return -1, false, nil
			}
			x := inner.Inputs[0]
			if !holdsEvery(b.Type(x).DType, inner.Type.DType) {
				return -1, false, nil
			}
			if b.Type(x).Equal(n.Type) {
				return x, true, nil
			}
			v, err := b.Op("cast", []Value{x}, n.Attrs, n.Loc)
			return v, true, err
		}},
	// reshape(reshape(x)) is one reshape of x (or x, at x's shape): both keep the row-
	// major order
	{"reshape-reshape",
		[]string{"reshape"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			inner := b.g.Nodes[ins[0]]
			if inner.Op != "reshape" {
				return -1, false, nil
			}
			if x := inner.Inputs[0]; b.Type(x).Equal(n.Type) {
				return x, true, nil
			}
			v, err := b.Op("reshape", inner.Inputs, Attrs{"shape": int64s(n.Type.Shape)}, n.Loc)
			return v, true, err
		}},
	// transpose(transpose(x, p), q) is transpose(x, p[q]), or x when that is the identity
	{"transpose-transpose",
		[]string{"transpose"}, func(b *Builder, n *Node, ins []Value) (Value, bool, error) {
			inner := b.g.Nodes[ins[0]]
			if inner.Op != "transpose" {
				return -1, false, nil
			}
			x := inner.Inputs[0]
			p, _ := transposePerm(b.Type(x).Shape, inner.Attrs.Ints("perm"))
			q, _ := transposePerm(inner.Type.Shape, n.Attrs.Ints("perm"))
			composed := make([]int, len(q))
			identity := true
			for i, a := range q {
				composed[i] = p[a]
				identity = identity && composed[i] == i
			}
			if identity {
				return x, true, nil
			}
			v, err := b.Op("transpose", []Value{x}, Attrs{"perm": int64s(composed)}, n.Loc)
			return v, true, err
		}},
}

// holdsEvery reports whether every value of dtype from is a value of dtype to, so a
// cast from one to the other changes nothing.
func holdsEvery(from, to dtype.DType) bool {
	switch from {
	case to, dtype.Bool:
		return true
	case dtype.Int8:
		return to != dtype.Bool // int32 and every float hold -128..127 exactly
	case dtype.Float16, dtype.BFloat16:
		return to == dtype.Float32
	}
	return false
}

// isAdditiveIdentity: -0.0 for floats, 0 for integers.
func isAdditiveIdentity(c float64, d dtype.DType) bool {
	return c == 0 && (!d.IsFloat() || math.Signbit(c))
}

// operandWithConstant returns the first operand of a binary node whose second operand is
// a constant (a full) accepted by isIdentity, or, when commutes, the second operand of a
// node whose first is; only when that operand has the node's exact type. The constant is
// judged in the dtype the op computes in, the node's.
func operandWithConstant(b *Builder, n *Node, ins []Value, isIdentity func(c float64, d dtype.DType) bool, commutes bool) (Value, bool, error) {
	pairs := [][2]Value{{ins[0], ins[1]}}
	if commutes {
		pairs = append(pairs, [2]Value{ins[1], ins[0]})
	}
	for _, p := range pairs {
		x, c := p[0], p[1]
		cn := b.g.Nodes[c]
		if cn.Op != "full" || !b.Type(x).Equal(n.Type) {
			continue
		}
		v := dtype.Round(cn.Type.DType, cn.Attrs.Float("value", 0))
		if dtype.Round(n.Type.DType, v) == v && isIdentity(v, n.Type.DType) && !math.IsNaN(v) {
			return x, true, nil
		}
	}
	return -1, false, nil
}

// SimplifyAlgebra returns g with the rewrites of simplifications applied in one sweep
// in node order (a rewrite's result is itself simplified by the rules of the nodes that
// read it, so neg(neg(neg(neg(x)))) becomes x). New nodes keep the location of the node
// they replace. Nodes left unused are not removed (EliminateDeadCode does that).
func SimplifyAlgebra(g *Graph) (*Graph, error) {
	byOp := map[string][]*simplification{}
	for i := range simplifications {
		for _, op := range simplifications[i].ops {
			byOp[op] = append(byOp[op], &simplifications[i])
		}
	}
	b := NewBuilder(g.Name)
	vals := make([]Value, len(g.Nodes))
	for _, p := range g.Params {
		vals[p] = b.Param(g.Nodes[p].Name, g.Nodes[p].Type)
	}
	for i, n := range g.Nodes {
		if n.Op == OpParam {
			continue
		}
		ins := n.mapInputs(vals)
		done := false
		for _, s := range byOp[n.Op] {
			v, ok, err := s.apply(b, n, ins)
			if err != nil {
				return nil, AsInternal(err, "graph %s: simplification %s of %s", quoteName(g.Name), s.name, n.Op)
			}
			if ok {
				vals[i], done = v, true
				break
			}
		}
		if !done {
			v, err := b.Op(n.Op, ins, n.Attrs, n.Loc)
			if err != nil {
				return nil, AsInternal(err, "graph %s: rebuilding %s", quoteName(g.Name), n.Op)
			}
			vals[i] = v
		}
	}
	for _, o := range g.Outputs {
		b.Output(vals[o])
	}
	return b.Graph(), nil
}
