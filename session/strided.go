package session

import (
	"unsafe"

	"pypto/core"
	"pypto/dtype"
)

// Host buffers are described numpy-style: a pointer to element [0,...,0], the shape,
// and per-axis strides in bytes (possibly zero or negative). Go reads or writes such a
// buffer only during the call that receives it and never keeps the pointer.

// FromHost copies a strided host array into a new concrete tensor with contiguous Go
// memory. strides nil means C-contiguous.
func FromHost(dt dtype.DType, shape []int, strides []int, ptr unsafe.Pointer) (*Tensor, error) {
	t := core.TensorType{DType: dt, Shape: core.Shape(shape).Clone()}
	if err := checkType(t); err != nil {
		return nil, err
	}
	if err := checkStrides(t, strides, ptr); err != nil {
		return nil, err
	}
	data := make([]byte, t.Bytes())
	if len(data) > 0 {
		copyStrided(unsafe.Pointer(&data[0]), nil, ptr, strides, t.Shape, dt.Size())
	}
	return &Tensor{typ: t, kind: concrete, data: data}, nil
}

// CopyOut realises t and writes its value into a strided host buffer of the same shape.
// strides nil means C-contiguous.
func (s *Session) CopyOut(t *Tensor, ptr unsafe.Pointer, strides []int) error {
	if err := s.Realize(t); err != nil {
		return err
	}
	if err := checkStrides(t.typ, strides, ptr); err != nil {
		return err
	}
	data := t.Data()
	if len(data) > 0 {
		copyStrided(ptr, strides, unsafe.Pointer(&data[0]), nil, t.typ.Shape, t.typ.DType.Size())
	}
	return nil
}

func checkStrides(t core.TensorType, strides []int, ptr unsafe.Pointer) error {
	if strides != nil && len(strides) != len(t.Shape) {
		return core.Errorf(core.ValueError, "%d strides given for a %d-d tensor of shape %v", len(strides), len(t.Shape), t.Shape)
	}
	if ptr == nil && t.Shape.NumElements() > 0 {
		return core.Errorf(core.ValueError, "null data pointer for a non-empty tensor of shape %v", t.Shape)
	}
	return nil
}

// copyStrided copies a shape-sized array of elem-byte elements between two strided
// views. Strides are in bytes; nil means C-contiguous. Whole-buffer and whole-row
// copies are used where the layouts allow, element copies elsewhere.
func copyStrided(dst unsafe.Pointer, dstStrides []int, src unsafe.Pointer, srcStrides []int, shape core.Shape, elem int) {
	contig := contiguousBytes(shape, elem)
	ds := orContiguous(dstStrides, contig)
	ss := orContiguous(srcStrides, contig)
	n := shape.NumElements()
	if n == 0 {
		return
	}
	if sameStrides(ds, contig, shape) && sameStrides(ss, contig, shape) {
		copy(unsafe.Slice((*byte)(dst), n*elem), unsafe.Slice((*byte)(src), n*elem))
		return
	}
	nd := len(shape)
	inner, dIn, sIn := shape[nd-1], ds[nd-1], ss[nd-1]
	rowContig := dIn == elem && sIn == elem
	idx := make([]int, nd-1)
	dOff, sOff := 0, 0
	for {
		d, s := unsafe.Add(dst, dOff), unsafe.Add(src, sOff)
		if rowContig {
			copy(unsafe.Slice((*byte)(d), inner*elem), unsafe.Slice((*byte)(s), inner*elem))
		} else {
			copyElems(d, dIn, s, sIn, inner, elem)
		}
		// Advance the odometer over the outer axes.
		ax := nd - 2
		for ; ax >= 0; ax-- {
			idx[ax]++
			dOff += ds[ax]
			sOff += ss[ax]
			if idx[ax] < shape[ax] {
				break
			}
			dOff -= ds[ax] * shape[ax]
			sOff -= ss[ax] * shape[ax]
			idx[ax] = 0
		}
		if ax < 0 {
			return
		}
	}
}

// copyElems copies n elements with the given byte strides.
func copyElems(dst unsafe.Pointer, ds int, src unsafe.Pointer, ss int, n, elem int) {
	switch elem {
	case 1:
		for i := 0; i < n; i++ {
			*(*uint8)(unsafe.Add(dst, i*ds)) = *(*uint8)(unsafe.Add(src, i*ss))
		}
	case 2:
		for i := 0; i < n; i++ {
			*(*uint16)(unsafe.Add(dst, i*ds)) = *(*uint16)(unsafe.Add(src, i*ss))
		}
	case 4:
		for i := 0; i < n; i++ {
			*(*uint32)(unsafe.Add(dst, i*ds)) = *(*uint32)(unsafe.Add(src, i*ss))
		}
	default:
		for i := 0; i < n; i++ {
			copy(unsafe.Slice((*byte)(unsafe.Add(dst, i*ds)), elem), unsafe.Slice((*byte)(unsafe.Add(src, i*ss)), elem))
		}
	}
}

// contiguousBytes is the C-contiguous byte strides of shape.
func contiguousBytes(shape core.Shape, elem int) []int {
	st := shape.Strides()
	for i := range st {
		st[i] *= elem
	}
	return st
}

func orContiguous(given, contig []int) []int {
	if given == nil {
		return contig
	}
	return given
}

// sameStrides compares strides, ignoring axes of size 1 (whose stride never matters).
func sameStrides(a, b []int, shape core.Shape) bool {
	for i := range shape {
		if shape[i] != 1 && a[i] != b[i] {
			return false
		}
	}
	return true
}
