// Command capi is the C ABI of PyPTO, built with
//
//	go build -buildmode=c-shared -o libpypto.so ./capi
//
// into the one shared library the Python package loads with ctypes. The ABI is
// hand-written and versioned (pypto_abi_version); the Python side checks the version at
// import. Conventions, which every export follows:
//
//   - Objects (tensors, executors, errors) cross as opaque handles (runtime/cgo.Handle,
//     a uintptr_t, never 0), each released with pypto_handle_free.
//   - Every export except pypto_abi_version and pypto_string_free returns a status:
//     0 is success, anything else is an error handle; pypto_error_json gives its details
//     as JSON {type, message, location{file,line,func}, causes, suggestions}.
//   - Every export recovers Go panics and turns them into an InternalError status, so
//     the host process is never aborted.
//   - Tensors cross as pointer + dtype code + ndim + shape + byte strides (numpy's
//     convention). Go copies the data during the call and never keeps the pointer,
//     except for pypto_from_external (memory the caller keeps alive until the library
//     reports it released) and pypto_dlpack_export (Go memory pinned until the DLPack
//     deleter runs); see capi/dlpack.go.
//   - Strings returned to the caller are C-allocated, NUL-terminated and come with their
//     length; the caller frees them with pypto_string_free.
//   - The library is safe for concurrent calls from several threads.
//   - A process forked after the library was loaded cannot use it (the Go runtime does
//     not survive fork); calls from such a child return an error naming the 'spawn'
//     start method.
//
// Dtype codes are those of package dtype: 1 float32, 2 float16, 3 bfloat16, 4 int8,
// 5 int32, 6 bool.
package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"runtime"
	"runtime/debug"
	"time"
	"unsafe"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/lower"
	"pypto/session"
)

// abiVersion changes whenever an export's signature or meaning changes, or exports
// are added that the Python side needs (3: pypto_executor_create_config and
// pypto_config_check; 4: pypto_watch_interrupts and pypto_interrupt; 5:
// pypto_from_external, pypto_externals_released and pypto_dlpack_export; 6:
// pypto_track, pypto_detach, pypto_is_tracked, pypto_grad, pypto_realize_all and
// pypto_differentiable_ops_json; 7: the PTO-AS exports of capi/ptoas.go).
const abiVersion = 7

func main() {}

// The C library reads PYPTO_CHECK_TIMING_CACHE=1 (every timing cache hit checked
// against a fresh timing loop, for tests: docs/device.md) from the environment as it
// is loaded, which a host such as Python may have changed since the process began
// (the Go runtime's own copy is the one from the process's start).
func init() {
	if v, ok := getenv("PYPTO_CHECK_TIMING_CACHE"); ok && v == "1" {
		device.CheckTimingCache(true)
	}
	// Compiling a model allocates much that dies at once (the levels' graphs, emitted
	// programs before the backend's copies), so with the default growth target (the
	// heap doubles over what lives) the process peaks near twice the programs it keeps:
	// EfficientNet-B0's first call at 1.53 GB, 1.40 GB with 50 (docs/torch.md,
	// "Memory"). GOGC, when set, is the user's choice.
	if _, ok := getenv("GOGC"); !ok {
		debug.SetGCPercent(gcPercent)
	}
}

// gcPercent is the collector's growth target when GOGC is not set (assumed: half the
// default trades some collection time for a lower peak).
const gcPercent = 50

// getenv reads the process environment as it is now (C's, which a host such as
// Python may have changed since the process began).
func getenv(key string) (string, bool) {
	name := C.CString(key)
	defer C.free(unsafe.Pointer(name))
	v := C.getenv(name)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}

//export pypto_abi_version
func pypto_abi_version() C.int32_t { return abiVersion }

//export pypto_handle_free
func pypto_handle_free(h C.uintptr_t) C.uintptr_t {
	return status(func() error { return freeHandle(uintptr(h)) })
}

//export pypto_string_free
func pypto_string_free(s *C.char) { C.free(unsafe.Pointer(s)) }

//export pypto_error_json
func pypto_error_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		e, err := lookup[*core.Error](uintptr(h), "error")
		if err != nil {
			return err
		}
		return putString(out, n, errorJSON(e))
	})
}

//export pypto_from_host
func pypto_from_host(code C.int32_t, ndim C.int32_t, shape *C.int64_t, strides *C.int64_t, ptr unsafe.Pointer, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		sh, err := ints(shape, ndim, "shape")
		if err != nil {
			return err
		}
		var st []int
		if strides != nil {
			if st, err = ints(strides, ndim, "strides"); err != nil {
				return err
			}
		}
		t, err := session.FromHost(dtype.DType(code), sh, st, ptr)
		if err != nil {
			return err
		}
		return putHandle(out, t)
	})
}

//export pypto_zeros
func pypto_zeros(code C.int32_t, ndim C.int32_t, shape *C.int64_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		sh, err := ints(shape, ndim, "shape")
		if err != nil {
			return err
		}
		t, err := session.Zeros(core.TensorType{DType: dtype.DType(code), Shape: sh})
		if err != nil {
			return err
		}
		return putHandle(out, t)
	})
}

//export pypto_placeholder
func pypto_placeholder(code C.int32_t, ndim C.int32_t, shape *C.int64_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		sh, err := ints(shape, ndim, "shape")
		if err != nil {
			return err
		}
		t, err := session.NewPlaceholder(core.TensorType{DType: dtype.DType(code), Shape: sh})
		if err != nil {
			return err
		}
		return putHandle(out, t)
	})
}

// pypto_apply builds a pending tensor: op applied to n input tensors. attrs_json is a
// JSON object (or NULL) of bool, number, string or integer-list values; location_json is
// {"file","line","func"} of the user's call (or NULL).
//
//export pypto_apply
func pypto_apply(op *C.char, inputs *C.uintptr_t, n C.int32_t, attrsJSON *C.char, locJSON *C.char, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		hs, err := handles(inputs, n, "inputs")
		if err != nil {
			return err
		}
		ins, err := tensors(hs)
		if err != nil {
			return err
		}
		loc, err := decodeLocation(goString(locJSON))
		if err != nil {
			return err
		}
		attrs, err := decodeAttrs(goString(attrsJSON))
		if err != nil {
			return core.Errorf(core.ValueError, "%s: %v", C.GoString(op), err).WithLoc(loc)
		}
		t, err := session.Apply(C.GoString(op), ins, attrs, loc)
		if err != nil {
			return err
		}
		return putHandle(out, t)
	})
}

// pypto_tensor_info reports a tensor's dtype code, rank, shape (into shape[0:cap]) and
// whether it is still pending. A rank above cap is an error (with *ndim set).
//
//export pypto_tensor_info
func pypto_tensor_info(h C.uintptr_t, code *C.int32_t, ndim *C.int32_t, shape *C.int64_t, capacity C.int32_t, pending *C.int32_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		typ := t.Type()
		*code = C.int32_t(typ.DType)
		*ndim = C.int32_t(len(typ.Shape))
		if len(typ.Shape) > int(capacity) {
			return core.Errorf(core.ValueError, "tensor has %d dimensions, the caller's buffer holds %d", len(typ.Shape), int(capacity))
		}
		if len(typ.Shape) > 0 {
			dst := unsafe.Slice((*C.int64_t)(shape), len(typ.Shape))
			for i, d := range typ.Shape {
				dst[i] = C.int64_t(d)
			}
		}
		if pending != nil {
			*pending = 0
			if t.IsPending() {
				*pending = 1
			}
		}
		return nil
	})
}

//export pypto_realize
func pypto_realize(h C.uintptr_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		return session.Default().Realize(t)
	})
}

// pypto_copy_out realises the tensor and writes it into a host buffer of the same
// shape with the given byte strides (NULL: C-contiguous).
//
//export pypto_copy_out
func pypto_copy_out(h C.uintptr_t, ptr unsafe.Pointer, ndim C.int32_t, strides *C.int64_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		if int(ndim) != len(t.Type().Shape) {
			return core.Errorf(core.ShapeError, "destination has %d dimensions, the tensor %v has %d", int(ndim), t.Type(), len(t.Type().Shape))
		}
		var st []int
		if strides != nil {
			if st, err = ints(strides, ndim, "strides"); err != nil {
				return err
			}
		}
		return session.Default().CopyOut(t, ptr, st)
	})
}

//export pypto_set_device
func pypto_set_device(name *C.char) C.uintptr_t {
	return status(func() error { return session.Default().SetDevice(C.GoString(name)) })
}

//export pypto_get_device
func pypto_get_device(out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error { return putString(out, n, session.Default().Device()) })
}

// pypto_last_stats_json gives the statistics of the most recent run in the process
// (eager or executor) as JSON, or "null" before any run.
//
//export pypto_last_stats_json
func pypto_last_stats_json(out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		st, ok := session.Default().LastStats()
		return putString(out, n, statsJSON(st, ok))
	})
}

// pypto_cache_info_json gives the compile cache's counters as JSON
// {compiles, hits, entries, capacity}.
//
//export pypto_cache_info_json
func pypto_cache_info_json(out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error { return putString(out, n, mustJSON(session.Default().CacheInfo())) })
}

// pypto_cache_clear drops the compiled programs and returns the memory the Go heap no
// longer uses to the operating system (the collector would keep it for reuse).
//
//export pypto_cache_clear
func pypto_cache_clear() C.uintptr_t {
	return status(func() error {
		session.Default().ClearCache()
		releaseHeap()
		return nil
	})
}

// releaseHeap collects until the heap stops shrinking (at most a few rounds) and
// returns the free memory to the operating system. One collection is not enough:
// objects kept by cleanups (runtime.AddCleanup, run after the collection that finds
// their owner unreachable: an executable's programs, external buffers) become
// garbage only at the next.
func releaseHeap() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	for range 4 {
		before := m.HeapInuse
		debug.FreeOSMemory()
		time.Sleep(time.Millisecond) // the cleanups the collection queued run meanwhile
		runtime.ReadMemStats(&m)
		if m.HeapInuse >= before {
			break
		}
	}
}

// pypto_executor_create compiles the computation from n placeholder tensors to m
// output tensors for the current device.
//
//export pypto_executor_create
func pypto_executor_create(name *C.char, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t, out *C.uintptr_t) C.uintptr_t {
	return pypto_executor_create_config(name, inputs, n, outputs, m, nil, out)
}

// pypto_executor_create_config is pypto_executor_create with compile options as JSON
// (NULL: the defaults): {"opt_level": 0-3, "disable_passes": [names],
// "memory_pool_bytes": N, "chip": preset}, every field optional.
//
//export pypto_executor_create_config
func pypto_executor_create_config(name *C.char, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t, configJSON *C.char, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		cfg, err := session.ParseConfig(goString(configJSON))
		if err != nil {
			return err
		}
		ins, outs, err := traceTensors(inputs, n, outputs, m)
		if err != nil {
			return err
		}
		ex, err := session.Default().NewExecutorWith(goString(name), ins, outs, cfg)
		if err != nil {
			return err
		}
		return putHandle(out, ex)
	})
}

// pypto_config_check checks compile options given as pypto_executor_create_config
// takes them, so that p.compile reports a bad option before anything is traced.
//
//export pypto_config_check
func pypto_config_check(configJSON *C.char) C.uintptr_t {
	return status(func() error {
		cfg, err := session.ParseConfig(goString(configJSON))
		if err != nil {
			return err
		}
		_, err = session.Default().CheckConfig(cfg)
		return err
	})
}

//export pypto_executor_num_outputs
func pypto_executor_num_outputs(h C.uintptr_t, n *C.int32_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		*n = C.int32_t(ex.NumOutputs())
		return nil
	})
}

// pypto_executor_run runs the executor on n input tensors and stores m new tensor
// handles (m must equal pypto_executor_num_outputs) into outputs.
//
//export pypto_executor_run
func pypto_executor_run(h C.uintptr_t, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t) C.uintptr_t {
	return executorRun(h, inputs, n, outputs, m, false)
}

// executorRun is pypto_executor_run, profiled (every instruction traced) when profile is set.
func executorRun(h C.uintptr_t, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t, profile bool) C.uintptr_t {
	return status(func() error {
		_, err := runExecutor(h, inputs, n, outputs, m, profile)
		return err
	})
}

// pypto_executor_last_stats reports the executor's last run: simulated cycles and
// seconds; *has is 0 before the first run.
//
//export pypto_executor_last_stats
func pypto_executor_last_stats(h C.uintptr_t, cycles *C.int64_t, seconds *C.double, has *C.int32_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		st, ok := ex.LastStats()
		*cycles, *seconds, *has = C.int64_t(st.Cycles), C.double(st.Seconds), 0
		if ok {
			*has = 1
		}
		return nil
	})
}

//export pypto_executor_stats_json
func pypto_executor_stats_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		st, ok := ex.LastStats()
		return putString(out, n, statsJSON(st, ok))
	})
}

//export pypto_executor_dump
func pypto_executor_dump(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		return putString(out, n, ex.Dump())
	})
}

// pypto_op_names_json lists the registered ops as a JSON array.
//
//export pypto_op_names_json
func pypto_op_names_json(out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error { return putString(out, n, mustJSON(core.OpNames())) })
}

// pypto_lowered_ops_json lists, as a JSON array, the ops the compiler can lower to the
// chip presets; the others run only on the "reference" device until their lowering lands.
//
//export pypto_lowered_ops_json
func pypto_lowered_ops_json(out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error { return putString(out, n, mustJSON(lower.LoweredOps())) })
}

// pypto_composite_ops_json lists, as a JSON array, the ops defined by a decomposition
// into other ops (softmax, layer_norm, ...).
//
//export pypto_composite_ops_json
func pypto_composite_ops_json(out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		var names []string
		for _, op := range core.OpNames() {
			if core.IsComposite(op) {
				names = append(names, op)
			}
		}
		return putString(out, n, mustJSON(names))
	})
}

// status runs f with the process checks and panic recovery every export needs.
func status(f func() error) C.uintptr_t { return C.uintptr_t(guard(f)) }

// putHandle stores a new handle for v in *out.
func putHandle(out *C.uintptr_t, v any) error {
	if out == nil {
		return core.Errorf(core.ValueError, "null output pointer")
	}
	*out = C.uintptr_t(newHandle(v))
	return nil
}

// putString stores a C copy of s (NUL-terminated) and its length.
func putString(out **C.char, n *C.size_t, s string) error {
	if out == nil {
		return core.Errorf(core.ValueError, "null output pointer")
	}
	p := C.CBytes(append([]byte(s), 0))
	*out = (*C.char)(p)
	if n != nil {
		*n = C.size_t(len(s))
	}
	return nil
}

func goString(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// ints reads n int64 values from C memory.
func ints(p *C.int64_t, n C.int32_t, what string) ([]int, error) {
	if n < 0 {
		return nil, core.Errorf(core.ValueError, "negative %s length %d", what, int(n))
	}
	out := make([]int, int(n))
	if n == 0 {
		return out, nil
	}
	if p == nil {
		return nil, core.Errorf(core.ValueError, "null %s pointer", what)
	}
	for i, v := range unsafe.Slice((*int64)(unsafe.Pointer(p)), int(n)) {
		out[i] = int(v)
	}
	return out, nil
}

// handles reads n handles from C memory.
func handles(p *C.uintptr_t, n C.int32_t, what string) ([]uintptr, error) {
	if n < 0 {
		return nil, core.Errorf(core.ValueError, "negative %s count %d", what, int(n))
	}
	out := make([]uintptr, int(n))
	if n == 0 {
		return out, nil
	}
	if p == nil {
		return nil, core.Errorf(core.ValueError, "null %s pointer", what)
	}
	for i, v := range unsafe.Slice((*uintptr)(unsafe.Pointer(p)), int(n)) {
		out[i] = v
	}
	return out, nil
}
