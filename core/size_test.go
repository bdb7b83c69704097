package core

import (
	"math"
	"strings"
	"testing"

	"pypto/dtype"
)

// Results larger than this machine's memory, or whose size overflows, are MemoryErrors
// at inference: the op that made them is named with the size and the limit.
func TestHugeResultsAreMemoryErrors(t *testing.T) {
	x := TensorType{DType: dtype.Float32, Shape: Shape{4, 8}}
	row := TensorType{DType: dtype.Float32, Shape: Shape{1, 8}}
	big := TensorType{DType: dtype.Float32, Shape: Shape{math.MaxInt / 2, 0}}
	for _, c := range []struct {
		name  string
		op    string
		in    []TensorType
		attrs Attrs
		want  string
	}{
		{"pad by 2^40", "pad", []TensorType{x}, Attrs{"pads": []int64{0, 1 << 40, 0, 0}}, "the result of pad, of type f32[1099511627780,8], needs 32 TiB"},
		{"pad that wraps", "pad", []TensorType{x}, Attrs{"pads": []int64{math.MaxInt64, math.MaxInt64, 0, 0}}, "overflows a 64-bit size"},
		{"huge broadcast", "broadcast_to", []TensorType{row}, Attrs{"shape": []int64{1 << 40, 8}}, "the result of broadcast_to, of type f32[1099511627776,8], needs 32 TiB"},
		{"reshape that wraps", "reshape", []TensorType{big}, Attrs{"shape": []int64{1 << 32, 1 << 32, 0}}, "more elements than a 64-bit size can count"},
		{"concat that wraps", "concat", []TensorType{big, big, big}, Attrs{"axis": int64(0)}, "overflow a 64-bit size"},
		{"iota", "iota", nil, Attrs{"shape": []int64{1 << 20, 1 << 20}}, "needs 4 TiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := InferOp(c.op, c.in, c.attrs)
			if err == nil {
				t.Fatalf("%s accepted", c.op)
			}
			if err.Kind != MemoryError || !strings.Contains(err.Message, c.want) {
				t.Fatalf("got %s: %s; want a MemoryError containing %q", err.Kind, err.Message, c.want)
			}
		})
	}
}

// A graph parsed with a value too large for this machine verifies (the text is valid
// on any machine) but the reference interpreter refuses it before allocating.
func TestInterpretRefusesHugeArrays(t *testing.T) {
	g, err := Parse("graph g(%x: f32[1099511627776]) {\n  return %x\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	_, ierr := Interpret(g, []*Array{{Type: g.Nodes[0].Type}})
	ce, ok := ierr.(*Error)
	if !ok || ce.Kind != MemoryError || !strings.Contains(ce.Message, "reference interpreter's float64 array") {
		t.Fatalf("Interpret = %v, want a MemoryError about its array", ierr)
	}
}
