package session

import "pypto/core"

// narrowedProgram is the program of a graph with int64 values (see core.NarrowInt64):
// compiled from the graph narrowed to int32, it narrows the int64 inputs of each run
// (checking that they fit) and widens the int64 results.
type narrowedProgram struct {
	Program
	plan core.Int64Plan
}

// compileNarrowed compiles g with c, through core.NarrowInt64 when g has int64 values.
func compileNarrowed(c Compiler, g *core.Graph, device string, cfg Config) (Program, error) {
	if !core.HasInt64(g) {
		return c.Compile(g, device, cfg)
	}
	ng, plan, err := core.NarrowInt64(g)
	if err != nil {
		return nil, err
	}
	p, err := c.Compile(ng, device, cfg)
	if err != nil {
		return nil, err
	}
	return narrowedProgram{p, plan}, nil
}

// baseProgram is the program that p runs on the device: the optional interfaces
// (memory plan, visualisation, profiling, ...) are the compiled program's.
func baseProgram(p Program) Program {
	if n, ok := p.(narrowedProgram); ok {
		return n.Program
	}
	return p
}

// narrowedRun runs p (a narrowedProgram or not) with run, which takes the program the
// device runs and the inputs it reads.
func narrowedRun[R any](p Program, inputs [][]byte, run func(Program, [][]byte) ([][]byte, R, error)) ([][]byte, R, error) {
	n, ok := p.(narrowedProgram)
	if !ok {
		return run(p, inputs)
	}
	var zero R
	ins, nerr := n.plan.Narrow(inputs)
	if nerr != nil {
		return nil, zero, nerr
	}
	outs, r, err := run(n.Program, ins)
	if err != nil {
		return nil, r, err
	}
	wide, werr := n.plan.Widen(outs)
	if werr != nil {
		return nil, r, werr
	}
	return wide, r, nil
}
