package core

import (
	"math"

	"pypto/dtype"
)

// Normalisations are composites: reductions and elementwise ops in float32, rounded to
// the result dtype (floatFor of x) at the end. softmax subtracts the maximum first, so
// large inputs do not overflow; NaN anywhere in a line makes the line NaN. layer_norm
// and rms_norm normalise over the listed axes (default: the last) with the population
// variance, then scale by weight and shift by bias, which broadcast against x.

func init() {
	Register(&OpDef{Name: "softmax", Arity: 1, Attrs: []AttrSpec{{"axis", int64(-1)}},
		Doc: "exp(x - max) / sum(exp(x - max)) along axis", Infer: inferSoftmax("softmax"), Eval: evalSoftmax(false), Decompose: decomposeSoftmax(false)})
	Register(&OpDef{Name: "log_softmax", Arity: 1, Attrs: []AttrSpec{{"axis", int64(-1)}},
		Doc: "x - max - log(sum(exp(x - max))) along axis", Infer: inferSoftmax("log_softmax"), Eval: evalSoftmax(true), Decompose: decomposeSoftmax(true)})
	normAttrs := func(eps float64) []AttrSpec { return []AttrSpec{{"axis", []int64{-1}}, {"eps", eps}} }
	Register(&OpDef{Name: "layer_norm", Arity: 1, MaxArity: 3, Attrs: normAttrs(1e-5),
		Doc:   "(x - mean) / sqrt(var + eps) over axis, times weight plus bias (both optional, broadcast against x)",
		Infer: inferNorm("layer_norm"), Eval: evalNorm(false), Decompose: decomposeNorm(false)})
	Register(&OpDef{Name: "rms_norm", Arity: 1, MaxArity: 2, Attrs: normAttrs(1e-6),
		Doc:   "x / sqrt(mean(x^2) + eps) over axis, times weight (optional, broadcast against x)",
		Infer: inferNorm("rms_norm"), Eval: evalNorm(true), Decompose: decomposeNorm(true)})
}

func inferSoftmax(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		if _, err := normAxis(name, attrs.Int("axis", -1), len(in[0].Shape)); err != nil {
			return TensorType{}, err
		}
		return inferUnaryFloat(in, attrs)
	}
}

func evalSoftmax(log bool) func([]*Array, Attrs, *Array) {
	return func(in []*Array, attrs Attrs, out *Array) {
		x := in[0]
		ax, _ := normAxis("", attrs.Int("axis", -1), len(x.Type.Shape))
		n := x.Type.Shape[ax]
		newAxisIter(x.Type.Shape, ax).lines(func(_, base, stride int) {
			m := math.Inf(-1)
			for j := 0; j < n; j++ {
				m = maxFloat(m, x.Data[base+j*stride])
			}
			s := 0.0
			for j := 0; j < n; j++ {
				s += math.Exp(x.Data[base+j*stride] - m)
			}
			for j := 0; j < n; j++ {
				v := x.Data[base+j*stride] - m
				if log {
					v -= math.Log(s)
				} else {
					v = math.Exp(v) / s
				}
				out.Data[base+j*stride] = dtype.Round(out.Type.DType, v)
			}
		})
	}
}

func decomposeSoftmax(log bool) func(*Builder, []Value, Attrs, Location) (Value, error) {
	return func(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
		d := newDec(b, loc)
		out := floatFor(d.typ(in[0]).DType)
		axis := Attrs{"axis": []int64{int64(attrs.Int("axis", -1))}, "keepdims": true}
		x := d.cast(in[0], dtype.Float32)
		shifted := d.op("sub", nil, x, d.op("max", axis, x))
		e := d.op("exp", nil, shifted)
		s := d.op("sum", axis, e)
		var y Value
		if log {
			y = d.op("sub", nil, shifted, d.op("log", nil, s))
		} else {
			y = d.op("div", nil, e, s)
		}
		return d.done(d.cast(y, out))
	}
}

func inferNorm(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		x := in[0]
		if _, err := normAxes(name, attrs.Ints("axis"), len(x.Shape)); err != nil {
			return TensorType{}, err
		}
		for k, p := range in[1:] {
			what := []string{"weight", "bias"}[k]
			s, ok := BroadcastShapes(x.Shape, p.Shape)
			if !ok || !s.Equal(x.Shape) {
				return TensorType{}, Errorf(ShapeError, "%s: %s of shape %v does not broadcast to x's shape %v", name, what, p.Shape, x.Shape).
					Suggest("give the %s the shape of the normalised axes, e.g. [%d] for the last axis", what, lastDim(x.Shape))
			}
		}
		return TensorType{DType: floatFor(x.DType), Shape: x.Shape.Clone()}, nil
	}
}

func lastDim(s Shape) int {
	if len(s) == 0 {
		return 1
	}
	return s[len(s)-1]
}

func evalNorm(rms bool) func([]*Array, Attrs, *Array) {
	return func(in []*Array, attrs Attrs, out *Array) {
		x := in[0]
		axes, _ := normAxes("", attrs.Ints("axis"), len(x.Type.Shape))
		at := reduceIndex(x.Type.Shape, axes)
		groups := reducedShape(x.Type.Shape, axes, true).NumElements()
		count := make([]float64, groups)
		mean := make([]float64, groups)
		for i, v := range x.Data {
			count[at(i)]++
			if !rms {
				mean[at(i)] += v
			}
		}
		for o := range mean {
			mean[o] /= count[o]
		}
		sq := make([]float64, groups)
		for i, v := range x.Data {
			c := v - mean[at(i)]
			sq[at(i)] += c * c
		}
		eps := attrs.Float("eps", 0)
		var params []broadcastIndex
		for _, p := range in[1:] {
			params = append(params, newBroadcastIndex(p.Type.Shape, x.Type.Shape))
		}
		for i, v := range x.Data {
			o := at(i)
			y := (v - mean[o]) / math.Sqrt(sq[o]/count[o]+eps)
			if len(in) > 1 {
				y *= in[1].Data[params[0].at(i)]
			}
			if len(in) > 2 {
				y += in[2].Data[params[1].at(i)]
			}
			out.Data[i] = dtype.Round(out.Type.DType, y)
		}
	}
}

func decomposeNorm(rms bool) func(*Builder, []Value, Attrs, Location) (Value, error) {
	return func(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
		d := newDec(b, loc)
		out := floatFor(d.typ(in[0]).DType)
		axis := Attrs{"axis": attrs["axis"], "keepdims": true}
		x := d.cast(in[0], dtype.Float32)
		c := x
		if !rms {
			c = d.op("sub", nil, x, d.op("mean", axis, x))
		}
		v := d.op("mean", axis, d.op("mul", nil, c, c))
		y := d.op("mul", nil, c, d.op("rsqrt", nil, d.op("add", nil, v, d.scalar(dtype.Float32, attrs.Float("eps", 0)))))
		if len(in) > 1 {
			y = d.op("mul", nil, y, d.cast(in[1], dtype.Float32))
		}
		if len(in) > 2 {
			y = d.op("add", nil, y, d.cast(in[2], dtype.Float32))
		}
		return d.done(d.cast(y, out))
	}
}
