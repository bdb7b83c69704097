package core

import (
	"math"

	"pypto/dtype"
)

// Inference batch norm, torch's batch_norm with training=False: over axis 1 of x
// [N, C, ...], y = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c]. Weight and
// bias come together or not at all (the front end fills the missing one with ones or
// zeros). A composite, so that the compiler sees it whole: the fold-batch-norm pass
// folds it into the convolution that produces x; elsewhere it decomposes into float32
// elementwise ops, rounded to x's dtype at the end, like the other normalisations.

func init() {
	Register(&OpDef{Name: "batch_norm", Arity: 3, MaxArity: 5, Attrs: []AttrSpec{{"eps", 1e-5}},
		Doc:   "inference batch norm over axis 1 of x [N, C, ...]: (x - mean) / sqrt(var + eps) * weight + bias with [C] running mean, variance and optional weight and bias; folded into a preceding conv2d by the compiler",
		Infer: inferBatchNorm, Eval: evalBatchNorm, Decompose: decomposeBatchNorm})
	registerSym(symSameShapeRule, "batch_norm")
}

func inferBatchNorm(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	if len(in) == 4 {
		return TensorType{}, Errorf(ValueError, "batch_norm: weight and bias come together (inputs x, mean, var[, weight, bias]), got 4 inputs")
	}
	if len(x.Shape) < 2 {
		return TensorType{}, Errorf(ShapeError, "batch_norm: x must be [N, C, ...], got shape %v", x.Shape)
	}
	if !x.DType.IsFloat() {
		return TensorType{}, Errorf(DTypeError, "batch_norm: x must be a float tensor, got %s", x.DType.LongName())
	}
	if eps := attrs.Float("eps", 1e-5); !(eps >= 0) {
		return TensorType{}, Errorf(ValueError, "batch_norm: eps must be >= 0, got %v", eps)
	}
	names := []string{"", "running_mean", "running_var", "weight", "bias"}
	for i, p := range in[1:] {
		if len(p.Shape) != 1 || p.Shape[0] != x.Shape[1] || p.DType != x.DType {
			return TensorType{}, Errorf(ShapeError, "batch_norm: %s must be [%d] of %s (x's channels and dtype), got %v of %s",
				names[i+1], x.Shape[1], x.DType.LongName(), p.Shape, p.DType.LongName())
		}
	}
	return TensorType{DType: x.DType, Shape: x.Shape}, nil
}

func evalBatchNorm(in []*Array, attrs Attrs, out *Array) {
	x := in[0]
	c := x.Type.Shape[1]
	inner := 1
	for _, d := range x.Type.Shape[2:] {
		inner *= d
	}
	eps := attrs.Float("eps", 1e-5)
	for i, v := range x.Data {
		ch := i / inner % c
		y := (v - in[1].Data[ch]) / math.Sqrt(in[2].Data[ch]+eps)
		if len(in) == 5 {
			y = y*in[3].Data[ch] + in[4].Data[ch]
		}
		out.Data[i] = roundTo(out, y)
	}
}

// batchNormScale builds the float32 per-channel factor weight / sqrt(var + eps) (the
// weight is one without the affine inputs), shaped [C].
func batchNormScale(d *dec, in []Value, eps float64) Value {
	s := d.op("rsqrt", nil, d.op("add", nil, d.cast(in[2], dtype.Float32), d.scalar(dtype.Float32, eps)))
	if len(in) == 5 {
		s = d.op("mul", nil, s, d.cast(in[3], dtype.Float32))
	}
	return s
}

// BatchNormFold builds, for a batch norm (inputs in: x, mean, var[, weight, bias]),
// the float32 per-channel scale and shift with y = x * scale + shift, both [C].
func BatchNormFold(b *Builder, in []Value, attrs Attrs, loc Location) (scale, shift Value, err error) {
	d := newDec(b, loc)
	scale = batchNormScale(d, in, attrs.Float("eps", 1e-5))
	shift = d.op("neg", nil, d.op("mul", nil, d.cast(in[1], dtype.Float32), scale))
	if len(in) == 5 {
		shift = d.op("add", nil, shift, d.cast(in[4], dtype.Float32))
	}
	return scale, shift, d.err
}

func decomposeBatchNorm(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	xt := d.typ(in[0])
	shape := make([]int64, len(xt.Shape)-1) // [C, 1, ...]: broadcasts over axis 1
	shape[0] = int64(xt.Shape[1])
	for i := 1; i < len(shape); i++ {
		shape[i] = 1
	}
	chan32 := func(v Value) Value { return d.op("reshape", Attrs{"shape": shape}, d.cast(v, dtype.Float32)) }
	scale := d.op("reshape", Attrs{"shape": shape}, batchNormScale(d, in, attrs.Float("eps", 1e-5)))
	y := d.op("mul", nil, d.op("sub", nil, d.cast(in[0], dtype.Float32), chan32(in[1])), scale)
	if len(in) == 5 {
		y = d.op("add", nil, y, chan32(in[4]))
	}
	return d.done(d.cast(y, xt.DType))
}
