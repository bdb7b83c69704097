package core

import "pypto/dtype"

// Array is a host tensor in the reference interpreter: values are held as float64,
// which represents every supported dtype exactly, and are always rounded to Type.DType.
type Array struct {
	Type TensorType
	Data []float64
}

// NewArray returns a zero-filled array.
func NewArray(t TensorType) *Array {
	return &Array{Type: t.clone(), Data: make([]float64, t.Shape.NumElements())}
}

// ArrayFromBytes decodes a contiguous little-endian buffer.
func ArrayFromBytes(t TensorType, buf []byte) *Array {
	return &Array{Type: t.clone(), Data: dtype.Decode(t.DType, buf, t.Shape.NumElements())}
}

// Bytes encodes the array as a contiguous little-endian buffer.
func (a *Array) Bytes() []byte { return dtype.Encode(a.Type.DType, a.Data) }
