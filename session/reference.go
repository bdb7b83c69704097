package session

import "pypto/core"

// Reference is a Compiler whose programs run the Tensor Graph reference interpreter:
// exact results, no timing (cycles are 0). Tests use it as the oracle.
func Reference() Compiler { return referenceCompiler{} }

type referenceCompiler struct{}

func (referenceCompiler) CheckDevice(name string) (string, error) { return name, nil }

// Compile ignores cfg: the interpreter has no passes and no memory plan.
func (referenceCompiler) Compile(g *core.Graph, _ string, _ Config) (Program, error) {
	return &referenceProgram{g: g}, nil
}

type referenceProgram struct{ g *core.Graph }

func (p *referenceProgram) Dump() string { return core.Format(p.g) }

// Run does not pass stop on: the interpreter's kernels poll interrupt.Current().
func (p *referenceProgram) Run(inputs [][]byte, _ <-chan struct{}) ([][]byte, Stats, error) {
	if len(inputs) != len(p.g.Params) {
		return nil, Stats{}, core.Errorf(core.ValueError, "program takes %d inputs, got %d", len(p.g.Params), len(inputs))
	}
	in := make([]*core.Array, len(inputs))
	for i, pv := range p.g.Params {
		in[i] = core.ArrayFromBytes(p.g.Type(pv), inputs[i])
	}
	outs, err := core.Interpret(p.g, in)
	if err != nil {
		return nil, Stats{}, err
	}
	res := make([][]byte, len(outs))
	for i, o := range outs {
		res[i] = o.Bytes()
	}
	return res, Stats{}, nil
}

// defaultCompiler is the compiler of the Default session: the real pipeline for the
// chip presets, the reference interpreter for ReferenceDevice.
func defaultCompiler() Compiler { return Devices() }
