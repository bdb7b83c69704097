package session

import (
	"fmt"

	"pypto/core"
)

// graphBuild turns a web of tensors into a core.Graph. Tensors given as inputs become
// the first params; concrete tensors reached while walking become further params bound
// to their data; pending tensors become op nodes; each distinct tensor is one value.
type graphBuild struct {
	b      *core.Builder
	vals   map[*Tensor]core.Value
	nInput int      // params that are the caller's inputs (placeholders)
	bound  [][]byte // data of the params after the inputs, in param order
	boundT []*Tensor
	keeps  []*External // owners of the external memory among bound
}

func newGraphBuild(name string, inputs []*Tensor) (*graphBuild, error) {
	gb := &graphBuild{b: core.NewBuilder(name), vals: map[*Tensor]core.Value{}, nInput: len(inputs)}
	for i, in := range inputs {
		if in == nil {
			return nil, core.Errorf(core.ValueError, "input %d is missing (nil tensor)", i)
		}
		if _, dup := gb.vals[in]; dup {
			return nil, core.Errorf(core.ValueError, "input %d is the same placeholder as an earlier input", i)
		}
		if !in.IsPlaceholder() {
			return nil, core.Errorf(core.ValueError, "input %d is not a placeholder", i)
		}
		gb.vals[in] = gb.b.Param(fmt.Sprintf("in%d", i), in.typ)
	}
	return gb, nil
}

// value returns the graph value of t, adding the nodes it depends on.
func (gb *graphBuild) value(t *Tensor) (core.Value, error) {
	if v, ok := gb.vals[t]; ok {
		return v, nil
	}
	k, data, o := t.state()
	var v core.Value
	switch k {
	case concrete:
		v = gb.b.Param(fmt.Sprintf("c%d", len(gb.bound)), t.typ)
		gb.bound = append(gb.bound, data)
		gb.boundT = append(gb.boundT, t)
		if k := t.Keep(); k != nil {
			gb.keeps = append(gb.keeps, k)
		}
	case placeholder:
		return -1, core.Errorf(core.ValueError, "this value depends on an input of a function being traced by p.compile, so it has no data yet").
			Because("a traced function's inputs are placeholders: their values exist only when the compiled executor runs").
			Suggest("do not call .numpy(), print, float(), int() or bool() on traced values inside the compiled function; compute data-dependent parts outside it")
	case pending:
		ins := make([]core.Value, len(o.inputs))
		for i, in := range o.inputs {
			iv, err := gb.value(in)
			if err != nil {
				return -1, err
			}
			ins[i] = iv
		}
		var err error
		v, err = gb.b.Op(o.name, ins, o.attrs, o.loc)
		if err != nil {
			return -1, err
		}
	}
	gb.vals[t] = v
	return v, nil
}
