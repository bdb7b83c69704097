package device

import (
	"encoding/binary"
	"fmt"
	"math"

	"pypto/dtype"
	"pypto/internal/checked"
)

// A reducer combines src into dst elementwise (dst = dst op src), rounding each result
// to the dtype as the chip's vector unit does: float32 in float32 arithmetic; float16
// and bfloat16 computed in float32 and rounded once to the element type (float32 holds
// more than twice their precision, so this equals the correctly rounded half result);
// integers wrap.
type reducer func(dst, src []byte)

// ReduceOps are the reductions collectives accept.
var ReduceOps = []string{"sum", "prod", "max", "min"}

func float32Op(op string) (func(a, b float32) float32, error) {
	switch op {
	case "sum":
		return func(a, b float32) float32 { return a + b }, nil
	case "prod":
		return func(a, b float32) float32 { return a * b }, nil
	case "max":
		// NaN wins (the first NaN operand, as numpy's maximum / minimum); of equal values (-0 and +0) the
		// accumulated one stays, as numpy keeps its first operand.
		return func(a, b float32) float32 {
			if a != a {
				return a
			}
			if b != b {
				return b
			}
			if b > a {
				return b
			}
			return a
		}, nil
	case "min":
		return func(a, b float32) float32 {
			if a != a {
				return a
			}
			if b != b {
				return b
			}
			if b < a {
				return b
			}
			return a
		}, nil
	}
	return nil, fmt.Errorf("unknown reduction %q (accepted: sum, prod, max, min)", op)
}

func intOp(op string) func(a, b int64) int64 {
	switch op {
	case "sum":
		return func(a, b int64) int64 { return a + b }
	case "prod":
		return func(a, b int64) int64 { return a * b }
	case "max":
		return func(a, b int64) int64 { return max(a, b) }
	}
	return func(a, b int64) int64 { return min(a, b) }
}

func newReducer(d dtype.DType, op string) (reducer, error) {
	f, err := float32Op(op)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch d {
	case dtype.Float32:
		return func(dst, src []byte) {
			for i := 0; i+4 <= len(dst); i += 4 {
				v := f(math.Float32frombits(le.Uint32(dst[i:])), math.Float32frombits(le.Uint32(src[i:])))
				le.PutUint32(dst[i:], math.Float32bits(v))
			}
		}, nil
	case dtype.Float16, dtype.BFloat16:
		dec, enc := dtype.Float16ToFloat32, dtype.Float32ToFloat16
		if d == dtype.BFloat16 {
			dec, enc = dtype.BFloat16ToFloat32, dtype.Float32ToBFloat16
		}
		return func(dst, src []byte) {
			for i := 0; i+2 <= len(dst); i += 2 {
				le.PutUint16(dst[i:], enc(f(dec(le.Uint16(dst[i:])), dec(le.Uint16(src[i:])))))
			}
		}, nil
	case dtype.Int32:
		g := intOp(op)
		return func(dst, src []byte) {
			for i := 0; i+4 <= len(dst); i += 4 {
				le.PutUint32(dst[i:], uint32(int32(g(int64(int32(le.Uint32(dst[i:]))), int64(int32(le.Uint32(src[i:])))))))
			}
		}, nil
	case dtype.Int8:
		g := intOp(op)
		return func(dst, src []byte) {
			for i := range dst {
				dst[i] = byte(int8(g(int64(int8(dst[i])), int64(int8(src[i])))))
			}
		}, nil
	}
	return nil, fmt.Errorf("collectives do not reduce %s tensors (accepted: float32, float16, bfloat16, int32, int8)", d.LongName())
}

// hostBuffer allocates a collective's buffer of n bytes after checking it against the
// host's memory limit, so a huge message is an error, not a fatal out-of-memory.
func hostBuffer(n int, what string) ([]byte, error) {
	if err := checked.Host(n, func() string { return what }); err != nil {
		return nil, err
	}
	return make([]byte, n), nil
}
