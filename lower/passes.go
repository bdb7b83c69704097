package lower

import (
	"fmt"
	"strings"
	"time"

	"pypto/core"
	"pypto/device"
	"pypto/internal/progress"
)

// Level names the IR a pass leaves behind; the driver verifies that level after it.
type Level string

const (
	LevelTensor  Level = "tensor"
	LevelTile    Level = "tile"
	LevelBlock   Level = "block"
	LevelExec    Level = "exec"
	LevelMachine Level = "machine"
)

// Pass is one row of the pass table.
type Pass struct {
	Name     string
	Required bool // required passes cannot be disabled and run at every OptLevel
	// MinLevel is the lowest OptLevel at which an optional pass runs.
	MinLevel OptLevel
	Produces Level    // the IR level current after the pass
	After    []string // passes that must come earlier in the table
	// Reassociates marks an optional pass whose program adds (or rounds) in another
	// order than the program without it, so its results differ in the last bits;
	// Options.Deterministic switches it off.
	Reassociates bool
	Run          func(*compilation) error
}

// passTable is the compiler, in order. Adding a pass is adding a row.
var passTable = []Pass{
	{Name: "verify-tensor", Required: true, Produces: LevelTensor, Run: runVerifyTensor},
	{Name: "infer-layouts", MinLevel: O1, Produces: LevelTensor, After: []string{"verify-tensor"}, Run: runInferLayouts},
	{Name: "fuse-attention", MinLevel: O2, Reassociates: true, Produces: LevelTensor, After: []string{"verify-tensor"}, Run: runFuseAttention},
	{Name: "fold-batch-norm", MinLevel: O2, Reassociates: true, Produces: LevelTensor, After: []string{"verify-tensor"}, Run: runFoldBatchNorm},
	{Name: "conv-to-cube", MinLevel: O2, Reassociates: true, Produces: LevelTensor, After: []string{"fold-batch-norm"}, Run: runConvToCube},
	{Name: "decompose", Required: true, Produces: LevelTensor, After: []string{"verify-tensor"}, Run: runDecompose},
	{Name: "expand-arg-reductions", Required: true, Produces: LevelTensor, After: []string{"decompose"}, Run: runExpandArgReductions},
	{Name: "expand-pad", Required: true, Produces: LevelTensor, After: []string{"decompose"}, Run: runExpandPad},
	{Name: "sort-last-axis", Required: true, Produces: LevelTensor, After: []string{"decompose"}, Run: runSortLastAxis},
	{Name: "split-reductions", Required: true, Produces: LevelTensor, After: []string{"expand-arg-reductions"}, Run: runSplitReductions},
	{Name: "fold-constants", MinLevel: O1, Produces: LevelTensor, After: []string{"split-reductions", "sort-last-axis", "expand-pad", "expand-arg-reductions"}, Run: runFoldConstants},
	{Name: "simplify", MinLevel: O1, Produces: LevelTensor, After: []string{"fold-constants"}, Run: runSimplify},
	{Name: "cse", MinLevel: O1, Produces: LevelTensor, After: []string{"simplify"}, Run: runCSE},
	{Name: "dce", MinLevel: O1, Produces: LevelTensor, After: []string{"cse"}, Run: runDCE},
	{Name: "split-constants", MinLevel: O2, Produces: LevelTensor, After: []string{"dce"}, Run: runSplitConstants},
	{Name: "sink-reshapes", MinLevel: O2, Produces: LevelTensor, After: []string{"dce"}, Run: runSinkReshapes},
	{Name: "fuse-projections", MinLevel: O2, Produces: LevelTensor, After: []string{"dce"}, Run: runFuseProjections},
	{Name: "fuse-rows", MinLevel: O2, Reassociates: true, Produces: LevelTensor, After: []string{"split-reductions", "sort-last-axis", "expand-pad", "expand-arg-reductions", "dce", "split-constants"}, Run: runFuseRows},
	{Name: "fuse-elementwise", MinLevel: O2, Produces: LevelTensor, After: []string{"split-reductions", "sort-last-axis", "expand-pad", "expand-arg-reductions", "dce", "fuse-rows"}, Run: runFuseElementwise},
	{Name: "fuse-epilogue", MinLevel: O2, Produces: LevelTensor, After: []string{"fuse-elementwise"}, Run: runFuseEpilogue},
	{Name: "fuse-conv-epilogue", MinLevel: O2, Produces: LevelTensor, After: []string{"fuse-elementwise", "conv-to-cube"}, Run: runFuseConvEpilogue},
	{Name: "bind-constants", Required: true, Produces: LevelTensor, After: []string{"dce"}, Run: runBindConstants},
	{Name: "fold-attention-transpose", MinLevel: O2, Produces: LevelTensor, After: []string{"fuse-attention"}, Run: runFoldAttentionTranspose},
	{Name: "fold-views", MinLevel: O2, Produces: LevelTensor, After: []string{"fuse-epilogue"}, Run: runFoldViews},
	{Name: "tile", Required: true, Produces: LevelTile, After: []string{"split-reductions"}, Run: runTile},
	{Name: "search-tiles", MinLevel: O1, Produces: LevelTile, After: []string{"tile"}, Run: runSearchTiles},
	{Name: "dynamic-sizes", MinLevel: O1, Produces: LevelTile, After: []string{"search-tiles"}, Run: runDynamicSizes},
	{Name: "prepare-weights", MinLevel: O1, Produces: LevelTile, After: []string{"dynamic-sizes"}, Run: runPrepareWeights},
	{Name: "assign-cores", Required: true, Produces: LevelBlock, After: []string{"tile"}, Run: runAssignCores},
	{Name: "plan-exec", Required: true, Produces: LevelExec, After: []string{"assign-cores"}, Run: runPlanExec},
	{Name: "check-memory-pool", Required: true, Produces: LevelExec, After: []string{"plan-exec"}, Run: runCheckMemoryPool},
	{Name: "backend", Required: true, Produces: LevelMachine, After: []string{"plan-exec"}, Run: runBackend},
}

// checkPassTable verifies the declared ordering constraints and that names are unique.
func checkPassTable(table []Pass) error {
	pos := map[string]int{}
	for i, p := range table {
		if _, dup := pos[p.Name]; dup {
			return fmt.Errorf("pass table: %q appears twice", p.Name)
		}
		pos[p.Name] = i
	}
	for i, p := range table {
		if p.Required != (p.MinLevel == 0) || p.MinLevel > O3 {
			return fmt.Errorf("pass table: %q: an optional pass names the lowest level it runs at (MinLevel O1 to O3, as O0 runs none), a required one none", p.Name)
		}
		for _, a := range p.After {
			j, ok := pos[a]
			if !ok {
				return fmt.Errorf("pass table: %q must run after unknown pass %q", p.Name, a)
			}
			if j >= i {
				return fmt.Errorf("pass table: %q must run after %q, but comes before it", p.Name, a)
			}
		}
	}
	return nil
}

// PassTiming records how long one pass took.
type PassTiming struct {
	Name     string
	Duration time.Duration
}

// compilation is the state the passes share.
type compilation struct {
	opts  Options
	chip  *device.Chip
	graph *core.Graph
	tile  *TileGraph
	block *BlockGraph
	exec  *ExecGraph
	times []PassTiming
	// constants holds the data of the params bind-constants added, in param order
	// after the caller's.
	constants [][]byte
	dumps     []string // "before/after" text of each level, when Options.Dump is set
	// layouts are the layout conversions the program keeps (see runInferLayouts).
	layouts []LayoutConversion
	// convLayouts are the conversions conv-to-cube made (reported with layouts).
	convLayouts []LayoutConversion
	// folds are the views matrix kernels read in place (see runFoldViews).
	folds map[core.Value]viewFold
	// With Options.Visualize: each pass's record and the Tensor Graph as the tile pass
	// found it (see visualize.go).
	records []passRecord
	lowered *core.Graph
	rec     recorder
}

// run is the one driver loop: run each enabled pass, time it, verify the IR it leaves
// and record a dump of it.
func (c *compilation) run(table []Pass) error {
	prog := progress.Start("compile", len(table))
	defer prog.End()
	for i, p := range table {
		if !p.runsAt(c.opts.OptLevel, c.opts.Disabled) || c.opts.Deterministic && p.Reassociates {
			continue
		}
		prog.Step(i, p.Name)
		if c.opts.Visualize {
			c.rec.before(c, p)
		}
		start := time.Now()
		if err := p.Run(c); err != nil {
			return err
		}
		c.times = append(c.times, PassTiming{Name: p.Name, Duration: time.Since(start)})
		if c.opts.Visualize {
			c.rec.after(c, p, c.times[len(c.times)-1].Duration)
		}
		if c.opts.Verify {
			if err := c.verify(p.Produces); err != nil {
				return core.Errorf(core.InternalError, "IR invalid after pass %s: %v", p.Name, err).
					Because("this is a compiler bug; please report it with the graph text")
			}
		}
		if c.opts.Dump {
			c.dumps = append(c.dumps, fmt.Sprintf("== after %s (%s) ==\n%s", p.Name, p.Produces, c.text(p.Produces, true)))
		}
		if p.Name == c.opts.StopAfter {
			return nil
		}
	}
	return nil
}

func (c *compilation) verify(l Level) error {
	switch l {
	case LevelTensor:
		return core.Verify(c.graph)
	case LevelTile:
		return c.tile.Verify()
	case LevelBlock:
		return c.block.Verify(c.chip.Cores)
	case LevelExec:
		return c.exec.Verify(c.chip)
	}
	return nil // machine programs are checked by the backend that builds them
}

// text is the text of level l: the text forms (the execution graph's with its tile and
// block graphs and programs when full, else its summary) and the machine programs'
// listings (when full, else a line per program).
func (c *compilation) text(l Level, full bool) string {
	switch l {
	case LevelTensor:
		return core.Format(c.graph)
	case LevelTile:
		return c.tile.Format()
	case LevelBlock:
		return c.block.Format()
	case LevelExec:
		return c.exec.Format(full)
	}
	var b strings.Builder
	for _, t := range c.exec.Tasks {
		for _, m := range t.Machine {
			if full {
				b.WriteString(m.String())
			} else {
				fmt.Fprintf(&b, "%s: machine %s core=%s instructions=%d\n", t.Name, m.Name, m.Core, len(m.Instrs))
			}
		}
	}
	return b.String()
}

// runVerifyTensor checks the input graph whatever Options.Verify says: everything
// after it relies on well-formed input.
func runVerifyTensor(c *compilation) error {
	if err := core.Verify(c.graph); err != nil {
		return core.Errorf(core.InternalError, "input graph is invalid: %v", err)
	}
	return checkDeviceSizes(c.chip, c.graph)
}

// runDecompose rewrites composite ops (softmax, layer_norm, mean, ...) into the
// primitives their registry entries give, so the later passes see only ops that have
// a lowering of their own.
func runDecompose(c *compilation) error {
	c.layouts = append(keptConversions(c.graph), c.convLayouts...) // the last level that still names them
	g, err := core.DecomposeGraph(c.graph)
	if err != nil {
		return err
	}
	c.graph = g
	return nil
}

func runTile(c *compilation) error {
	tg, err := buildTileGraph(c.graph, c.opts, c.folds)
	c.tile = tg
	return err
}

func runAssignCores(c *compilation) error {
	c.block = buildBlockGraph(c.tile, c.chip.Cores)
	return nil
}

func runPlanExec(c *compilation) error {
	eg, err := buildExecGraph(c.block, c.chip)
	c.exec = eg
	return err
}

// runBackend compiles every PTO program into a machine program for the chip. An op
// whose lowering needs an instruction the simulator lacks is reported as such, at the
// user's line, before any program is compiled.
func runBackend(c *compilation) error {
	for _, op := range c.tile.Ops {
		if in, missing := lowerings[op.Op].unsupported(op.Op); missing {
			return core.Errorf(core.CompileError, "op %s cannot run on the device yet: its lowering needs instruction %s, which the simulator does not implement", op.Op, in).WithLoc(op.Loc)
		}
	}
	type job struct {
		task  *Task
		index int
	}
	var jobs []job
	for _, t := range c.exec.Tasks {
		t.Machine = make([]*device.MachineProgram, len(t.Programs))
		for i := range t.Programs {
			jobs = append(jobs, job{t, i})
		}
	}
	// The blocks of a task, and the tasks of repeated layers, mostly share a shape,
	// which the compiler then compiles once.
	compiler := device.NewCompiler(c.chip)
	errs := make([]error, len(jobs))
	inParallel(len(jobs), func(k int) bool {
		j := jobs[k]
		j.task.Machine[j.index], errs[k] = compiler.Compile(j.task.Programs[j.index])
		return errs[k] == nil
	})
	for k, err := range errs {
		if err != nil {
			return core.Errorf(core.CompileError, "backend for %s failed on %s: %v", c.chip.Name, jobs[k].task.Programs[jobs[k].index].Name, err)
		}
	}
	return nil
}
