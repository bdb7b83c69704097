package session

import (
	"sync"

	"pypto/core"
)

// Executor is a traced function compiled once: its params are placeholders, and the
// concrete tensors the trace captured are bound as extra params to their data.
type Executor struct {
	s      *Session
	inputs []core.TensorType
	prog   Program // nil when no output needs computing
	bound  [][]byte
	outs   []outSource
	device string

	mu      sync.Mutex // guards last, hasLast
	last    Stats
	hasLast bool
}

// outSource says where one result of the executor comes from.
type outSource struct {
	typ   core.TensorType
	graph int    // index among the graph outputs, or -1
	input int    // index of the input returned as is, or -1
	data  []byte // a captured constant returned as is
}

// NewExecutor compiles the computation from inputs (placeholders from NewPlaceholder)
// to outputs for the current device.
func (s *Session) NewExecutor(name string, inputs []*Tensor, outputs []*Tensor) (*Executor, error) {
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
	ex := &Executor{s: s, device: s.Device()}
	for _, in := range inputs {
		ex.inputs = append(ex.inputs, in.typ)
	}
	inputIndex := map[*Tensor]int{}
	for i, in := range inputs {
		inputIndex[in] = i
	}
	graphOut := map[*Tensor]int{}
	nGraph := 0
	var firstLoc core.Location
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
			if firstLoc.IsZero() {
				firstLoc = o.loc
			}
		}
		ex.outs = append(ex.outs, src)
	}
	ex.bound = gb.bound
	if nGraph > 0 {
		prog, err := s.compile(gb.b.Graph())
		if err != nil {
			return nil, withLoc(err, firstLoc)
		}
		ex.prog = prog
	}
	return ex, nil
}

// InputTypes are the types Run expects.
func (e *Executor) InputTypes() []core.TensorType { return e.inputs }

// NumOutputs is the number of tensors Run returns.
func (e *Executor) NumOutputs() int { return len(e.outs) }

// Device is the device preset the executor was compiled for.
func (e *Executor) Device() string { return e.device }

// Dump is the compiler's text of every graph level and the PTO programs.
func (e *Executor) Dump() string {
	if e.prog == nil {
		return "(nothing to compute: every output is an input or a constant)\n"
	}
	return e.prog.Dump()
}

// LastStats returns the statistics of this executor's most recent run.
func (e *Executor) LastStats() (Stats, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last, e.hasLast
}

// Run executes the compiled program on inputs (realising pending ones first) and
// returns new concrete tensors.
func (e *Executor) Run(inputs []*Tensor) ([]*Tensor, error) {
	if len(inputs) != len(e.inputs) {
		return nil, core.Errorf(core.ValueError, "executor takes %d inputs, got %d", len(e.inputs), len(inputs))
	}
	bufs := make([][]byte, 0, len(inputs)+len(e.bound))
	for i, in := range inputs {
		if in == nil {
			return nil, core.Errorf(core.ValueError, "input %d is missing (nil tensor)", i)
		}
		want := e.inputs[i]
		if in.typ.DType != want.DType {
			return nil, core.Errorf(core.DTypeError, "input %d has dtype %s, the executor was compiled for %s", i, in.typ.DType.LongName(), want.DType.LongName())
		}
		if !in.typ.Shape.Equal(want.Shape) {
			return nil, core.Errorf(core.ShapeError, "input %d has shape %v, the executor was compiled for %v", i, in.typ.Shape, want.Shape)
		}
		if err := e.s.Realize(in); err != nil {
			return nil, err
		}
		bufs = append(bufs, in.Data())
	}
	bufs = append(bufs, e.bound...)
	var results [][]byte
	if e.prog != nil {
		outs, st, err := e.prog.Run(bufs)
		if err != nil {
			return nil, AsError(core.DeviceError, err)
		}
		results = outs
		e.mu.Lock()
		e.last, e.hasLast = st, true
		e.mu.Unlock()
		e.s.recordStats(st)
	}
	out := make([]*Tensor, len(e.outs))
	for i, src := range e.outs {
		var data []byte
		switch {
		case src.graph >= 0:
			if src.graph >= len(results) || len(results[src.graph]) != src.typ.Bytes() {
				return nil, core.Errorf(core.InternalError, "program returned %d outputs; output %d should be %v", len(results), src.graph, src.typ)
			}
			data = results[src.graph]
		case src.input >= 0:
			data = bufs[src.input]
		default:
			data = src.data
		}
		// Buffers are never written after creation, so results may share them.
		out[i] = &Tensor{typ: cloneType(src.typ), kind: concrete, data: data}
	}
	return out, nil
}
