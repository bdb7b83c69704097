package core

import (
	"strings"

	"pypto/dtype"
)

// Interpret runs g on the host with each op's reference implementation (OpDef.Eval): the
// oracle every compiled path is checked against. Nodes are evaluated once each, in node
// order, unused ones included, so that a bug in any op shows here first.
//
// inputs are bound to g.Params in order and must match their types exactly; errors name
// the parameter and are *Error of kind ValueError (the caller passed the wrong thing) or,
// when g itself is malformed or an op's Eval fails, InternalError. Inputs are copied and
// rounded to their dtype first (as loading them onto a device would), so the caller's
// arrays are never modified or aliased by the results.
func Interpret(g *Graph, inputs []*Array) ([]*Array, error) {
	if err := Verify(g); err != nil {
		return nil, err
	}
	if len(inputs) != len(g.Params) {
		return nil, Errorf(ValueError, "graph %s takes %d inputs (%s), got %d", quoteName(g.Name), len(g.Params), paramList(g), len(inputs))
	}
	vals := make([]*Array, len(g.Nodes))
	for k, p := range g.Params {
		param := g.Nodes[p]
		in := inputs[k]
		name := "%" + quoteName(param.Name)
		if err := checkReferenceSize(param.Type); err != nil {
			return nil, err
		}
		switch {
		case in == nil:
			return nil, Errorf(ValueError, "input %d (%s) is nil", k, name)
		case !in.Type.Equal(param.Type):
			return nil, Errorf(ValueError, "input %d (%s): expected %s, got %s", k, name, param.Type, in.Type).
				Suggest("cast or reshape the input to %s", param.Type)
		case len(in.Data) != param.Type.Shape.NumElements():
			return nil, Errorf(ValueError, "input %d (%s) holds %d values, but its type %s has %d elements", k, name, len(in.Data), in.Type, param.Type.Shape.NumElements())
		}
		vals[p] = roundedCopy(in)
	}
	for i, n := range g.Nodes {
		if n.Op == OpParam {
			continue
		}
		if err := checkReferenceSize(n.Type); err != nil {
			return nil, err.WithLoc(n.Loc)
		}
		args := make([]*Array, len(n.Inputs))
		for k, in := range n.Inputs {
			args[k] = vals[in]
		}
		out, err := evalNode(g, i, args)
		if err != nil {
			return nil, err
		}
		vals[i] = out
	}
	results := make([]*Array, len(g.Outputs))
	returned := map[Value]bool{}
	for k, o := range g.Outputs {
		results[k] = vals[o]
		if returned[o] { // the same value returned twice: give each result its own buffer
			results[k] = roundedCopy(vals[o])
		}
		returned[o] = true
	}
	return results, nil
}

// evalNode runs one op's Eval, turning a panic (a bug in the reference implementation)
// into an error that names the node. An Eval reports errors that only the data can show
// (an index out of range) by panicking with an *Error, which is returned as it is.
func evalNode(g *Graph, i int, args []*Array) (out *Array, err *Error) {
	n := g.Nodes[i]
	def, _ := LookupOp(n.Op) // Verify has checked it exists
	out = NewArray(n.Type)
	defer func() {
		if r := recover(); r != nil {
			out = nil
			if e, ok := r.(*Error); ok { // a data-dependent error the op reports, e.g. an index out of range
				err = e.WithLoc(n.Loc)
				return
			}
			err = Errorf(InternalError, "graph %s: %s: reference implementation of %s panicked: %v",
				quoteName(g.Name), formatNodeWith(g, indexNames(g), i), n.Op, r)
		}
	}()
	def.Eval(args, printedAttrs(n), out)
	return out, nil
}

func roundedCopy(a *Array) *Array {
	out := NewArray(a.Type)
	for i, v := range a.Data {
		out.Data[i] = dtype.Round(a.Type.DType, v)
	}
	return out
}

func paramList(g *Graph) string {
	names := make([]string, len(g.Params))
	for k, p := range g.Params {
		names[k] = "%" + quoteName(g.Nodes[p].Name)
	}
	return strings.Join(names, ", ")
}
