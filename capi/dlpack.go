package main

/*
#include <stdint.h>
#include <stdlib.h>

// The DLPack ABI (version 0.8, the unversioned DLManagedTensor every consumer accepts):
// the layout is the standard's, so numpy.from_dlpack and torch.from_dlpack read it.
typedef struct { int32_t device_type; int32_t device_id; } pypto_dl_device;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } pypto_dl_dtype;
typedef struct {
	void *data;
	pypto_dl_device device;
	int32_t ndim;
	pypto_dl_dtype dtype;
	int64_t *shape;
	int64_t *strides;
	uint64_t byte_offset;
} pypto_dl_tensor;
typedef struct pypto_dl_managed {
	pypto_dl_tensor dl_tensor;
	void *manager_ctx;
	void (*deleter)(struct pypto_dl_managed *self);
} pypto_dl_managed;

extern void pypto_dlpack_deleter(pypto_dl_managed *m);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"

	"pypto/core"
	"pypto/dtype"
	"pypto/session"
)

// DLPack's type codes and the CPU device (dlpack.h's DLDataTypeCode, DLDeviceType).
const (
	dlInt      = 0
	dlUInt     = 1
	dlFloat    = 2
	dlBfloat   = 4
	dlBool     = 6
	dlCPU      = 1
	maxDLDims  = 64
	dlBitsByte = 8
)

// export is what a DLPack capsule of a tensor holds on the Go side until its consumer
// calls the deleter: the tensor (its bytes, and their external owner if any) and the pin
// that lets C code keep a pointer to Go memory.
type export struct {
	t      *session.Tensor
	pinner runtime.Pinner
}

// pypto_from_external wraps ndim-d host memory at ptr (C-contiguous, dtype code) as a
// concrete tensor without copying it. The caller keeps the memory valid until id is
// returned by pypto_externals_released.
//
//export pypto_from_external
func pypto_from_external(code C.int32_t, ndim C.int32_t, shape *C.int64_t, ptr unsafe.Pointer, id C.uint64_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		sh, err := ints(shape, ndim, "shape")
		if err != nil {
			return err
		}
		t, err := session.FromExternal(dtype.DType(code), sh, ptr, uint64(id))
		if err != nil {
			return err
		}
		return putHandle(out, t)
	})
}

// pypto_externals_released gives the ids of external buffers nothing in the library
// refers to any more (a C array of *n ids the caller frees with pypto_string_free, NULL
// when there are none) and the bytes of external memory still referred to. collect != 0
// runs the garbage collector first.
//
//export pypto_externals_released
func pypto_externals_released(collect C.int32_t, out **C.uint64_t, n *C.int64_t, live *C.int64_t) C.uintptr_t {
	return status(func() error {
		if out == nil || n == nil || live == nil {
			return core.Errorf(core.ValueError, "null output pointer")
		}
		ids, bytes := session.ReleasedExternals(collect != 0)
		*out, *n, *live = nil, C.int64_t(len(ids)), C.int64_t(bytes)
		if len(ids) > 0 {
			buf := (*C.uint64_t)(C.malloc(C.size_t(len(ids)) * 8))
			dst := unsafe.Slice(buf, len(ids))
			for i, id := range ids {
				dst[i] = C.uint64_t(id)
			}
			*out = buf
		}
		return nil
	})
}

// pypto_dlpack_export realises the tensor and describes its bytes as a DLPack
// DLManagedTensor (C memory, *out) that shares them: no copy. The consumer calls its
// deleter once it no longer needs the bytes.
//
//export pypto_dlpack_export
func pypto_dlpack_export(h C.uintptr_t, out *unsafe.Pointer) C.uintptr_t {
	return status(func() error {
		if out == nil {
			return core.Errorf(core.ValueError, "null output pointer")
		}
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		if err := session.Default().Realize(t); err != nil {
			return err
		}
		typ := t.Type()
		if len(typ.Shape) > maxDLDims {
			return core.Errorf(core.ShapeError, "a %d-d tensor has more dimensions than DLPack consumers take (%d)", len(typ.Shape), maxDLDims)
		}
		code, ok := dlCode(typ.DType)
		if !ok {
			return core.Errorf(core.DTypeError, "%s has no DLPack type code", typ.DType.LongName())
		}
		ex := &export{t: t}
		data := t.Data()
		var ptr unsafe.Pointer
		if len(data) > 0 {
			ptr = unsafe.Pointer(unsafe.SliceData(data))
			ex.pinner.Pin(ptr)
		}
		// One C block: the managed tensor, the export's handle, then the shape.
		size := C.size_t(unsafe.Sizeof(C.pypto_dl_managed{})) + C.size_t(8*(1+max(len(typ.Shape), 1)))
		m := (*C.pypto_dl_managed)(C.calloc(1, size))
		ctx := (*C.uintptr_t)(unsafe.Add(unsafe.Pointer(m), unsafe.Sizeof(*m)))
		*ctx = C.uintptr_t(cgo.NewHandle(ex))
		shape := unsafe.Slice((*C.int64_t)(unsafe.Add(unsafe.Pointer(ctx), 8)), max(len(typ.Shape), 1))
		for i, d := range typ.Shape {
			shape[i] = C.int64_t(d)
		}
		m.dl_tensor.data = ptr
		m.dl_tensor.device = C.pypto_dl_device{device_type: dlCPU}
		m.dl_tensor.ndim = C.int32_t(len(typ.Shape))
		m.dl_tensor.dtype = C.pypto_dl_dtype{code: C.uint8_t(code), bits: C.uint8_t(typ.DType.Size() * dlBitsByte), lanes: 1}
		m.dl_tensor.shape = &shape[0]
		m.dl_tensor.strides = nil // compact row-major
		m.manager_ctx = unsafe.Pointer(ctx)
		m.deleter = (*[0]byte)(C.pypto_dlpack_deleter)
		*out = unsafe.Pointer(m)
		return nil
	})
}

// pypto_dlpack_deleter releases a DLManagedTensor made by pypto_dlpack_export: the
// consumer (or an unconsumed capsule) calls it, from any thread.
//
//export pypto_dlpack_deleter
func pypto_dlpack_deleter(m *C.pypto_dl_managed) {
	defer func() { _ = recover() }() // a panic here must not abort the host process
	if m == nil {
		return
	}
	h := cgo.Handle(*(*C.uintptr_t)(m.manager_ctx))
	if ex, ok := h.Value().(*export); ok {
		ex.pinner.Unpin()
	}
	h.Delete()
	C.free(unsafe.Pointer(m))
}

func dlCode(d dtype.DType) (int, bool) {
	switch d {
	case dtype.Float32, dtype.Float16:
		return dlFloat, true
	case dtype.BFloat16:
		return dlBfloat, true
	case dtype.Int8, dtype.Int32, dtype.Int64:
		return dlInt, true
	case dtype.Bool:
		return dlBool, true
	}
	return 0, false
}
