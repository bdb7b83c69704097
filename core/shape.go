// Package core is the Tensor Graph: dtypes and shapes of values, the op registry, a
// graph builder, the verifier, the text form and the reference interpreter that every
// compiled path is checked against.
package core

import (
	"fmt"
	"sort"
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

// TensorType is the static type of a value: element dtype, shape and layout.
//
// A symbolic type (one whose dims mention p.symbol names) lists every dim in Dims, and
// Shape holds the constant dims with -1 where Dims[i] is symbolic, so code that needs
// only the rank or the constant dims keeps working; a concrete type has Dims == nil.
// Build symbolic types with SymbolicType, which keeps the two in step. Symbolic types
// live in the Tensor Graph that p.compile traces; the compiler (lower/) sees only the
// concrete graphs that Specialize makes from it.
type TensorType struct {
	DType  dtype.DType
	Shape  Shape
	Dims   []Dim  // nil unless the type is symbolic
	Layout Layout // ND unless tagged (see Layout)
}

// String prints the type as f16[2,3], f16[batch,seq*2]; a layout other than ND follows
// an '@': f16[1,8,8,3]@NHWC, f16[4,2,16,16]@NZ(30,60).
func (t TensorType) String() string {
	s := t.DType.String() + t.ShapeString()
	if !t.Layout.IsND() {
		s += "@" + t.Layout.String()
	}
	return s
}

// Equal reports whether two types are identical.
func (t TensorType) Equal(o TensorType) bool {
	if t.DType != o.DType || t.Layout != o.Layout || !t.Shape.Equal(o.Shape) || len(t.Dims) != len(o.Dims) || (t.Dims == nil) != (o.Dims == nil) {
		return false
	}
	for i := range t.Dims {
		if !t.Dims[i].Equal(o.Dims[i]) {
			return false
		}
	}
	return true
}

// Bytes is the size of a contiguous tensor of this type (meaningless when symbolic).
func (t TensorType) Bytes() int { return t.Shape.NumElements() * t.DType.Size() }

// ParseTensorType parses the String form (f16[2,3], f32[], f16[batch,seq+1]@NHWC).
func ParseTensorType(s string) (TensorType, error) {
	open := strings.IndexByte(s, '[')
	closing := strings.LastIndexByte(s, ']')
	if open < 0 || closing < open {
		return TensorType{}, fmt.Errorf("bad tensor type %q: want dtype[dims], e.g. f16[2,3]", s)
	}
	dt, err := dtype.Parse(s[:open])
	if err != nil {
		return TensorType{}, err
	}
	t, msg := typeFromText(dt, s[open+1:closing], strings.TrimSpace(s[closing+1:]))
	if msg != "" {
		return TensorType{}, fmt.Errorf("bad tensor type %q: %s", s, msg)
	}
	return t, nil
}

// typeFromText builds a type from the text between the brackets and what follows the
// closing bracket ("" or "@LAYOUT"), returning what is wrong instead when it is.
func typeFromText(dt dtype.DType, body, suffix string) (TensorType, string) {
	dims, _, err := parseDimsAt(body, true)
	if err != nil {
		return TensorType{}, err.Error()
	}
	return typeWithLayout(dt, dims, suffix)
}

func typeWithLayout(dt dtype.DType, dims []Dim, suffix string) (TensorType, string) {
	var err error
	layout := Layout{}
	if suffix != "" {
		name, ok := strings.CutPrefix(suffix, "@")
		if !ok {
			return TensorType{}, fmt.Sprintf("unexpected %q after the shape (a layout is written @NHWC)", suffix)
		}
		if layout, err = ParseLayout(name); err != nil {
			return TensorType{}, err.Error()
		}
	}
	t := SymbolicType(dt, dims)
	t.Layout = layout
	return t, ""
}

// SymbolicType is the type of dtype dt with the given dims, concrete (Dims nil) when
// every dim is a constant.
func SymbolicType(dt dtype.DType, dims []Dim) TensorType {
	shape := make(Shape, len(dims))
	symbolic := false
	for i, d := range dims {
		if v, ok := d.Const(); ok {
			shape[i] = v
		} else {
			shape[i] = -1
			symbolic = true
		}
	}
	t := TensorType{DType: dt, Shape: shape}
	if symbolic {
		t.Dims = append([]Dim(nil), dims...)
	}
	return t
}

// IsSymbolic reports whether some dim of t is a symbolic expression.
func (t TensorType) IsSymbolic() bool { return t.Dims != nil }

// Dim returns axis i's size as a Dim.
func (t TensorType) Dim(i int) Dim {
	if t.Dims != nil {
		return t.Dims[i]
	}
	return DimConst(t.Shape[i])
}

// AllDims returns every axis's size as a Dim.
func (t TensorType) AllDims() []Dim {
	out := make([]Dim, len(t.Shape))
	for i := range out {
		out[i] = t.Dim(i)
	}
	return out
}

// ShapeString prints the shape with its symbolic dims: [batch,seq*2,1024].
func (t TensorType) ShapeString() string {
	if t.Dims == nil {
		return t.Shape.String()
	}
	return DimsString(t.Dims)
}

// DimsString prints dims as [batch,seq*2,1024].
func DimsString(dims []Dim) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// WithDims returns t with its shape replaced by dims (layout and dtype kept).
func (t TensorType) WithDims(dims []Dim) TensorType {
	out := SymbolicType(t.DType, dims)
	out.Layout = t.Layout
	return out
}

// Symbols lists the symbols t's dims mention, sorted.
func (t TensorType) Symbols() []string {
	set := map[string]bool{}
	for _, d := range t.Dims {
		d.collectSymbols(set)
	}
	return sortedKeys(set)
}

// Substitute replaces symbols by the values given, giving a concrete type when every
// symbol has one.
func (t TensorType) Substitute(values map[string]int) TensorType {
	if t.Dims == nil {
		return t.clone()
	}
	dims := make([]Dim, len(t.Dims))
	for i, d := range t.Dims {
		dims[i] = d.Substitute(values)
	}
	return t.WithDims(dims)
}

func (t TensorType) clone() TensorType {
	c := t
	c.Shape = t.Shape.Clone()
	if t.Dims != nil {
		c.Dims = append([]Dim(nil), t.Dims...)
	}
	return c
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Clone returns a copy of t that shares no slices with it.
func (t TensorType) Clone() TensorType { return t.clone() }

// Check returns what makes t an invalid type (what Verify would reject), or "".
func (t TensorType) Check() string { return checkType(t) }
