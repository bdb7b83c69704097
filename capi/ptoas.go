package main

/*
#include <stdint.h>
#include <stddef.h>
*/
import "C"

import (
	"encoding/base64"
	"encoding/json"
	"unsafe"

	"pypto/core"
	"pypto/dtype"
	"pypto/lower"
	"pypto/session"
)

// PTO-AS export and import (session/ptoas.go).

// pypto_executor_export_pto writes the executor's last program as PTO-AS: JSON
// {"files": {name: base64 bytes}, "kernels": [...], "manifest": {...}}.
//
//export pypto_executor_export_pto
func pypto_executor_export_pto(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		exp, err := ex.ExportPTO()
		if err != nil {
			return err
		}
		files := map[string]string{}
		for name, data := range exp.Files {
			files[name] = base64.StdEncoding.EncodeToString(data)
		}
		return putString(out, n, mustJSON(map[string]any{"files": files, "kernels": exp.Kernels, "manifest": exp.Manifest}))
	})
}

// pypto_kernel_export_pto writes a block kernel's programs (PTO text) as PTO-AS for a
// device: JSON {"auto", "manual": module text, "functions", "queues", "flags"}.
//
//export pypto_kernel_export_pto
func pypto_kernel_export_pto(name, text *C.char, vectors C.int32_t, device *C.char, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		auto, manual, err := session.Default().ExportProgramsPTO(goString(name), goString(text), int(vectors), goString(device))
		if err != nil {
			return err
		}
		return putString(out, n, mustJSON(map[string]any{"auto": auto.Text, "manual": manual.Text, "functions": auto.Functions,
			"queues": auto.Queues, "flags": manual.Flags}))
	})
}

// pypto_pto_program_load reads an export's directory in one form into a program
// handle.
//
//export pypto_pto_program_load
func pypto_pto_program_load(dir, form, device *C.char, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		pp, err := session.Default().LoadPTOProgram(goString(dir), goString(form), goString(device))
		if err != nil {
			return err
		}
		return putHandle(out, pp)
	})
}

// pypto_pto_program_info describes a loaded program: JSON {"chip", "inputs",
// "outputs" (each {"name", "dtype", "shape"}), "tasks"}.
//
//export pypto_pto_program_info
func pypto_pto_program_info(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		pp, err := lookup[*lower.PTOProgram](uintptr(h), "PTO program")
		if err != nil {
			return err
		}
		return putString(out, n, mustJSON(map[string]any{"chip": pp.Chip().Name, "inputs": pp.Inputs(), "outputs": pp.Outputs(), "tasks": len(pp.Tasks())}))
	})
}

// pypto_pto_program_run runs a loaded program on input tensors and stores its output
// tensors; report receives the run's statistics as JSON.
//
//export pypto_pto_program_run
func pypto_pto_program_run(h C.uintptr_t, inputs *C.uintptr_t, n C.int32_t, outputs *C.uintptr_t, m C.int32_t, maxSteps C.int64_t, report **C.char, rn *C.size_t) C.uintptr_t {
	return status(func() error {
		pp, err := lookup[*lower.PTOProgram](uintptr(h), "PTO program")
		if err != nil {
			return err
		}
		if int(m) != len(pp.Outputs()) {
			return core.Errorf(core.ValueError, "the program returns %d outputs, the caller's buffer holds %d", len(pp.Outputs()), int(m))
		}
		ih, err := handles(inputs, n, "inputs")
		if err != nil {
			return err
		}
		ins, err := tensors(ih)
		if err != nil {
			return err
		}
		if len(ins) != len(pp.Inputs()) {
			return core.Errorf(core.ValueError, "the program takes %d inputs, got %d", len(pp.Inputs()), len(ins))
		}
		var bufs [][]byte
		for i, t := range ins {
			want := pp.Inputs()[i]
			if err := session.Default().Realize(t); err != nil {
				return err
			}
			typ := t.Type()
			if typ.DType.LongName() != want.DType || typ.Shape.NumElements() != want.Elems {
				return core.Errorf(core.ValueError, "input %d (%s) is %s; the program takes %s of %d elements", i, want.Name, typ, want.DType, want.Elems)
			}
			bufs = append(bufs, t.Data())
		}
		res, st, err := session.RunPTOProgram(pp, bufs, int64(maxSteps))
		if err != nil {
			return err
		}
		dst := unsafe.Slice(outputs, int(m))
		for i, b := range pp.Outputs() {
			d, err := dtype.Parse(b.DType)
			if err != nil {
				return core.Errorf(core.InternalError, "output %d dtype %q: %v", i, b.DType, err)
			}
			t, err := session.FromBytes(core.TensorType{DType: d, Shape: core.Shape(b.Shape)}, res[i])
			if err != nil {
				return err
			}
			dst[i] = C.uintptr_t(newHandle(t))
		}
		data, _ := json.Marshal(map[string]any{"cycles": st.Cycles, "seconds": st.Seconds, "kernel_cycles": st.KernelCycles, "tasks": st.Tasks})
		return putString(report, rn, string(data))
	})
}

// pypto_pto_kernel_read reads a PTO-AS kernel file as block-kernel programs (JSON of
// session.PTOKernelSource); blocks > 0 overrides the file's block count.
//
//export pypto_pto_kernel_read
func pypto_pto_kernel_read(path *C.char, blocks C.int32_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		ks, err := session.ReadPTOKernel(goString(path), int(blocks))
		if err != nil {
			return err
		}
		return putString(out, n, mustJSON(ks))
	})
}
