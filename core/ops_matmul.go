package core

import (
	"runtime"
	"sync"

	"pypto/dtype"
)

func init() {
	Register(&OpDef{
		Name:  "matmul",
		Arity: 2,
		Attrs: []AttrSpec{{"transpose_a", false}, {"transpose_b", false}},
		Doc:   "2-D matrix product op(a) @ op(b), op = optional transpose; fp16/bf16/fp32 give their own dtype, int8 gives int32",
		Infer: inferMatmul,
		Eval:  evalMatmul,
	})
}

// MatmulResultDType is the dtype matmul produces for operands of dtype d: the cube
// accumulates in fp32 (int32 for int8) and the fixpipe rounds floats back to d.
func MatmulResultDType(d dtype.DType) dtype.DType {
	if d == dtype.Int8 {
		return dtype.Int32
	}
	return d
}

func inferMatmul(in []TensorType, attrs Attrs) (TensorType, *Error) {
	a, b := in[0], in[1]
	ta, tb := attrs.Bool("transpose_a", false), attrs.Bool("transpose_b", false)
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return TensorType{}, Errorf(ShapeError, "matmul: operands must be 2-D, got shapes %v and %v", a.Shape, b.Shape).
			Suggest("reshape the operands to 2-D matrices")
	}
	if a.DType != b.DType {
		return TensorType{}, Errorf(DTypeError, "matmul: operand dtypes differ: %s and %s", a.DType.LongName(), b.DType.LongName()).
			Suggest("cast both operands to the same dtype (e.g. float16) before the matmul")
	}
	switch a.DType {
	case dtype.Float16, dtype.BFloat16, dtype.Float32, dtype.Int8:
	default:
		return TensorType{}, Errorf(DTypeError, "matmul: dtype %s is not supported by the cube unit", a.DType.LongName()).
			Suggest("use float16, bfloat16, float32 or int8 operands")
	}
	m, ka := a.Shape[0], a.Shape[1]
	if ta {
		m, ka = ka, m
	}
	kb, n := b.Shape[0], b.Shape[1]
	if tb {
		kb, n = n, kb
	}
	if ka != kb {
		e := Errorf(ShapeError, "matmul: inner dimensions do not match: a has shape %v (k=%d), b has shape %v (k=%d)", a.Shape, ka, b.Shape, kb).
			Because("for a @ b the last dimension of a must equal the first dimension of b%s", transposeNote(ta, tb))
		if !tb && b.Shape[1] == ka {
			e.Suggest("b looks stored as [n, k]: pass transpose_b=True")
		}
		if tb && b.Shape[0] == ka {
			e.Suggest("b is already [k, n]: drop transpose_b=True")
		}
		if !ta && a.Shape[0] == kb {
			e.Suggest("a looks stored as [k, m]: pass transpose_a=True")
		}
		return TensorType{}, e
	}
	return TensorType{DType: MatmulResultDType(a.DType), Shape: Shape{m, n}}, nil
}

func transposeNote(ta, tb bool) string {
	switch {
	case ta && tb:
		return " (after transposing both operands)"
	case ta:
		return " (after transposing a)"
	case tb:
		return " (after transposing b)"
	}
	return ""
}

// evalMatmul accumulates in float64 and rounds once: the reference is the exact
// product, against which the device's fp32 accumulation is compared with a tolerance.
func evalMatmul(in []*Array, attrs Attrs, out *Array) {
	a, b := in[0], in[1]
	ta, tb := attrs.Bool("transpose_a", false), attrs.Bool("transpose_b", false)
	m, n := out.Type.Shape[0], out.Type.Shape[1]
	k := a.Type.Shape[1]
	if ta {
		k = a.Type.Shape[0]
	}
	// Rows of op(a) and columns of op(b) are packed contiguous, and row blocks run in
	// parallel; every output still sums its k products in order, so the result does not
	// depend on the packing or the scheduling.
	rows := packRows(a.Data, m, k, ta)
	cols := packRows(b.Data, n, k, !tb)
	parallelRows(m, n*k, func(i int) {
		ra := rows[i*k : i*k+k]
		for j := 0; j < n; j++ {
			cb := cols[j*k : j*k+k]
			s := 0.0
			for p, x := range ra {
				s += x * cb[p]
			}
			out.Data[i*n+j] = dtype.Round(out.Type.DType, s)
		}
	})
}

// packRows returns the r x k matrix that data holds as r x k (transposed false) or as
// k x r (transposed true), row-major.
func packRows(data []float64, r, k int, transposed bool) []float64 {
	if !transposed {
		return data[:r*k]
	}
	out := make([]float64, r*k)
	for p := 0; p < k; p++ {
		for i := 0; i < r; i++ {
			out[i*k+p] = data[p*r+i]
		}
	}
	return out
}

// parallelRows calls f for every row in [0, m), spreading rows over the CPUs when
// there is enough work (perRow operations each) to be worth it.
func parallelRows(m, perRow int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), m)
	if workers < 2 || m*perRow < 1<<16 {
		for i := 0; i < m; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, m)
	for i := 0; i < m; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}
