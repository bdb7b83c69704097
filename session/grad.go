package session

import (
	"fmt"
	"strings"

	"pypto/core"
)

// Gradients of lazy tensors. A tensor is tracked when it requires grad (Track) or an
// input of its op is tracked; a tracked tensor keeps its recipe when it is realised,
// so the graph from the inputs to a loss is still there when the loss is
// differentiated. Grad builds that graph, adds the backward nodes with core.Gradients
// (the VJP rules of the op registry) and returns them as pending tensors: realising
// them (or tracing them into p.compile) compiles the backward graph like any other.

// Track marks t as one gradients are taken with respect to; later ops on it are
// tracked. A tensor already tracked is returned as it is (so gradients of gradients
// reach the outer inputs). An untracked concrete tensor is not changed: the result is
// a new tensor of the same data. A placeholder (a traced input) is marked itself,
// since the trace knows it by identity.
func Track(t *Tensor) *Tensor {
	if t.tracked.Load() {
		return t
	}
	k, data, _ := t.state()
	if k == concrete {
		nt := &Tensor{typ: t.typ, kind: concrete, data: data, keep: t.Keep()}
		nt.tracked.Store(true)
		return nt
	}
	t.tracked.Store(true)
	return t
}

// Detach returns a tensor of t's data through which no gradient flows (t is
// realised first), sharing the bytes.
func (s *Session) Detach(t *Tensor) (*Tensor, error) {
	if t.IsPlaceholder() {
		return nil, core.Errorf(core.ValueError, "a traced input of p.compile has no data to detach").
			Suggest("detach the results of the compiled function instead")
	}
	if err := s.Realize(t); err != nil {
		return nil, err
	}
	return &Tensor{typ: t.typ, kind: concrete, data: t.Data(), keep: t.Keep()}, nil
}

// IsTracked reports whether gradients can flow to t from what is computed from it.
func IsTracked(t *Tensor) bool { return t.tracked.Load() }

// Grad returns the gradient of out, seeded with seed (a tensor of out's type; nil
// means ones, which needs out to be a single element), with respect to each tensor
// in wrt: a pending tensor of that tensor's type, or nil where out does not depend on
// it (or it is not float).
func Grad(out *Tensor, wrt []*Tensor, seed *Tensor, loc core.Location) ([]*Tensor, error) {
	if out == nil {
		return nil, core.Errorf(core.ValueError, "grad of a nil tensor")
	}
	if !out.typ.DType.IsFloat() {
		return nil, core.Errorf(core.DTypeError, "cannot differentiate a %s value: gradients need a float result", out.typ.DType.LongName()).WithLoc(loc)
	}
	if out.typ.IsSymbolic() {
		return nil, core.Errorf(core.ShapeError, "cannot differentiate a value of symbolic shape %s", out.typ.ShapeString()).WithLoc(loc).
			Suggest("trace the function with concrete shapes: p.compile(fn, dynamic=False)")
	}
	if seed == nil {
		if out.typ.Shape.NumElements() != 1 {
			return nil, core.Errorf(core.ShapeError, "the gradient of a value of shape %v needs a cotangent of that shape", out.typ.Shape).WithLoc(loc).
				Because("without one, only a single-element (scalar) value can be differentiated").
				Suggest("reduce it to a scalar first (loss = y.sum()), or pass gradient= a tensor of its shape")
		}
	} else if !seed.typ.Equal(out.typ) {
		return nil, core.Errorf(core.ShapeError, "the gradient given has type %v, the value it seeds has type %v", seed.typ, out.typ).WithLoc(loc).
			Suggest("give a gradient of the value's shape and dtype")
	}
	gb := &gradBuild{b: core.NewBuilder("grad"), vals: map[*Tensor]core.Value{}, tensors: map[core.Value]*Tensor{}}
	ov, err := gb.value(out)
	if err != nil {
		return nil, err
	}
	for _, w := range wrt {
		if w != nil {
			if _, err := gb.value(w); err != nil { // an unrelated one becomes a param nothing reads
				return nil, err
			}
		}
	}
	if syms := core.GraphSymbols(gb.b.Graph()); len(syms) > 0 {
		return nil, core.Errorf(core.ShapeError, "cannot differentiate a computation over symbolic shapes (%s)", strings.Join(syms, ", ")).WithLoc(loc).
			Because("the gradient rules need concrete sizes").
			Suggest("trace the function with concrete shapes: p.compile(fn, dynamic=False)")
	}
	forward := len(gb.b.Graph().Nodes)
	var sv core.Value
	if seed == nil {
		v, err := gb.b.Op("full", nil, core.Attrs{"value": 1.0, "dtype": out.typ.DType.LongName(), "shape": int64sOf(out.typ.Shape)}, loc)
		if err != nil {
			return nil, err
		}
		sv = v
	} else if sv, err = gb.value(seed); err != nil {
		return nil, err
	}
	wv := make([]core.Value, len(wrt))
	for i, w := range wrt {
		wv[i] = -1
		if w != nil {
			wv[i] = gb.vals[w]
		}
	}
	gvals, err := core.Gradients(gb.b, ov, sv, wv)
	if err != nil {
		return nil, withLoc(err, loc)
	}
	// The backward nodes become pending tensors over the forward ones.
	g := gb.b.Graph()
	for i := forward; i < len(g.Nodes); i++ {
		nd := g.Nodes[i]
		if _, seen := gb.tensors[core.Value(i)]; seen {
			continue
		}
		ins := make([]*Tensor, len(nd.Inputs))
		for k, in := range nd.Inputs {
			ins[k] = gb.tensors[in]
		}
		t := &Tensor{typ: nd.Type, kind: pending, op: &op{name: nd.Op, inputs: ins, attrs: nd.Attrs, loc: nd.Loc}}
		for _, in := range ins {
			if in.tracked.Load() {
				t.tracked.Store(true) // so that gradients of gradients can be taken
				break
			}
		}
		gb.tensors[core.Value(i)] = t
	}
	res := make([]*Tensor, len(wrt))
	for i, v := range gvals {
		if v >= 0 {
			res[i] = gb.tensors[v]
		}
	}
	return res, nil
}

// gradBuild turns the tensors behind a value into a graph: leaves (concrete tensors
// without a kept recipe, and placeholders) become params; every tensor with a recipe
// becomes its op, so a pending tensor gradients are taken for is a node, not a leaf.
type gradBuild struct {
	b       *core.Builder
	vals    map[*Tensor]core.Value
	tensors map[core.Value]*Tensor
}

func (gb *gradBuild) value(t *Tensor) (core.Value, error) {
	if v, ok := gb.vals[t]; ok {
		return v, nil
	}
	_, _, o := t.state()
	var v core.Value
	if o == nil {
		v = gb.b.Param(fmt.Sprintf("p%d", len(gb.b.Graph().Params)), t.typ)
	} else {
		ins := make([]core.Value, len(o.inputs))
		for i, in := range o.inputs {
			iv, err := gb.value(in)
			if err != nil {
				return -1, err
			}
			ins[i] = iv
		}
		nv, err := gb.b.Op(o.name, ins, o.attrs, o.loc)
		if err != nil {
			return -1, err
		}
		v = nv
	}
	gb.vals[t] = v
	gb.tensors[v] = t
	return v, nil
}

func int64sOf(s core.Shape) []int64 {
	out := make([]int64, len(s))
	for i, d := range s {
		out[i] = int64(d)
	}
	return out
}
