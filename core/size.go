package core

import (
	"errors"

	"pypto/internal/checked"
)

// A value the graph describes is held whole somewhere when the program runs: in host
// memory as a tensor's bytes, in the reference interpreter as float64 values, in the
// device's GM. Types are checked when they are made (shape inference, parsing,
// tensors created with data) against what this machine can hold, so that a shape
// like [1<<20, 1<<20] is an error at the line that wrote it, not a fatal
// out-of-memory error (or an overflowed size) when something allocates it. The
// device's own memory (HBM) is checked when a program is compiled for a chip.

// MemoryError is the kind of an allocation refused because it exceeds a limit.
const MemoryError ErrorKind = "MemoryError"

// CheckHostSize reports a concrete type whose bytes would not fit in this machine's
// memory (or whose size overflows an int) as a MemoryError naming the size and the
// limit. Symbolic types are checked when their sizes are bound.
func CheckHostSize(t TensorType) *Error {
	return checkElems(t, t.DType.Size(), func() string { return "a tensor of type " + t.String() })
}

// checkResultSize is CheckHostSize for the result of an op.
func checkResultSize(op string, t TensorType) *Error {
	return checkElems(t, t.DType.Size(), func() string { return "the result of " + op + ", of type " + t.String() + "," })
}

// referenceElemBytes is what the reference interpreter holds per element (float64).
const referenceElemBytes = 8

// checkReferenceSize is CheckHostSize for the reference interpreter's arrays.
func checkReferenceSize(t TensorType) *Error {
	return checkElems(t, referenceElemBytes, func() string {
		return "the reference interpreter's float64 array for a tensor of type " + t.String() + ","
	})
}

func checkElems(t TensorType, elem int, what func() string) *Error {
	if t.IsSymbolic() {
		return nil
	}
	b, ok := checked.Bytes(t.Shape, elem)
	if !ok {
		b = -1
	}
	if err := checked.Host(b, what); err != nil {
		return MemoryErrorOf(err)
	}
	return nil
}

// MemoryErrorOf turns a refused allocation (a *checked.LimitError) into the MemoryError
// users see, with what to do about it; other errors become InternalErrors.
func MemoryErrorOf(err error) *Error {
	var le *checked.LimitError
	if !errors.As(err, &le) {
		return Errorf(InternalError, "%v", err)
	}
	return Errorf(MemoryError, "%v", le).
		Suggest("split the work into smaller tensors (a loop over slices), or use a smaller dtype")
}
