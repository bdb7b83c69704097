package session

import (
	"sync"

	"pypto/core"
	"pypto/internal/interrupt"
	"pypto/lower"
)

// Executor is a traced function compiled for one device: its params are placeholders,
// and the concrete tensors the trace captured are bound as extra params to their data.
//
// A trace over symbolic placeholders gives a symbolic Tensor Graph, which the compiler
// cannot take: the executor keeps it with the constraints its ops need, and each Run
// binds the symbols from the inputs' shapes, checks the constraints, and specialises
// the graph to concrete shapes, compiling it once per binding (see specializations).
type Executor struct {
	s      *Session
	inputs []core.TensorType
	graph  *core.Graph // what the trace built; nil when no output needs computing
	cons   []core.Constraint
	prog   Program // the compiled graph when it is concrete
	bound  [][]byte
	boundT []core.TensorType
	keeps  []*External // owners of the external memory among bound and outs
	outs   []outSource
	device string
	cfg    Config
	specs  *specializations
	// buckets, when not nil, serves the symbolic graph with one program per bucket of
	// sizes (buckets.go); noBuckets says why a symbolic executor has none.
	buckets   *bucketing
	noBuckets string

	mu          sync.Mutex // guards last, hasLast, lastProfile
	last        Stats
	hasLast     bool
	lastProfile *Profile
}

// outSource says where one result of the executor comes from.
type outSource struct {
	typ   core.TensorType // symbolic when the executor is
	graph int             // index among the graph outputs, or -1
	input int             // index of the input returned as is, or -1
	data  []byte          // a captured constant returned as is
	keep  *External       // data's owner when it is external memory
}

// NewExecutor compiles the computation from inputs (placeholders from NewPlaceholder)
// to outputs for the current device; a symbolic one is compiled per binding by Run.
func (s *Session) NewExecutor(name string, inputs []*Tensor, outputs []*Tensor) (*Executor, error) {
	return s.NewExecutorWith(name, inputs, outputs, Config{})
}

// NewExecutorWith is NewExecutor with the compile options cfg chooses; cfg.Device,
// when set, replaces the session's current device.
func (s *Session) NewExecutorWith(name string, inputs []*Tensor, outputs []*Tensor, cfg Config) (*Executor, error) {
	if name == "" {
		name = "main"
	}
	cfg, err := s.CheckConfig(cfg)
	if err != nil {
		return nil, err
	}
	device := s.Device()
	if cfg.Device != "" {
		device = cfg.Device
	}
	if len(outputs) == 0 {
		return nil, core.Errorf(core.ValueError, "the traced function returned no tensors").
			Suggest("return a p.Tensor or a tuple/list of them")
	}
	gb, err := newGraphBuild(name, inputs)
	if err != nil {
		return nil, err
	}
	ex := &Executor{s: s, device: device, cfg: cfg, specs: newSpecializations(maxSpecializations)}
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
			if src.keep = out.Keep(); src.keep != nil {
				ex.keeps = append(ex.keeps, src.keep)
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
			if firstLoc.IsZero() {
				firstLoc = o.loc
			}
		}
		ex.outs = append(ex.outs, src)
	}
	ex.bound = gb.bound
	ex.keeps = append(ex.keeps, gb.keeps...)
	for _, t := range gb.boundT {
		ex.boundT = append(ex.boundT, t.typ)
	}
	if nGraph == 0 {
		return ex, nil
	}
	ex.graph = gb.b.Graph()
	if syms := core.GraphSymbols(ex.graph); len(syms) > 0 {
		if err := checkBindable(ex.graph, syms); err != nil {
			return nil, err
		}
		if ex.cons, err = core.GraphConstraints(ex.graph); err != nil {
			return nil, withLoc(err, firstLoc)
		}
		ex.buckets, ex.noBuckets = s.bucketingFor(ex.graph, syms, ex.cons, device, cfg)
		return ex, nil
	}
	prog, err := s.compileOn(ex.graph, device, cfg)
	if err != nil {
		return nil, withLoc(err, firstLoc)
	}
	ex.prog = prog
	return ex, nil
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

// IsSymbolic reports whether the executor was traced with symbolic shapes.
func (e *Executor) IsSymbolic() bool { return e.graph != nil && e.prog == nil }

// GraphText is the text form of the traced Tensor Graph ("" when nothing is computed).
func (e *Executor) GraphText() string {
	if e.graph == nil {
		return ""
	}
	return core.Format(e.graph)
}

// Constraints are what a run's binding must satisfy (none for a concrete executor).
func (e *Executor) Constraints() []core.Constraint { return e.cons }

// NumCompiled is the number of programs the executor holds: 1 for a concrete one, the
// number of specialisations for a symbolic one.
func (e *Executor) NumCompiled() int {
	if e.prog != nil {
		return 1
	}
	return e.specs.len()
}

// InputTypes are the types Run expects.
func (e *Executor) InputTypes() []core.TensorType { return e.inputs }

// NumOutputs is the number of tensors Run returns.
func (e *Executor) NumOutputs() int { return len(e.outs) }

// Device is the device preset the executor was compiled for.
func (e *Executor) Device() string { return e.device }

// Dump is the compiler's text of every graph level and the PTO programs; for a
// symbolic executor, those of the most recent specialisation (or the symbolic Tensor
// Graph before the first run).
func (e *Executor) Dump() string {
	switch {
	case e.graph == nil:
		return "(nothing to compute: every output is an input or a constant)\n"
	case e.prog != nil:
		return e.prog.Dump()
	}
	if sp := e.specs.latest(); sp != nil {
		return "specialised for " + sp.binding.Key() + ":\n" + sp.prog.Dump()
	}
	return "symbolic Tensor Graph (specialised for each binding of its symbols when it runs):\n" + core.Format(e.graph)
}

// Config is the compile options the executor was made with.
func (e *Executor) Config() Config { return e.cfg }

// LayoutConversions lists the layout conversions the executor's program (its most
// recent specialisation when it is symbolic) keeps; nil when there is none yet, or on
// the reference device.
func (e *Executor) LayoutConversions() []lower.LayoutConversion {
	prog := e.prog
	if prog == nil {
		if sp := e.specs.latest(); sp != nil {
			prog = sp.prog
		}
	}
	if lr, ok := prog.(layoutReporter); ok {
		return lr.LayoutConversions()
	}
	return nil
}

// MemoryPlan is the device memory plan of the executor's program (of its most recent
// specialisation when it is symbolic); false when there is none yet, or on the
// reference device.
func (e *Executor) MemoryPlan() (lower.MemoryPlan, bool) {
	prog := e.prog
	if prog == nil {
		if sp := e.specs.latest(); sp != nil {
			prog = sp.prog
		}
	}
	if mp, ok := prog.(memoryPlanner); ok {
		return mp.MemoryPlan()
	}
	return lower.MemoryPlan{}, false
}

// LastStats returns the statistics of this executor's most recent run.
func (e *Executor) LastStats() (Stats, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last, e.hasLast
}

// Run executes the program on inputs (realising pending ones first) and returns new
// concrete tensors. A symbolic executor first binds its symbols from the inputs' shapes,
// checks its constraints and specialises (once per binding).
func (e *Executor) Run(inputs []*Tensor) ([]*Tensor, error) {
	out, _, err := e.run(inputs, false)
	return out, err
}

// run is Run, with every instruction traced and a profile made when profile is set.
func (e *Executor) run(inputs []*Tensor, profile bool) ([]*Tensor, *Profile, error) {
	stop := interrupt.Current() // Ctrl-C from now on, compilation included, stops the run
	if len(inputs) != len(e.inputs) {
		return nil, nil, core.Errorf(core.ValueError, "executor takes %d inputs, got %d", len(e.inputs), len(inputs))
	}
	bufs := make([][]byte, 0, len(inputs)+len(e.bound))
	shapes := make([]core.Shape, 0, len(inputs)+len(e.bound))
	keeps := e.keeps[:len(e.keeps):len(e.keeps)] // appends copy: runs may be concurrent
	for i, in := range inputs {
		if in == nil {
			return nil, nil, core.Errorf(core.ValueError, "input %d is missing (nil tensor)", i)
		}
		if err := checkInput(i, in.typ, e.inputs[i]); err != nil {
			return nil, nil, err
		}
		if err := e.s.Realize(in); err != nil {
			return nil, nil, err
		}
		bufs = append(bufs, in.Data())
		if k := in.Keep(); k != nil {
			keeps = append(keeps, k)
		}
		shapes = append(shapes, in.typ.Shape)
	}
	bufs = append(bufs, e.bound...)
	for _, t := range e.boundT {
		shapes = append(shapes, t.Shape)
	}
	prog, binding, bound := e.prog, core.Binding(nil), core.Binding(nil)
	chosen := ""
	if e.graph != nil && prog == nil {
		var err error
		if binding, err = core.BindSymbols(e.graph, shapes); err != nil {
			return nil, nil, err
		}
		if err := core.CheckConstraints(e.cons, binding); err != nil {
			return nil, nil, err
		}
		if e.buckets != nil {
			if bound, err = e.buckets.bucket(binding); err != nil {
				return nil, nil, err
			}
			// Bounds that break a constraint (two symbols that must be equal
			// bucketed apart, a symbol that must be 8) run this binding exactly.
			if bound != nil && core.CheckConstraints(e.cons, bound) != nil {
				bound = nil
			}
		}
		if bound != nil {
			if prog, err = e.specializeBucket(bound); err != nil {
				return nil, nil, err
			}
			chosen = bucketName(bound)
			for i := range inputs {
				bufs[i] = padInput(bufs[i], inputs[i].typ, e.inputs[i].Substitute(bound))
			}
			bufs = append(bufs, padMasks(e.buckets.plan, binding, bound)...)
		} else {
			if prog, err = e.specialize(binding); err != nil {
				return nil, nil, err
			}
			chosen = binding.Key()
		}
	}
	var results [][]byte
	var prof *Profile
	if prog != nil {
		var st Stats
		var err error
		if pr, ok := prog.(profiler); ok && profile {
			results, st, prof, err = runProfiled(pr, bufs, stop)
		} else {
			results, st, err = runProgram(prog, bufs, stop)
		}
		if err != nil {
			return nil, nil, err
		}
		st.Program = chosen
		e.mu.Lock()
		e.last, e.hasLast = st, true
		if prof != nil {
			e.lastProfile = prof
		}
		e.mu.Unlock()
		e.s.recordStats(st)
	}
	out := make([]*Tensor, len(e.outs))
	for i, src := range e.outs {
		typ := src.typ.Substitute(binding)
		var data []byte
		switch {
		case src.graph >= 0:
			want := typ
			if bound != nil {
				want = src.typ.Substitute(bound)
			}
			if src.graph >= len(results) || len(results[src.graph]) != want.Bytes() {
				return nil, nil, core.Errorf(core.InternalError, "program returned %d outputs; output %d should be %v", len(results), src.graph, want)
			}
			data = cutOutput(results[src.graph], want, typ)
		case src.input >= 0:
			data = bufs[src.input]
			typ = inputs[src.input].typ.Clone()
		default:
			data = src.data
		}
		// Buffers are never written after creation, so results may share them (and
		// then the owner of external memory among them).
		out[i] = &Tensor{typ: typ, kind: concrete, data: data, keep: keepOf(data, keeps)}
	}
	return out, prof, nil
}

// checkInput compares a run's input with the traced one: same dtype and rank, the same
// dims where the trace had constants, and the same layout unless the input is ND (the
// data of every layout is row-major over its shape, so an untagged input is taken as
// it is).
func checkInput(i int, got, want core.TensorType) error {
	if got.DType != want.DType {
		return core.Errorf(core.DTypeError, "input %d has dtype %s, the executor was compiled for %s", i, got.DType.LongName(), want.DType.LongName())
	}
	if got.IsSymbolic() {
		return core.Errorf(core.ValueError, "input %d has the symbolic shape %s; a run needs data", i, got.ShapeString())
	}
	if !want.IsSymbolic() && !got.Shape.Equal(want.Shape) {
		return core.Errorf(core.ShapeError, "input %d has shape %v, the executor was compiled for %v", i, got.Shape, want.Shape)
	}
	if !got.Layout.IsND() && got.Layout != want.Layout {
		return core.Errorf(core.ShapeError, "input %d has layout %s, the executor was traced for %s", i, got.Layout, want.Layout).
			Suggest("convert it first: p.layout_transform(x, p.%s)", want.Layout.Kind)
	}
	return nil
}

// specializeBucket returns the program of the bucket whose bounds are u, compiling it
// once: the graph padded to u with the masks of its padding plan.
func (e *Executor) specializeBucket(u core.Binding) (Program, error) {
	sp := e.specs.get(u)
	sp.once.Do(func() {
		g, err := e.buckets.plan.Specialize(u)
		if err != nil {
			sp.err = err
			return
		}
		sp.prog, sp.err = e.s.compileOn(g, e.device, e.cfg)
	})
	if sp.err != nil {
		e.specs.drop(sp)
		return nil, sp.err
	}
	e.specs.markLatest(sp)
	return sp.prog, nil
}

// bucketingFor returns the bucketing of a symbolic graph, or nil and why it has none:
// the config asks for a program per size, the device has no timing model to size
// buckets with, or the graph cannot run padded.
func (s *Session) bucketingFor(g *core.Graph, syms []string, cons []core.Constraint, device string, cfg Config) (*bucketing, string) {
	if cfg.PerSizePrograms {
		return nil, "the config asks for a program per size (per_size_programs)"
	}
	if _, ok := s.compiler.(estimator); !ok || isReference(device) {
		return nil, "the device has no timing model to size buckets with"
	}
	plan, err := core.PlanPadding(g, syms)
	if err != nil {
		return nil, err.Error()
	}
	return newBucketing(g, plan, func(b core.Binding) (float64, error) {
		if err := core.CheckConstraints(cons, b); err != nil {
			return 0, core.Errorf(core.ValueError, "symbols tied by the constraints cannot be bucketed apart (%v)", err)
		}
		pg, err := plan.Specialize(b)
		if err != nil {
			return 0, err
		}
		ms, _, err := estimateWith(s.compiler, pg, device, cfg)
		return ms, err
	}), ""
}

// specialize returns the program of the graph specialised for b, compiling it once.
func (e *Executor) specialize(b core.Binding) (Program, error) {
	sp := e.specs.get(b)
	sp.once.Do(func() {
		g, err := core.Specialize(e.graph, b)
		if err != nil {
			sp.err = err
			return
		}
		sp.prog, sp.err = e.s.compileOn(g, e.device, e.cfg)
	})
	if sp.err != nil {
		e.specs.drop(sp) // errors carry the location of the run that hit them: not cached
		return nil, sp.err
	}
	e.specs.markLatest(sp)
	return sp.prog, nil
}
