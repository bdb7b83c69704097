package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"unsafe"

	"pypto/core"
	"pypto/session"
)

// pypto_trace_create builds the Tensor Graph from n placeholder tensors to m output
// tensors without compiling it (p.Graph).
//
//export pypto_trace_create
func pypto_trace_create(name *C.char, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		ins, outs, err := traceTensors(inputs, n, outputs, m)
		if err != nil {
			return err
		}
		tr, err := session.NewTrace(goString(name), ins, outs)
		if err != nil {
			return err
		}
		return putHandle(out, tr)
	})
}

// pypto_trace_compile makes an executor of a trace with compile options as JSON (as
// pypto_executor_create_config takes them) and a memory pool handle (0: none).
//
//export pypto_trace_compile
func pypto_trace_compile(h C.uintptr_t, configJSON *C.char, pool C.uintptr_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		tr, err := lookup[*session.Trace](uintptr(h), "trace")
		if err != nil {
			return err
		}
		cfg, err := session.ParseConfig(goString(configJSON))
		if err != nil {
			return err
		}
		var mp *session.MemoryPool
		if pool != 0 {
			if mp, err = lookup[*session.MemoryPool](uintptr(pool), "memory pool"); err != nil {
				return err
			}
		}
		ex, err := session.Default().CompileTrace(tr, cfg, mp)
		if err != nil {
			return err
		}
		return putHandle(out, ex)
	})
}

// graphNode is one node of a traced Tensor Graph as p.Graph shows it.
type graphNode struct {
	ID     int    `json:"id"`
	Name   string `json:"name"` // as the text form names it: %in0, %c0, %3
	Op     string `json:"op"`
	Inputs []int  `json:"inputs"`
	Attrs  string `json:"attrs"`
	// AttrValues are the attributes as values (ints, floats, bools, strings, lists of
	// ints) that pypto_apply takes back: what a pass replaying the graph passes on.
	AttrValues  map[string]any `json:"attr_values"`
	Elementwise bool           `json:"elementwise"`
	Type        typeJSON       `json:"type"`
	Location    core.Location  `json:"location"`
	Role        string         `json:"role"` // "input", "constant" (captured data) or "op"
}

// pypto_trace_json describes a trace's Tensor Graph: {"name", "text", "nodes" (each
// graphNode), "outputs" (node ids, one per computed result), "symbolic"}; a trace whose
// outputs need no computing has no nodes.
//
//export pypto_trace_json
func pypto_trace_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		tr, err := lookup[*session.Trace](uintptr(h), "trace")
		if err != nil {
			return err
		}
		g := tr.Graph()
		doc := map[string]any{"nodes": []graphNode{}, "outputs": []int{}, "text": tr.GraphText(), "symbolic": tr.IsSymbolic(), "name": ""}
		if g == nil {
			return putString(out, n, mustJSON(doc))
		}
		names := core.ValueNames(g)
		role := map[core.Value]string{}
		for i, p := range g.Params {
			role[p] = "constant"
			if i < tr.NumInputs() {
				role[p] = "input"
			}
		}
		nodes := make([]graphNode, len(g.Nodes))
		for i, nd := range g.Nodes {
			ins := make([]int, len(nd.Inputs))
			for j, v := range nd.Inputs {
				ins[j] = int(v)
			}
			r := role[core.Value(i)]
			if r == "" {
				r = "op"
			}
			nodes[i] = graphNode{ID: i, Name: names[i], Op: nd.Op, Inputs: ins, Attrs: nd.Attrs.String(), AttrValues: attrValues(nd.Attrs), Elementwise: core.IsElementwise(nd.Op), Type: typeInfo(nd.Type), Location: nd.Loc, Role: r}
		}
		outs := make([]int, len(g.Outputs))
		for i, v := range g.Outputs {
			outs[i] = int(v)
		}
		doc["nodes"], doc["outputs"], doc["name"] = nodes, outs, g.Name
		return putString(out, n, mustJSON(doc))
	})
}

// attrValues are an op's attributes as JSON values; symbolic dims as their text.
func attrValues(a core.Attrs) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		if dims, ok := v.([]core.Dim); ok {
			txt := make([]string, len(dims))
			for i, d := range dims {
				txt[i] = d.String()
			}
			v = txt
		}
		out[k] = v
	}
	return out
}

// pypto_trace_constant stores a new tensor handle holding a copy of the i-th tensor a
// trace captured (its param %c<i>).
//
//export pypto_trace_constant
func pypto_trace_constant(h C.uintptr_t, i C.int32_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		tr, err := lookup[*session.Trace](uintptr(h), "trace")
		if err != nil {
			return err
		}
		t, err := tr.Constant(int(i))
		if err != nil {
			return err
		}
		return putHandle(out, t)
	})
}

// pypto_pool_create makes a memory pool of size bytes.
//
//export pypto_pool_create
func pypto_pool_create(size C.int64_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		if int64(size) > int64(^uint(0)>>1) {
			return core.Errorf(core.MemoryError, "a memory pool of %d bytes is larger than this machine can address", int64(size))
		}
		p, err := session.NewMemoryPool(int(size))
		if err != nil {
			return err
		}
		return putHandle(out, p)
	})
}

// pypto_pool_stats_json reports a pool's use (session.PoolStats) as JSON.
//
//export pypto_pool_stats_json
func pypto_pool_stats_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		p, err := lookup[*session.MemoryPool](uintptr(h), "memory pool")
		if err != nil {
			return err
		}
		return putString(out, n, mustJSON(p.Stats()))
	})
}

// pypto_executor_run_report is pypto_executor_run (profiled when profile is not 0) that
// also stores the run's report (session.RunReport) as JSON.
//
//export pypto_executor_run_report
func pypto_executor_run_report(h C.uintptr_t, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t, profile C.int32_t, report **C.char, rn *C.size_t) C.uintptr_t {
	return status(func() error {
		rep, err := runExecutor(h, inputs, n, outputs, m, profile != 0)
		if err != nil {
			return err
		}
		return putString(report, rn, mustJSON(rep))
	})
}

// traceTensors are the placeholder inputs and the outputs of a trace, from handles.
func traceTensors(inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t) (ins, outs []*session.Tensor, err error) {
	ih, err := handles(inputs, n, "inputs")
	if err != nil {
		return nil, nil, err
	}
	oh, err := handles(outputs, m, "outputs")
	if err != nil {
		return nil, nil, err
	}
	if ins, err = tensors(ih); err != nil {
		return nil, nil, err
	}
	outs, err = tensors(oh)
	return ins, outs, err
}

// runExecutor runs executor h on n input tensors and stores m new tensor handles (m
// must equal pypto_executor_num_outputs) into outputs; profiled when profile is set.
func runExecutor(h C.uintptr_t, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t, profile bool) (session.RunReport, error) {
	ex, err := lookup[*session.Executor](uintptr(h), "executor")
	if err != nil {
		return session.RunReport{}, err
	}
	if int(m) != ex.NumOutputs() {
		return session.RunReport{}, core.Errorf(core.ValueError, "executor returns %d outputs, the caller's buffer holds %d", ex.NumOutputs(), int(m))
	}
	ih, err := handles(inputs, n, "inputs")
	if err != nil {
		return session.RunReport{}, err
	}
	ins, err := tensors(ih)
	if err != nil {
		return session.RunReport{}, err
	}
	res, rep, err := ex.RunReport(ins, profile)
	if err != nil {
		return session.RunReport{}, err
	}
	if m > 0 {
		dst := unsafe.Slice(outputs, int(m))
		for i, t := range res {
			dst[i] = C.uintptr_t(newHandle(t))
		}
	}
	return rep, nil
}
