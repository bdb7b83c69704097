package session

import (
	"fmt"
	"sync/atomic"

	"pypto/core"
	"pypto/internal/interrupt"
)

// Debugger runs an executor's Tensor Graph one node at a time on the executor's device:
// each node is compiled as a program of its own (its inputs as params, with the
// executor's options) and run on the values the earlier nodes computed, so every node's
// inputs and output are observable as the device computed them. Fusion across nodes
// does not happen in this mode (a composite node such as softmax still compiles, and
// may fuse, within itself), so intermediate values are each rounded to their node's
// dtype, as they are without fusion (opt_level 0).
type Debugger struct {
	ex     *Executor
	graph  *core.Graph // concrete: the executor's graph specialised to the run's shapes
	names  []string
	lines  []string
	values []*Tensor // per node; nil until computed
	next   int       // the index of the next node to run; len(Nodes) when finished
	inputs []*Tensor // the run's inputs

	instrBreaks atomic.Pointer[[]InstrBreak] // block-level breakpoints (debug_block.go)
	run         *pausedRun                   // the node running with a block paused, or nil
}

// DebugNode describes one node for a debugger's client.
type DebugNode struct {
	Index  int           `json:"index"`
	Name   string        `json:"name"` // as the Tensor Graph text prints it
	Op     string        `json:"op"`
	Text   string        `json:"text"`
	Type   string        `json:"type"`
	Inputs []int         `json:"inputs"`
	Loc    core.Location `json:"loc"`
	Param  bool          `json:"param"`
}

// Debug starts a paused debugging run of the executor on inputs: no node has run.
func (e *Executor) Debug(inputs []*Tensor) (*Debugger, error) {
	if e.graph == nil {
		return nil, core.Errorf(core.ValueError, "the executor computes nothing (every output is an input or a constant), so there is no node to debug")
	}
	if len(inputs) != len(e.inputs) {
		return nil, core.Errorf(core.ValueError, "executor takes %d inputs, got %d", len(e.inputs), len(inputs))
	}
	var shapes []core.Shape
	var params []*Tensor
	for i, in := range inputs {
		if in == nil {
			return nil, core.Errorf(core.ValueError, "input %d is missing (nil tensor)", i)
		}
		if err := checkInput(i, in.typ, e.inputs[i]); err != nil {
			return nil, err
		}
		if err := e.s.Realize(in); err != nil {
			return nil, err
		}
		shapes = append(shapes, in.typ.Shape)
		params = append(params, &Tensor{typ: in.typ.Clone(), kind: concrete, data: in.Data()})
	}
	for i, data := range e.bound {
		shapes = append(shapes, e.boundT[i].Shape)
		params = append(params, &Tensor{typ: e.boundT[i].Clone(), kind: concrete, data: data})
	}
	g := e.graph
	if e.IsSymbolic() {
		b, err := core.BindSymbols(g, shapes)
		if err != nil {
			return nil, err
		}
		if err := core.CheckConstraints(e.cons, b); err != nil {
			return nil, err
		}
		if g, err = core.Specialize(g, b); err != nil {
			return nil, err
		}
	}
	if len(g.Params) != len(params) {
		return nil, core.Errorf(core.InternalError, "graph has %d params, the run binds %d", len(g.Params), len(params))
	}
	d := &Debugger{ex: e, graph: g, names: core.NodeNames(g), lines: core.NodeLines(g), values: make([]*Tensor, len(g.Nodes)), inputs: params[:len(inputs)]}
	for i, p := range g.Params {
		d.values[p] = params[i]
	}
	d.skipParams()
	return d, nil
}

func (d *Debugger) skipParams() {
	for d.next < len(d.graph.Nodes) && d.graph.Nodes[d.next].Op == core.OpParam {
		d.next++
	}
}

// Nodes describes every node of the graph being debugged, in order.
func (d *Debugger) Nodes() []DebugNode {
	out := make([]DebugNode, len(d.graph.Nodes))
	for i, n := range d.graph.Nodes {
		ins := make([]int, len(n.Inputs))
		for j, v := range n.Inputs {
			ins[j] = int(v)
		}
		out[i] = DebugNode{Index: i, Name: d.names[i], Op: n.Op, Text: d.lines[i], Type: n.Type.String(), Inputs: ins,
			Loc: n.Loc, Param: n.Op == core.OpParam}
	}
	return out
}

// Outputs are the nodes the graph returns, in order.
func (d *Debugger) Outputs() []int {
	out := make([]int, len(d.graph.Outputs))
	for i, v := range d.graph.Outputs {
		out[i] = int(v)
	}
	return out
}

// Next is the index of the node the next Step runs (len(Nodes) when all have run).
func (d *Debugger) Next() int { return d.next }

// GraphText is the text of the graph being debugged (concrete shapes).
func (d *Debugger) GraphText() string { return core.Format(d.graph) }

// Value is node i's value, or nil when it has not run yet.
func (d *Debugger) Value(i int) (*Tensor, error) {
	if i < 0 || i >= len(d.values) {
		return nil, core.Errorf(core.ValueError, "node index %d is out of range: the graph has %d nodes", i, len(d.values))
	}
	return d.values[i], nil
}

// Step runs the next node on the device and returns its index. With instruction
// breakpoints set it may stop inside the node's program instead (paused true, the node
// not finished: Paused says where); the next Step resumes it. An error when every node
// has run.
func (d *Debugger) Step() (node int, paused bool, err error) {
	if d.run != nil {
		i := d.run.node
		d.run.resume <- struct{}{}
		return d.settle(i)
	}
	if d.next >= len(d.graph.Nodes) {
		return -1, false, core.Errorf(core.ValueError, "every node has run").Suggest("call finish() for the outputs")
	}
	i := d.next
	n := d.graph.Nodes[i]
	b := core.NewBuilder(fmt.Sprintf("%s_node%d", d.graph.Name, i))
	params := map[core.Value]core.Value{}
	var bufs [][]byte
	var ins []core.Value
	for _, v := range n.Inputs {
		p, ok := params[v]
		if !ok {
			p = b.Param(fmt.Sprintf("in%d", len(params)), d.graph.Nodes[v].Type)
			params[v] = p
			bufs = append(bufs, d.values[v].data)
		}
		ins = append(ins, p)
	}
	out, err := b.Op(n.Op, ins, n.Attrs, n.Loc)
	if err != nil {
		return -1, false, withLoc(err, n.Loc)
	}
	b.Output(out)
	cfg := d.ex.cfg
	cfg.weights = nil // the node's graph has params of its own
	prog, err := d.ex.s.compileOn(b.Graph(), d.ex.device, cfg)
	if err != nil {
		return -1, false, withLoc(err, n.Loc)
	}
	if pp, ok := prog.(pausable); ok && len(d.breaks()) > 0 {
		d.startPaused(i, pp, bufs)
		return d.settle(i)
	}
	outs, st, err := runProgram(prog, bufs, interrupt.Current())
	return d.finishNode(i, outs, st, err)
}

// settle waits for the paused run of node i to stop at a block or end.
func (d *Debugger) settle(i int) (int, bool, error) {
	stopped, res := d.wait()
	if stopped {
		return i, true, nil
	}
	return d.finishNode(i, res.outs, res.st, res.err)
}

// finishNode records node i's result.
func (d *Debugger) finishNode(i int, outs [][]byte, st Stats, err error) (int, bool, error) {
	n := d.graph.Nodes[i]
	if err != nil {
		return -1, false, withLoc(err, n.Loc)
	}
	if len(outs) != 1 || len(outs[0]) != n.Type.Bytes() {
		return -1, false, core.Errorf(core.InternalError, "node %s returned %d outputs for one %v result", d.names[i], len(outs), n.Type)
	}
	d.ex.s.recordStats(st)
	d.values[i] = &Tensor{typ: n.Type.Clone(), kind: concrete, data: outs[0]}
	d.next++
	d.skipParams()
	return i, false, nil
}

// Results are the executor's results once every node has run, as Run returns them.
func (d *Debugger) Results() ([]*Tensor, error) {
	if d.next < len(d.graph.Nodes) {
		return nil, core.Errorf(core.ValueError, "node %s has not run yet", d.names[d.next]).Suggest("call finish() to run the rest")
	}
	out := make([]*Tensor, len(d.ex.outs))
	for i, src := range d.ex.outs {
		switch {
		case src.graph >= 0:
			out[i] = d.values[d.graph.Outputs[src.graph]]
		case src.input >= 0:
			out[i] = d.inputs[src.input]
		default:
			out[i] = &Tensor{typ: src.typ.Clone(), kind: concrete, data: src.data}
		}
	}
	return out, nil
}
