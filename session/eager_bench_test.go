package session

import (
	"testing"
	"unsafe"

	"pypto/core"
)

// BenchmarkEagerSmallAdd is the eager path of a 4x8 float32 add on the a2 preset, as
// Python drives it: build the pending op, realise it (graph build, compile-cache hit,
// device run) and copy the result out.
func BenchmarkEagerSmallAdd(b *testing.B) {
	s := New(Lowering())
	x, y := seq(32, 1), seq(32, 0.5)
	tx, err := FromHost(f32Type().DType, []int{4, 8}, nil, unsafe.Pointer(&x[0]))
	if err != nil {
		b.Fatal(err)
	}
	ty, err := FromHost(f32Type().DType, []int{4, 8}, nil, unsafe.Pointer(&y[0]))
	if err != nil {
		b.Fatal(err)
	}
	out := make([]float32, 32)
	b.ReportAllocs()
	for b.Loop() {
		z, err := Apply("add", []*Tensor{tx, ty}, nil, core.Location{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CopyOut(z, unsafe.Pointer(&out[0]), nil); err != nil {
			b.Fatal(err)
		}
	}
	for i := range out {
		if out[i] != x[i]+y[i] {
			b.Fatalf("element %d: %v, want %v", i, out[i], x[i]+y[i])
		}
	}
}

func BenchmarkApplyOnly(b *testing.B) {
	x := seq(32, 1)
	tx, _ := FromHost(f32Type().DType, []int{4, 8}, nil, unsafe.Pointer(&x[0]))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Apply("add", []*Tensor{tx, tx}, nil, core.Location{}); err != nil {
			b.Fatal(err)
		}
	}
}
