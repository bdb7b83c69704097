package main

/*
#include <stdint.h>
#include <stddef.h>
*/
import "C"

import (
	"encoding/json"
	"unsafe"

	"pypto/core"
	"pypto/session"
)

// Exports of the graph debugger (session.Debugger): a paused run of an executor that
// steps through its Tensor Graph one node at a time.

// pypto_executor_debug starts a debugging run of the executor on n input tensors and
// stores the debugger's handle into out.
//
//export pypto_executor_debug
func pypto_executor_debug(h C.uintptr_t, inputs *C.uintptr_t, n C.int32_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		ih, err := handles(inputs, n, "inputs")
		if err != nil {
			return err
		}
		ins, err := tensors(ih)
		if err != nil {
			return err
		}
		d, err := ex.Debug(ins)
		if err != nil {
			return err
		}
		return putHandle(out, d)
	})
}

// pypto_debug_info_json describes the debugged graph as JSON: {"nodes": [DebugNode],
// "outputs": [index], "graph": text}.
//
//export pypto_debug_info_json
func pypto_debug_info_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		b, err := json.Marshal(map[string]any{"nodes": d.Nodes(), "outputs": d.Outputs(), "graph": d.GraphText()})
		if err != nil {
			return err
		}
		return putString(out, n, string(b))
	})
}

// pypto_debug_next stores the index of the node the next step runs into next.
//
//export pypto_debug_next
func pypto_debug_next(h C.uintptr_t, next *C.int32_t) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		*next = C.int32_t(d.Next())
		return nil
	})
}

// pypto_debug_step runs the next node on the device (or resumes the paused one) and
// stores its index into ran, and into paused 1 when a block stopped at an instruction
// breakpoint inside it (pypto_debug_paused_json says where).
//
//export pypto_debug_step
func pypto_debug_step(h C.uintptr_t, ran *C.int32_t, paused *C.int32_t) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		i, p, err := d.Step()
		if err != nil {
			return err
		}
		*ran, *paused = C.int32_t(i), 0
		if p {
			*paused = 1
		}
		return nil
	})
}

// pypto_debug_paused_json describes the paused block (session.PausedAt), or "null".
//
//export pypto_debug_paused_json
func pypto_debug_paused_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		return putString(out, n, mustJSON(d.Paused()))
	})
}

// pypto_debug_set_instr_breaks replaces the block-level breakpoints with a JSON list
// of session.InstrBreak.
//
//export pypto_debug_set_instr_breaks
func pypto_debug_set_instr_breaks(h C.uintptr_t, breaks *C.char) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		var bs []session.InstrBreak
		if err := json.Unmarshal([]byte(goString(breaks)), &bs); err != nil {
			return core.Errorf(core.ValueError, "bad breakpoint JSON: %v", err)
		}
		d.SetInstrBreaks(bs)
		return nil
	})
}

// pypto_debug_tile_json gives a tile of the paused block, by name, as JSON
// {"values", "shape", "valid", "dtype"}.
//
//export pypto_debug_tile_json
func pypto_debug_tile_json(h C.uintptr_t, name *C.char, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		vals, shape, valid, dt, err := d.TileValues(goString(name))
		if err != nil {
			return err
		}
		return putString(out, n, mustJSON(map[string]any{"values": vals, "shape": shape, "valid": valid, "dtype": dt}))
	})
}

// pypto_debug_close lets a paused node run to its end (the debugger is given up).
//
//export pypto_debug_close
func pypto_debug_close(h C.uintptr_t) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		d.Close()
		return nil
	})
}

// pypto_debug_value stores a new handle of node i's value into out, or 0 when the node
// has not run yet.
//
//export pypto_debug_value
func pypto_debug_value(h C.uintptr_t, i C.int32_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		t, err := d.Value(int(i))
		if err != nil {
			return err
		}
		*out = 0
		if t != nil {
			*out = C.uintptr_t(newHandle(t))
		}
		return nil
	})
}

// pypto_debug_results stores m new tensor handles of the executor's results into
// outputs once every node has run (m must equal pypto_executor_num_outputs).
//
//export pypto_debug_results
func pypto_debug_results(h C.uintptr_t, outputs *C.uintptr_t, m C.int32_t) C.uintptr_t {
	return status(func() error {
		d, err := lookup[*session.Debugger](uintptr(h), "debugger")
		if err != nil {
			return err
		}
		res, err := d.Results()
		if err != nil {
			return err
		}
		if int(m) != len(res) {
			return core.Errorf(core.ValueError, "the executor returns %d outputs, the caller's buffer holds %d", len(res), int(m))
		}
		dst := unsafe.Slice(outputs, int(m))
		for i, t := range res {
			dst[i] = C.uintptr_t(newHandle(t))
		}
		return nil
	})
}
