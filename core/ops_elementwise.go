package core

import (
	"math"

	"pypto/dtype"
)

// Elementwise ops follow numpy: inputs broadcast, operands are converted to the
// computation dtype (the promotion of the input dtypes), and each result is computed
// exactly (float64 for floats, int64 for integers) and rounded once to the result dtype.
// For + - * of every supported type that is the correctly rounded result, so the
// device and the reference agree bit for bit.

// kernel is the scalar function of an elementwise op. Float computes in float64; Int,
// when set, computes integer operands exactly in int64 (float64 would lose the low bits
// of int32 products), and the store wraps the result like a two's-complement register.
type kernel struct {
	Float func(a, b float64) float64
	Int   func(a, b int64) int64
}

func (k kernel) apply(ct dtype.DType, a, b float64) float64 {
	if ct.IsInt() && k.Int != nil {
		// wrapped to ct's width while exact: a product of two int32s can pass 2**53,
		// where float64 would lose the low bits the wrap keeps
		r := k.Int(int64(a), int64(b))
		switch ct {
		case dtype.Int8:
			return float64(int8(r))
		case dtype.Int64:
			return float64(r)
		}
		return float64(int32(r))
	}
	return k.Float(a, b)
}

// broadcastIndex maps a flat index of the output to the flat index of an input whose
// shape broadcasts to the output's.
type broadcastIndex struct {
	outShape Shape
	strides  []int // input strides aligned to the output's axes; 0 on broadcast axes
}

func newBroadcastIndex(in, out Shape) broadcastIndex {
	return broadcastIndex{outShape: out, strides: BroadcastStrides(in, out)}
}

func (b broadcastIndex) at(flat int) int {
	idx := 0
	for ax := len(b.outShape) - 1; ax >= 0; ax-- {
		d := b.outShape[ax]
		if d == 0 {
			return 0
		}
		idx += (flat % d) * b.strides[ax]
		flat /= d
	}
	return idx
}

// evalElementwise evaluates f over the broadcast inputs. ct is the computation dtype
// the operands are converted to first (as numpy casts operands to the loop's type);
// the result is rounded to out's dtype.
func evalElementwise(in []*Array, out *Array, ct dtype.DType, f func(args []float64) float64) {
	idx := make([]broadcastIndex, len(in))
	for k, a := range in {
		idx[k] = newBroadcastIndex(a.Type.Shape, out.Type.Shape)
	}
	args := make([]float64, len(in))
	for i := range out.Data {
		for k, a := range in {
			args[k] = dtype.Round(ct, a.Data[idx[k].at(i)])
		}
		out.Data[i] = dtype.Round(out.Type.DType, f(args))
	}
}

// broadcastAll broadcasts any number of shapes, naming the op and the operands in the
// error when they do not fit.
func broadcastAll(name string, in []TensorType) (Shape, *Error) {
	shape := Shape{}
	for k, t := range in {
		s, ok := BroadcastShapes(shape, t.Shape)
		if !ok {
			e := Errorf(ShapeError, "%s: shapes %v cannot be broadcast together", name, joinShapes(in))
			if len(in) == 2 {
				e = Errorf(ShapeError, "%s: shapes %v and %v cannot be broadcast together", name, in[0].Shape, in[1].Shape)
			} else {
				e.Because("operand %d, of shape %v, is the first that does not fit the ones before it", k, t.Shape)
			}
			return nil, e.Because("dimensions are compared from the right; each pair must be equal or one of them 1").
				Suggest("reshape one operand so its trailing dimensions match the other's, or insert size-1 axes to broadcast")
		}
		shape = s
	}
	return shape, nil
}

func joinShapes(in []TensorType) string {
	s := ""
	for i, t := range in {
		if i > 0 {
			s += ", "
		}
		s += t.Shape.String()
	}
	return s
}

// floatFor is the float dtype a math function of a d operand gives, numpy's rule with
// 64-bit floats narrowed to 32: floats keep their dtype; bool and int8 (which float16
// holds exactly) give float16; int32 and int64 give float32.
func floatFor(d dtype.DType) dtype.DType {
	switch {
	case d.IsFloat():
		return d
	case d == dtype.Int32 || d == dtype.Int64:
		return dtype.Float32
	}
	return dtype.Float16
}

// sumFor is the dtype sums and products of d accumulate into: int64 for int64, int32
// for bool and the narrower integers (numpy's platform integer, kept at int32 for
// them), the dtype itself for floats.
func sumFor(d dtype.DType) dtype.DType {
	if d.IsFloat() || d == dtype.Int64 {
		return d
	}
	return dtype.Int32
}

func isNaN(v float64) bool { return v != v }

func boolOf(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

var nan = math.NaN()

// roundTo rounds v to what a's dtype stores.
func roundTo(a *Array, v float64) float64 { return dtype.Round(a.Type.DType, v) }
