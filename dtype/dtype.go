// Package dtype defines the element types PyPTO tensors and tiles hold, and the exact
// numeric conversions between them. It is the one leaf package shared by core (the
// Tensor Graph), isa (PTO programs) and device (the simulator), which must agree
// bit for bit on how a value is stored.
package dtype

import (
	"fmt"
	"strings"
)

// DType is an element type. The zero value is Invalid so that a forgotten field is
// caught by verifiers instead of silently meaning float32.
type DType uint8

const (
	Invalid DType = iota
	Float32
	Float16
	BFloat16
	Int8
	Int32
	Bool
	// Int64 is numpy's default integer. Tensors store it in 8 bytes on the host; the
	// chip computes it in int32 (session narrows a program's int64 values, checking
	// that inputs fit, and widens its results), so it never reaches isa or device.
	Int64
)

// All lists every valid dtype in a stable order (used by tests and the C ABI).
var All = []DType{Float32, Float16, BFloat16, Int8, Int32, Bool, Int64}

var names = [...]string{
	Invalid:  "invalid",
	Float32:  "f32",
	Float16:  "f16",
	BFloat16: "bf16",
	Int8:     "i8",
	Int32:    "i32",
	Bool:     "bool",
	Int64:    "i64",
}

// longNames are the numpy-style spellings accepted by Parse and shown to Python users.
var longNames = [...]string{
	Invalid:  "invalid",
	Float32:  "float32",
	Float16:  "float16",
	BFloat16: "bfloat16",
	Int8:     "int8",
	Int32:    "int32",
	Bool:     "bool",
	Int64:    "int64",
}

var sizes = [...]int{Invalid: 0, Float32: 4, Float16: 2, BFloat16: 2, Int8: 1, Int32: 4, Bool: 1, Int64: 8}

// String is the short name used in every text form (f16, bf16, ...).
func (d DType) String() string {
	if int(d) < len(names) {
		return names[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// LongName is the numpy-style name (float16, bfloat16, ...).
func (d DType) LongName() string {
	if int(d) < len(longNames) {
		return longNames[d]
	}
	return d.String()
}

// Size is the storage size of one element in bytes.
func (d DType) Size() int {
	if int(d) < len(sizes) {
		return sizes[d]
	}
	return 0
}

// Valid reports whether d is one of the defined dtypes.
func (d DType) Valid() bool { return d > Invalid && int(d) < len(names) }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == Float32 || d == Float16 || d == BFloat16 }

// IsInt reports whether d is a signed integer type.
func (d DType) IsInt() bool { return d == Int8 || d == Int32 || d == Int64 }

// Parse accepts both the short (f16) and the long (float16) spelling, case-insensitively.
func Parse(s string) (DType, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	for _, d := range All {
		if l == names[d] || l == longNames[d] {
			return d, nil
		}
	}
	switch l {
	case "half", "fp16":
		return Float16, nil
	case "float", "fp32":
		return Float32, nil
	case "bfloat", "bf", "fp_bf16":
		return BFloat16, nil
	}
	return Invalid, fmt.Errorf("unknown dtype %q (known: float32, float16, bfloat16, int8, int32, int64, bool)", s)
}

// MarshalText prints a dtype by its long name in JSON.
func (d DType) MarshalText() ([]byte, error) { return []byte(d.LongName()), nil }
