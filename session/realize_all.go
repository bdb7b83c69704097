package session

import (
	"pypto/core"
	"pypto/internal/interrupt"
)

// RealizeAll computes several pending tensors as one graph with one output each, so
// that what they share (a forward pass behind several gradients, the parameters an
// optimiser step updates) is computed once. Concrete tensors are skipped.
func (s *Session) RealizeAll(ts []*Tensor) error {
	stop := interrupt.Current()
	gb, _ := newGraphBuild("eager", nil)
	var pend []*Tensor
	seen := map[*Tensor]bool{}
	var loc core.Location
	for _, t := range ts {
		if t == nil {
			return core.Errorf(core.ValueError, "nil tensor")
		}
		k, _, o := t.state()
		if k == concrete || seen[t] {
			continue
		}
		seen[t] = true
		v, err := gb.value(t)
		if err != nil {
			return err
		}
		gb.b.Output(v)
		pend = append(pend, t)
		if loc.IsZero() && o != nil {
			loc = o.loc
		}
	}
	if len(pend) == 0 {
		return nil
	}
	g := gb.b.Graph()
	prog, err := s.compile(g)
	if err != nil {
		return withLoc(err, loc)
	}
	outs, st, err := runProgram(prog, gb.bound, stop)
	if err != nil {
		return withLoc(locateIn(err, g), loc)
	}
	if len(outs) != len(pend) {
		return core.Errorf(core.InternalError, "program returned %d outputs for %d tensors", len(outs), len(pend)).WithLoc(loc)
	}
	for i, t := range pend {
		if len(outs[i]) != t.typ.Bytes() {
			return core.Errorf(core.InternalError, "output %d has %d bytes for a %v result", i, len(outs[i]), t.typ).WithLoc(loc)
		}
		t.setData(outs[i], keepOf(outs[i], gb.keeps))
	}
	s.recordStats(st)
	return nil
}
