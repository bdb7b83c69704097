package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import "pypto/session"

// pypto_executor_visualization_json gives what the viewer shows of the executor's
// program (lower.Visualization) as JSON: every level, the cost estimates, the
// programs and the passes with their diffs.
//
//export pypto_executor_visualization_json
func pypto_executor_visualization_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		v, err := ex.Visualization()
		if err != nil {
			return err
		}
		return putString(out, n, mustJSON(v))
	})
}
