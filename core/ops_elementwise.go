package core

import "pypto/dtype"

// Elementwise ops follow numpy: inputs broadcast, the result dtype is the promotion of
// the input dtypes, and each result is computed in float64 and rounded once to the
// result dtype (which is correctly rounded for + and * of every supported type).

func init() {
	Register(&OpDef{Name: "add", Arity: 2, Doc: "a + b with numpy broadcasting", Infer: inferBinary("add"), Eval: evalBinary(func(a, b float64) float64 { return a + b })})
	Register(&OpDef{Name: "mul", Arity: 2, Doc: "a * b with numpy broadcasting", Infer: inferBinary("mul"), Eval: evalBinary(func(a, b float64) float64 { return a * b })})
	Register(&OpDef{Name: "relu", Arity: 1, Doc: "max(x, 0); NaN stays NaN", Infer: inferUnaryNumeric("relu"), Eval: evalUnary(relu)})
}

func relu(x float64) float64 {
	if x < 0 {
		return 0
	}
	return x // NaN and +0/-0 pass through unchanged
}

func inferBinary(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, _ Attrs) (TensorType, *Error) {
		shape, ok := BroadcastShapes(in[0].Shape, in[1].Shape)
		if !ok {
			return TensorType{}, Errorf(ShapeError, "%s: shapes %v and %v cannot be broadcast together", name, in[0].Shape, in[1].Shape).
				Because("dimensions are compared from the right; each pair must be equal or one of them 1").
				Suggest("reshape one operand so its trailing dimensions match the other's, or insert size-1 axes to broadcast")
		}
		dt := PromoteTypes(in[0].DType, in[1].DType)
		if dt == dtype.Bool {
			return TensorType{}, Errorf(DTypeError, "%s: not defined for bool tensors", name).Suggest("cast the operands to int32 or float32 first")
		}
		return TensorType{DType: dt, Shape: shape}, nil
	}
}

func inferUnaryNumeric(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, _ Attrs) (TensorType, *Error) {
		if in[0].DType == dtype.Bool {
			return TensorType{}, Errorf(DTypeError, "%s: not defined for bool tensors", name)
		}
		return TensorType{DType: in[0].DType, Shape: in[0].Shape.Clone()}, nil
	}
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

func evalBinary(f func(a, b float64) float64) func([]*Array, Attrs, *Array) {
	return func(in []*Array, _ Attrs, out *Array) {
		ia := newBroadcastIndex(in[0].Type.Shape, out.Type.Shape)
		ib := newBroadcastIndex(in[1].Type.Shape, out.Type.Shape)
		for i := range out.Data {
			out.Data[i] = dtype.Round(out.Type.DType, f(in[0].Data[ia.at(i)], in[1].Data[ib.at(i)]))
		}
	}
}

func evalUnary(f func(float64) float64) func([]*Array, Attrs, *Array) {
	return func(in []*Array, _ Attrs, out *Array) {
		for i, v := range in[0].Data {
			out.Data[i] = dtype.Round(out.Type.DType, f(v))
		}
	}
}
