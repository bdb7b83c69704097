// Package core is the Tensor Graph: dtypes and shapes of values, the op registry, a
// graph builder, the verifier, the text form and the reference interpreter that every
// compiled path is checked against.
package core

import (
	"fmt"
	"strconv"
	"strings"

	"pypto/dtype"
)

// Shape is a list of dimension sizes; a 0-d shape is a scalar.
type Shape []int

// NumElements is the product of the dims (1 for a scalar).
func (s Shape) NumElements() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Equal reports whether two shapes have the same dims.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy that does not alias s.
func (s Shape) Clone() Shape { return append(Shape(nil), s...) }

// Strides returns the row-major (C-contiguous) strides in elements.
func (s Shape) Strides() []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

// String prints the shape as [2,3].
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TensorType is the static type of a value: element dtype and shape.
type TensorType struct {
	DType dtype.DType
	Shape Shape
}

// String prints the type as f16[2,3].
func (t TensorType) String() string { return t.DType.String() + t.Shape.String() }

// Equal reports whether two types are identical.
func (t TensorType) Equal(o TensorType) bool { return t.DType == o.DType && t.Shape.Equal(o.Shape) }

// Bytes is the size of a contiguous tensor of this type.
func (t TensorType) Bytes() int { return t.Shape.NumElements() * t.DType.Size() }

// ParseTensorType parses the String form (f16[2,3], f32[]).
func ParseTensorType(s string) (TensorType, error) {
	open := strings.IndexByte(s, '[')
	if open < 0 || !strings.HasSuffix(s, "]") {
		return TensorType{}, fmt.Errorf("bad tensor type %q: want dtype[dims], e.g. f16[2,3]", s)
	}
	dt, err := dtype.Parse(s[:open])
	if err != nil {
		return TensorType{}, err
	}
	body := s[open+1 : len(s)-1]
	shape := Shape{}
	if strings.TrimSpace(body) != "" {
		for _, f := range strings.Split(body, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || d < 0 {
				return TensorType{}, fmt.Errorf("bad dimension %q in tensor type %q", f, s)
			}
			shape = append(shape, d)
		}
	}
	return TensorType{DType: dt, Shape: shape}, nil
}
