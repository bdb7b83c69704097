package session

import (
	"pypto/core"
	"pypto/lower"
)

// Visualization is what the viewer shows of the executor's program (its most recent
// specialisation when it is symbolic). The executor must be compiled with
// Config.Visualize, for a chip, and have a program (a symbolic one after its first
// run).
func (e *Executor) Visualization() (*lower.Visualization, error) {
	prog := e.latestProgram()
	switch {
	case e.graph == nil:
		return nil, core.Errorf(core.ValueError, "nothing is compiled: every output of the function is an input or a constant")
	case prog == nil:
		return nil, core.Errorf(core.ValueError, "the executor has a symbolic trace and has not run yet, so no program is compiled").
			Suggest("run it once (each run's sizes compile a program), or compile with inputs= of concrete shapes")
	case !e.cfg.Visualize:
		return nil, core.Errorf(core.ValueError, "the program was compiled without visualisation").
			Suggest("compile with p.CompileConfig(enable_visualization=True)")
	}
	v, ok := baseProgram(prog).(visualizer)
	if !ok {
		return nil, core.Errorf(core.ValueError, "the %q device runs the Tensor Graph's reference semantics and compiles no program to show", e.device).
			Suggest("compile for a chip preset (p.CompileConfig(chip=...) or p.set_device)")
	}
	return v.Visualization()
}
