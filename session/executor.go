package session

import (
	"sync"
	"time"

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
//
// Run may be called from several goroutines at once: programs are immutable, GM images
// are per run, and each run's report is returned to its caller (RunReport).
type Executor struct {
	*Trace
	s      *Session
	prog   Program // the compiled graph when it is concrete
	device string
	cfg    Config
	pool   *MemoryPool // lends every run's device memory; nil: the program's own images
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

// NewExecutor compiles the computation from inputs (placeholders from NewPlaceholder)
// to outputs for the current device; a symbolic one is compiled per binding by Run.
func (s *Session) NewExecutor(name string, inputs []*Tensor, outputs []*Tensor) (*Executor, error) {
	return s.NewExecutorWith(name, inputs, outputs, Config{})
}

// NewExecutorWith is NewExecutor with the compile options cfg chooses; cfg.Device,
// when set, replaces the session's current device.
func (s *Session) NewExecutorWith(name string, inputs []*Tensor, outputs []*Tensor, cfg Config) (*Executor, error) {
	cfg, err := s.CheckConfig(cfg)
	if err != nil {
		return nil, err
	}
	tr, err := NewTrace(name, inputs, outputs)
	if err != nil {
		return nil, err
	}
	return s.CompileTrace(tr, cfg, nil)
}

// CompileTrace makes an executor of a trace: a concrete trace is compiled now, a symbolic
// one per binding when it runs. With a pool, cfg.MemoryPoolBytes becomes the pool's
// size (a program that needs more is a compile error) and every run's device memory
// is lent by the pool.
func (s *Session) CompileTrace(tr *Trace, cfg Config, pool *MemoryPool) (*Executor, error) {
	if pool != nil {
		cfg.MemoryPoolBytes = pool.Size()
	}
	cfg, err := s.CheckConfig(cfg)
	if err != nil {
		return nil, err
	}
	device := s.Device()
	if cfg.Device != "" {
		device = cfg.Device
	}
	cfg.weights = nil
	for i := range tr.bound { // the captured tensors follow the inputs
		cfg.weights = append(cfg.weights, len(tr.inputs)+i)
	}
	ex := &Executor{Trace: tr, s: s, device: device, cfg: cfg, pool: pool, specs: newSpecializations(maxSpecializations)}
	if tr.graph == nil {
		return ex, nil
	}
	if tr.IsSymbolic() {
		ex.buckets, ex.noBuckets = s.bucketingFor(tr.graph, core.GraphSymbols(tr.graph), tr.cons, device, cfg)
		return ex, nil
	}
	prog, err := s.compileOn(tr.graph, device, cfg)
	if err != nil {
		return nil, withLoc(err, tr.firstLoc)
	}
	ex.prog = prog
	return ex, nil
}

// IsSymbolic reports whether the executor was traced with symbolic shapes.
func (e *Executor) IsSymbolic() bool { return e.graph != nil && e.prog == nil }

// NumCompiled is the number of programs the executor holds: 1 for a concrete one, the
// number of specialisations for a symbolic one.
func (e *Executor) NumCompiled() int {
	if e.prog != nil {
		return 1
	}
	return e.specs.len()
}

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

// latestProgram is the executor's program: the concrete one, or a symbolic executor's
// most recent specialisation (nil before its first run).
func (e *Executor) latestProgram() Program {
	if e.prog != nil {
		return e.prog
	}
	if sp := e.specs.latest(); sp != nil {
		return sp.prog
	}
	return nil
}

// Config is the compile options the executor was made with.
func (e *Executor) Config() Config { return e.cfg }

// LayoutConversions lists the layout conversions the executor's program (its most
// recent specialisation when it is symbolic) keeps; nil when there is none yet, or on
// the reference device.
func (e *Executor) LayoutConversions() []lower.LayoutConversion {
	prog := e.latestProgram()
	if lr, ok := baseProgram(prog).(layoutReporter); ok {
		return lr.LayoutConversions()
	}
	return nil
}

// UpdateCopies lists the slice_updates of the executor's program (of its most recent
// specialisation) that copy their tensor first instead of writing it in place.
func (e *Executor) UpdateCopies() []lower.UpdateCopy {
	prog := e.latestProgram()
	if ur, ok := prog.(interface{ UpdateCopies() []lower.UpdateCopy }); ok {
		return ur.UpdateCopies()
	}
	return []lower.UpdateCopy{}
}

// MemoryPlan is the device memory plan of the executor's program (of its most recent
// specialisation when it is symbolic); false when there is none yet, or on the
// reference device.
func (e *Executor) MemoryPlan() (lower.MemoryPlan, bool) {
	prog := e.latestProgram()
	if mp, ok := baseProgram(prog).(memoryPlanner); ok {
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

// RunReport describes one run of an executor, for its caller alone (runs from several
// goroutines each get their own).
type RunReport struct {
	// Program names the compiled program that ran: the trace's name, followed for a
	// symbolic executor by its bucket ("f[seq<=128]") or its binding ("f[seq=100]").
	Program string `json:"program"`
	// Cycles, Seconds, KernelCycles, KernelSeconds and Tasks are the run's simulated
	// statistics (Stats); Memory is the program's device memory plan.
	Cycles        int64   `json:"cycles"`
	Seconds       float64 `json:"seconds"`
	KernelCycles  int64   `json:"kernel_cycles"`
	KernelSeconds float64 `json:"kernel_seconds"`
	Tasks         int     `json:"tasks"`
	PreparedTasks int     `json:"prepared_tasks"` // skipped: weights prepared by an earlier run
	// TimingCachedTasks ran with their times from the device's timing cache.
	TimingCachedTasks int               `json:"timing_cached_tasks"`
	Memory            *lower.MemoryPlan `json:"memory"`
	// HostSeconds is the wall time of the whole call on the host: binding, compiling
	// when the run needed a new program, waiting for the pool, simulating, copying.
	HostSeconds float64 `json:"host_seconds"`
	// Pool is the memory pool's state after the run (nil without a pool).
	Pool *PoolStats `json:"pool"`
	// Simulated is false when nothing ran on the device (every output an input or a
	// constant).
	Simulated bool `json:"simulated"`
}

// Run executes the program on inputs (realising pending ones first) and returns new
// concrete tensors. A symbolic executor first binds its symbols from the inputs' shapes,
// checks its constraints and specialises (once per binding).
func (e *Executor) Run(inputs []*Tensor) ([]*Tensor, error) {
	out, _, _, err := e.run(inputs, false)
	return out, err
}

// programName names the program a run used (RunReport.Program): the trace's name,
// followed for a symbolic executor by what chose the program, the bucket
// ("f[seq<=128]") or the binding ("f[seq=100]").
func (e *Executor) programName(chosen string) string {
	if chosen == "" {
		return e.name
	}
	return e.name + "[" + chosen + "]"
}

// RunReport is Run, also returning the run's report; with profile set every
// instruction is traced and the profile kept (LastProfile).
func (e *Executor) RunReport(inputs []*Tensor, profile bool) ([]*Tensor, RunReport, error) {
	start := time.Now()
	out, rep, _, err := e.run(inputs, profile)
	rep.HostSeconds = time.Since(start).Seconds()
	if e.pool != nil {
		ps := e.pool.Stats()
		rep.Pool = &ps
	}
	return out, rep, err
}

// run is Run with its report, with every instruction traced and a profile made when
// profile is set (in the pool's memory too, when the executor has a pool).
func (e *Executor) run(inputs []*Tensor, profile bool) ([]*Tensor, RunReport, *Profile, error) {
	var rep RunReport
	stop := interrupt.Current() // Ctrl-C from now on, compilation included, stops the run
	if len(inputs) != len(e.inputs) {
		return nil, rep, nil, core.Errorf(core.ValueError, "executor takes %d inputs, got %d", len(e.inputs), len(inputs))
	}
	bufs := make([][]byte, 0, len(inputs)+len(e.bound))
	shapes := make([]core.Shape, 0, len(inputs)+len(e.bound))
	keeps := e.keeps[:len(e.keeps):len(e.keeps)] // appends copy: runs may be concurrent
	for i, in := range inputs {
		if in == nil {
			return nil, rep, nil, core.Errorf(core.ValueError, "input %d is missing (nil tensor)", i)
		}
		if err := checkInput(i, in.typ, e.inputs[i]); err != nil {
			return nil, rep, nil, err
		}
		if err := e.s.Realize(in); err != nil {
			return nil, rep, nil, err
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
			return nil, rep, nil, err
		}
		if err := core.CheckConstraints(e.cons, binding); err != nil {
			return nil, rep, nil, err
		}
		if e.buckets != nil {
			if bound, err = e.buckets.bucket(binding); err != nil {
				return nil, rep, nil, err
			}
			// Bounds that break a constraint (two symbols that must be equal
			// bucketed apart, a symbol that must be 8) run this binding exactly.
			if bound != nil && core.CheckConstraints(e.cons, bound) != nil {
				bound = nil
			}
		}
		if bound != nil {
			if prog, err = e.specializeBucket(bound); err != nil {
				return nil, rep, nil, err
			}
			chosen = bucketName(bound)
			for i := range inputs {
				bufs[i] = padInput(bufs[i], inputs[i].typ, e.inputs[i].Substitute(bound))
			}
			bufs = append(bufs, padParams(e.buckets.plan, binding, bound)...)
		} else {
			if prog, err = e.specialize(binding); err != nil {
				return nil, rep, nil, err
			}
			chosen = binding.Key()
		}
	}
	rep.Program = e.programName(chosen)
	var results [][]byte
	var prof *Profile
	if prog != nil {
		var st Stats
		var err error
		if _, ok := baseProgram(prog).(profiler); ok && profile {
			results, st, prof, err = runProfiled(prog, e.pool, bufs, stop)
		} else {
			results, st, err = runProgramIn(prog, e.pool, bufs, stop)
		}
		if err != nil {
			return nil, rep, nil, err
		}
		rep = RunReport{Program: e.programName(chosen), Cycles: st.Cycles, Seconds: st.Seconds, KernelCycles: st.KernelCycles,
			KernelSeconds: st.KernelSeconds, Tasks: st.Tasks, PreparedTasks: st.PreparedTasks,
			TimingCachedTasks: st.TimingCachedTasks, Memory: st.Memory, Simulated: true}
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
				return nil, rep, nil, core.Errorf(core.InternalError, "program returned %d outputs; output %d should be %v", len(results), src.graph, want)
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
	return out, rep, prof, nil
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
		cfg := e.cfg
		cfg.dynamic = dynamicSizes(e.buckets.plan)
		sp.prog, sp.err = e.s.compileOn(g, e.device, cfg)
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
	cfg.dynamic = dynamicSizes(plan)
	return newBucketing(g, plan, func(bound, run core.Binding) (float64, error) {
		if err := core.CheckConstraints(cons, bound); err != nil {
			return 0, core.Errorf(core.ValueError, "symbols tied by the constraints cannot be bucketed apart (%v)", err)
		}
		pg, err := plan.Specialize(bound)
		if err != nil {
			return 0, err
		}
		ms, _, err := estimateWith(s.compiler, pg, device, cfg, plan.SizesOf(run))
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
