package core

import (
	"fmt"
	"sync"
)

// fused is a group of ops the compiler runs as one kernel. Its "body" attribute is the
// group as a Tensor Graph in text form (params are the fused op's inputs, in order; one
// output), so the op's meaning is exactly its body's, the text form of a graph holding
// it stays self-contained, and the reference interpreter runs it like any other op.

func init() {
	Register(&OpDef{Name: "fused", Arity: 1, MaxArity: Variadic, Attrs: []AttrSpec{{"body", ""}},
		Doc:   "ops fused into one kernel by the compiler: the body graph (text form) applied to the inputs",
		Infer: inferFused, Eval: evalFused})
	// fused_rows is the same, for a group whose body also reduces along the last axis:
	// its kernel holds whole rows on chip, so it is a different kind of kernel.
	Register(&OpDef{Name: "fused_rows", Arity: 1, MaxArity: Variadic, Attrs: []AttrSpec{{"body", ""}},
		Doc:   "ops over whole rows (reductions along the last axis and elementwise ops) fused into one kernel by the compiler: the body graph (text form) applied to the inputs",
		Infer: inferFused, Eval: evalFused})
}

// concreteOnly are ops that never meet symbolic shapes: the compiler makes fused ops in
// concrete graphs only (symbolic ones are specialised first), so they need no
// symbolic shape rule.
var concreteOnly = map[string]bool{"fused": true, "fused_rows": true}

// fusedBodies caches parsed bodies by their text: a compiled graph names the same body
// in its inference, verification and lowering.
var fusedBodies sync.Map // string -> *Graph

// FusedBody parses (once) and returns the body graph of a fused op.
func FusedBody(attrs Attrs) (*Graph, error) {
	text := attrs.Str("body", "")
	if g, ok := fusedBodies.Load(text); ok {
		return g.(*Graph), nil
	}
	g, err := Parse(text)
	if err != nil {
		return nil, err
	}
	if len(g.Outputs) != 1 {
		return nil, fmt.Errorf("fused body returns %d values, want one", len(g.Outputs))
	}
	fusedBodies.Store(text, g)
	return g, nil
}

func inferFused(in []TensorType, attrs Attrs) (TensorType, *Error) {
	body, err := FusedBody(attrs)
	if err != nil {
		return TensorType{}, Errorf(ValueError, "fused: bad body: %v", err)
	}
	if len(body.Params) != len(in) {
		return TensorType{}, Errorf(ValueError, "fused: the body takes %d inputs, got %d", len(body.Params), len(in))
	}
	for i, p := range body.Params {
		if !body.Type(p).Equal(in[i]) {
			return TensorType{}, Errorf(ValueError, "fused: input %d has type %s, the body's param %s", i, in[i], body.Type(p))
		}
	}
	return body.Type(body.Outputs[0]), nil
}

func evalFused(in []*Array, attrs Attrs, out *Array) {
	body, err := FusedBody(attrs)
	if err != nil {
		panic(Errorf(InternalError, "fused: %v", err))
	}
	res, err := Interpret(body, in)
	if err != nil {
		if ce, ok := err.(*Error); ok {
			panic(ce) // the interpreter reports it at the fused op's node
		}
		panic(Errorf(InternalError, "fused: %v", err))
	}
	copy(out.Data, res[0].Data)
}
