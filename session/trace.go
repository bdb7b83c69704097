package session

import (
	"pypto/core"
)

// Trace is a traced function before it is compiled: the Tensor Graph from its
// placeholder inputs to its outputs, the data of the concrete tensors it captured (bound
// as extra params), and where each output comes from. One trace may be compiled with
// several configurations (Session.CompileTrace); it is immutable.
type Trace struct {
	name     string
	inputs   []core.TensorType
	graph    *core.Graph // nil when no output needs computing
	cons     []core.Constraint
	bound    [][]byte
	boundT   []core.TensorType
	keeps    []*External // owners of the external memory among bound and outs
	outs     []outSource
	firstLoc core.Location // where the first computed output was made
	symbolic bool          // the graph has symbolic shapes
}

// outSource says where one result of the executor comes from.
type outSource struct {
	typ   core.TensorType // symbolic when the executor is
	graph int             // index among the graph outputs, or -1
	input int             // index of the input returned as is, or -1
	data  []byte          // a captured constant returned as is
	keep  *External       // data's owner when it is external memory
}

// NewTrace builds the Tensor Graph of the computation from inputs (placeholders from
// NewPlaceholder) to outputs. A symbolic graph gets the constraints its ops need of the
// symbols, and every symbol must size some input.
func NewTrace(name string, inputs []*Tensor, outputs []*Tensor) (*Trace, error) {
	if name == "" {
		name = "main"
	}
	if len(outputs) == 0 {
		return nil, core.Errorf(core.ValueError, "the traced function returned no tensors").
			Suggest("return a p.Tensor or a tuple/list of them")
	}
	gb, err := newGraphBuild(name, inputs)
	if err != nil {
		return nil, err
	}
	tr := &Trace{name: name}
	for _, in := range inputs {
		tr.inputs = append(tr.inputs, in.typ)
	}
	inputIndex := map[*Tensor]int{}
	for i, in := range inputs {
		inputIndex[in] = i
	}
	graphOut := map[*Tensor]int{}
	nGraph := 0
	for i, out := range outputs {
		if out == nil {
			return nil, core.Errorf(core.ValueError, "output %d is missing (nil tensor)", i)
		}
		src := outSource{typ: out.typ, graph: -1, input: -1}
		k, data, o := out.state()
		switch {
		case k == placeholder:
			j, ok := inputIndex[out]
			if !ok {
				return nil, core.Errorf(core.ValueError, "output %d is a placeholder that is not an input of this trace", i)
			}
			src.input = j
		case k == concrete:
			src.data = data
			if src.keep = out.Keep(); src.keep != nil {
				tr.keeps = append(tr.keeps, src.keep)
			}
		default:
			if j, seen := graphOut[out]; seen {
				src.graph = j
				break
			}
			v, err := gb.value(out)
			if err != nil {
				return nil, err
			}
			gb.b.Output(v)
			src.graph = nGraph
			graphOut[out] = nGraph
			nGraph++
			if tr.firstLoc.IsZero() {
				tr.firstLoc = o.loc
			}
		}
		tr.outs = append(tr.outs, src)
	}
	tr.bound = gb.bound
	tr.keeps = append(tr.keeps, gb.keeps...)
	for _, t := range gb.boundT {
		tr.boundT = append(tr.boundT, t.typ)
	}
	if nGraph == 0 {
		return tr, nil
	}
	tr.graph = gb.b.Graph()
	if syms := core.GraphSymbols(tr.graph); len(syms) > 0 {
		tr.symbolic = true
		if err := checkBindable(tr.graph, syms); err != nil {
			return nil, err
		}
		if tr.cons, err = core.GraphConstraints(tr.graph); err != nil {
			return nil, withLoc(err, tr.firstLoc)
		}
	}
	return tr, nil
}

// checkBindable refuses a symbolic graph with a symbol that no input's shape has: no
// run could give it a value.
func checkBindable(g *core.Graph, syms []string) error {
	have := map[string]bool{}
	for _, p := range g.Params {
		for _, s := range g.Nodes[p].Type.Symbols() {
			have[s] = true
		}
	}
	for _, s := range syms {
		if !have[s] {
			return core.Errorf(core.ShapeError, "symbol %s appears in the traced program but in no input's shape, so no run can give it a value", s).
				Suggest("use only symbols that size some input of the compiled function")
		}
	}
	return nil
}

// IsSymbolic reports whether the traced graph has symbolic shapes.
func (t *Trace) IsSymbolic() bool { return t.symbolic }

// Graph is the traced Tensor Graph (nil when nothing is computed). Callers must not
// change it.
func (t *Trace) Graph() *core.Graph { return t.graph }

// GraphText is the text form of the traced Tensor Graph ("" when nothing is computed).
func (t *Trace) GraphText() string {
	if t.graph == nil {
		return ""
	}
	return core.Format(t.graph)
}

// Constraints are what a run's binding must satisfy (none for a concrete trace).
func (t *Trace) Constraints() []core.Constraint { return t.cons }

// InputTypes are the types a run takes.
func (t *Trace) InputTypes() []core.TensorType { return t.inputs }

// NumOutputs is the number of tensors a run returns.
func (t *Trace) NumOutputs() int { return len(t.outs) }

// Constant is a copy of the i-th tensor the trace captured (the graph's param %c<i>),
// as a concrete tensor: what a pass that rewrites the graph needs to re-split it.
func (t *Trace) Constant(i int) (*Tensor, error) {
	if i < 0 || i >= len(t.bound) {
		return nil, core.Errorf(core.ValueError, "the trace captured %d tensors, so it has no constant %d", len(t.bound), i)
	}
	return &Tensor{typ: t.boundT[i].Clone(), kind: concrete, data: append([]byte(nil), t.bound[i]...)}, nil
}

// NumInputs is the number of placeholders the trace takes (the graph's first params).
func (t *Trace) NumInputs() int { return len(t.inputs) }
