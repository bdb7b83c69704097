package session

import (
	"testing"
	"unsafe"

	"pypto/core"
	"pypto/dtype"
)

// Tensors larger than the machine's memory are refused before they are allocated,
// whether created zero-filled or copied from a broadcast host view (stride 0).
func TestHugeTensorsAreMemoryErrors(t *testing.T) {
	huge := core.TensorType{DType: dtype.Float32, Shape: core.Shape{1 << 20, 1 << 20}}
	if _, err := Zeros(huge); kindOf(err) != core.MemoryError {
		t.Errorf("Zeros(%v) = %v, want a MemoryError", huge, err)
	}
	one := float32(1)
	_, err := FromHost(dtype.Float32, []int{1 << 40}, []int{0}, unsafe.Pointer(&one))
	if kindOf(err) != core.MemoryError {
		t.Errorf("FromHost of a broadcast view = %v, want a MemoryError", err)
	}
	if _, err := NewPlaceholder(core.TensorType{DType: dtype.Int8, Shape: core.Shape{1 << 31, 1 << 31, 1 << 31}}); kindOf(err) != core.MemoryError {
		t.Errorf("a placeholder whose size overflows = %v, want a MemoryError", err)
	}
}

func kindOf(err error) core.ErrorKind {
	if ce, ok := err.(*core.Error); ok {
		return ce.Kind
	}
	return ""
}
