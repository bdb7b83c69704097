package main

/*
#include <stdint.h>
*/
import "C"

import (
	"unsafe"

	"pypto/core"
	"pypto/session"
)

// pypto_track returns a tensor gradients can be taken with respect to: a concrete one
// gives a new tensor of the same data, a placeholder is marked itself (see
// session.Track); *tracked reports whether a tensor already is.
//
//export pypto_track
func pypto_track(h C.uintptr_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		return putHandle(out, session.Track(t))
	})
}

// pypto_detach realises a tensor and returns one of the same data through which no
// gradient flows.
//
//export pypto_detach
func pypto_detach(h C.uintptr_t, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		d, err := session.Default().Detach(t)
		if err != nil {
			return err
		}
		return putHandle(out, d)
	})
}

//export pypto_is_tracked
func pypto_is_tracked(h C.uintptr_t, tracked *C.int32_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		*tracked = 0
		if session.IsTracked(t) {
			*tracked = 1
		}
		return nil
	})
}

// pypto_grad writes into grads[0:n] the gradient of out with respect to each of
// wrt[0:n] (pending tensors; 0 where out does not depend on it). seed is the
// cotangent of out, or 0 for ones (a single-element out).
//
//export pypto_grad
func pypto_grad(out C.uintptr_t, wrt *C.uintptr_t, n C.int32_t, seed C.uintptr_t, locJSON *C.char, grads *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		o, err := lookup[*session.Tensor](uintptr(out), "output")
		if err != nil {
			return err
		}
		hs, err := handles(wrt, n, "wrt")
		if err != nil {
			return err
		}
		ws, err := tensors(hs)
		if err != nil {
			return err
		}
		var s *session.Tensor
		if seed != 0 {
			if s, err = lookup[*session.Tensor](uintptr(seed), "gradient"); err != nil {
				return err
			}
		}
		loc, err := decodeLocation(goString(locJSON))
		if err != nil {
			return err
		}
		gs, err := session.Grad(o, ws, s, loc)
		if err != nil {
			return err
		}
		if n > 0 {
			dst := unsafe.Slice((*C.uintptr_t)(unsafe.Pointer(grads)), int(n))
			for i, g := range gs {
				dst[i] = 0
				if g != nil {
					dst[i] = C.uintptr_t(newHandle(g))
				}
			}
		}
		return nil
	})
}

// pypto_realize_all computes the pending tensors among hs[0:n] as one program.
//
//export pypto_realize_all
func pypto_realize_all(hs *C.uintptr_t, n C.int32_t) C.uintptr_t {
	return status(func() error {
		ids, err := handles(hs, n, "tensors")
		if err != nil {
			return err
		}
		ts, err := tensors(ids)
		if err != nil {
			return err
		}
		return session.Default().RealizeAll(ts)
	})
}

// pypto_differentiable_ops_json lists, as a JSON array, the ops gradients flow through
// (a VJP rule of their own, or a decomposition into such ops).
//
//export pypto_differentiable_ops_json
func pypto_differentiable_ops_json(out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		var names []string
		for _, op := range core.OpNames() {
			if ok, _ := core.Differentiable(op); ok {
				names = append(names, op)
			}
		}
		return putString(out, n, mustJSON(names))
	})
}
