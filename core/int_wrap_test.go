package core

import (
	"testing"

	"pypto/dtype"
)

// Integer products past 2**53 wrap exactly (numpy's int32 multiply).
func TestInt32ProductsWrapExactly(t *testing.T) {
	tt := TensorType{DType: dtype.Int32, Shape: Shape{2}}
	a, b := NewArray(tt), NewArray(tt)
	a.Data[0], b.Data[0] = 0x7fffffff, 0x7ffffff1
	a.Data[1], b.Data[1] = -987654321, 0x1b873593
	out := NewArray(tt)
	d, _ := LookupOp("mul")
	d.Eval([]*Array{a, b}, Attrs{}, out)
	if out.Data[0] != 15 || out.Data[1] != 1179008349 {
		t.Fatalf("int32 products %v, want [15 1179008349] (numpy's)", out.Data)
	}
}
