package main

/*
#include <stdint.h>
#include <stddef.h>
*/
import "C"

import (
	"encoding/json"

	"pypto/core"
	"pypto/internal/atomicfile"
	"pypto/internal/progress"
	"pypto/session"
)

// pypto_executor_run_profiled is pypto_executor_run with every instruction traced; the
// profile is then read with pypto_executor_profile_json and _trace.
//
//export pypto_executor_run_profiled
func pypto_executor_run_profiled(h C.uintptr_t, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t) C.uintptr_t {
	return executorRun(h, inputs, n, outputs, m, true)
}

// pypto_executor_last_profile stores a handle of the executor's last profile into out,
// or 0 when it has no profiled run on a chip.
//
//export pypto_executor_last_profile
func pypto_executor_last_profile(h C.uintptr_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		*out = 0
		if p := ex.LastProfile(); p != nil {
			*out = C.uintptr_t(newHandle(p))
		}
		return nil
	})
}

// pypto_profile_json gives a profile (session.Profile) as JSON.
//
//export pypto_profile_json
func pypto_profile_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		p, err := lookup[*session.Profile](uintptr(h), "profile")
		if err != nil {
			return err
		}
		b, err := json.Marshal(p)
		if err != nil {
			return core.Errorf(core.InternalError, "profile JSON: %v", err)
		}
		return putString(out, n, string(b))
	})
}

// pypto_profile_trace writes a profile's Chrome trace JSON to path.
//
//export pypto_profile_trace
func pypto_profile_trace(h C.uintptr_t, path *C.char) C.uintptr_t {
	return status(func() error {
		p, err := lookup[*session.Profile](uintptr(h), "profile")
		if err != nil {
			return err
		}
		if err := atomicfile.WriteWith(goString(path), p.WriteTrace); err != nil {
			return core.Errorf(core.IOError, "the profile's trace: %v", err)
		}
		return nil
	})
}

// pypto_progress_json lists the compiles and runs in progress (progress.State each)
// as JSON, for the Python side's progress bars.
//
//export pypto_progress_json
func pypto_progress_json(out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error { return putString(out, n, mustJSON(progress.Snapshot())) })
}
