package core

import (
	"math"

	"pypto/dtype"
)

// mean, var and std are composites: sums and elementwise ops in float32 (the
// accumulation a vector unit does for half-precision inputs), rounded to the result
// dtype at the end. Integer and bool inputs give float32 (numpy: float64). var divides
// by max(N - ddof, 0), numpy's rule, so ddof >= N gives inf or NaN; the mean of an
// empty axis is NaN. The reference (Eval) computes in float64 and rounds once.

func init() {
	attrs := []AttrSpec{{"axis", []int64{}}, {"keepdims", false}}
	varAttrs := []AttrSpec{{"axis", []int64{}}, {"keepdims", false}, {"ddof", 0.0}}
	Register(&OpDef{Name: "mean", Arity: 1, Attrs: attrs, Doc: "the arithmetic mean over axis (all when empty); integers give float32",
		Infer: inferStat("mean"), Eval: evalStat(momentMean), Decompose: decomposeMean})
	Register(&OpDef{Name: "var", Arity: 1, Attrs: varAttrs, Doc: "the variance over axis, sum((x - mean)^2) / max(N - ddof, 0)",
		Infer: inferStat("var"), Eval: evalStat(momentVar), Decompose: decomposeVar(false)})
	Register(&OpDef{Name: "std", Arity: 1, Attrs: varAttrs, Doc: "the standard deviation over axis, sqrt(var)",
		Infer: inferStat("std"), Eval: evalStat(func(v []float64, ddof float64) float64 { return math.Sqrt(momentVar(v, ddof)) }), Decompose: decomposeVar(true)})
}

// meanFor is the dtype of a mean of d values.
func meanFor(d dtype.DType) dtype.DType {
	if d.IsFloat() {
		return d
	}
	return dtype.Float32
}

func inferStat(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		x := in[0]
		axes, err := normAxes(name, attrs.Ints("axis"), len(x.Shape))
		if err != nil {
			return TensorType{}, err
		}
		return TensorType{DType: meanFor(x.DType), Shape: reducedShape(x.Shape, axes, attrs.Bool("keepdims", false))}, nil
	}
}

func momentMean(v []float64, _ float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func momentVar(v []float64, ddof float64) float64 {
	m := momentMean(v, 0)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / math.Max(float64(len(v))-ddof, 0)
}

// evalStat gathers the values of each output element and applies f to them.
func evalStat(f func(v []float64, ddof float64) float64) func([]*Array, Attrs, *Array) {
	return func(in []*Array, attrs Attrs, out *Array) {
		x := in[0]
		axes, _ := normAxes("", attrs.Ints("axis"), len(x.Type.Shape))
		at := reduceIndex(x.Type.Shape, axes)
		groups := make([][]float64, len(out.Data))
		for i, v := range x.Data {
			o := at(i)
			groups[o] = append(groups[o], v)
		}
		for i := range out.Data {
			out.Data[i] = dtype.Round(out.Type.DType, f(groups[i], attrs.Float("ddof", 0)))
		}
	}
}

// reductionCount is the number of elements each output of a reduction over axes sums.
func reductionCount(shape Shape, axis []int) int {
	axes, _ := normAxes("", axis, len(shape))
	n := 1
	for _, a := range axes {
		n *= shape[a]
	}
	return n
}

func decomposeMean(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	t := d.typ(in[0])
	x := d.cast(in[0], dtype.Float32)
	s := d.op("sum", Attrs{"axis": attrs["axis"], "keepdims": attrs["keepdims"]}, x)
	m := d.op("div", nil, s, d.scalar(dtype.Float32, float64(reductionCount(t.Shape, attrs.Ints("axis")))))
	return d.done(d.cast(m, meanFor(t.DType)))
}

func decomposeVar(sqrt bool) func(*Builder, []Value, Attrs, Location) (Value, error) {
	return func(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
		d := newDec(b, loc)
		t := d.typ(in[0])
		x := d.cast(in[0], dtype.Float32)
		m := d.op("mean", Attrs{"axis": attrs["axis"], "keepdims": true}, x)
		c := d.op("sub", nil, x, m)
		s := d.op("sum", Attrs{"axis": attrs["axis"], "keepdims": attrs["keepdims"]}, d.op("mul", nil, c, c))
		n := math.Max(float64(reductionCount(t.Shape, attrs.Ints("axis")))-attrs.Float("ddof", 0), 0)
		v := d.op("div", nil, s, d.scalar(dtype.Float32, n))
		if sqrt {
			v = d.op("sqrt", nil, v)
		}
		return d.done(d.cast(v, meanFor(t.DType)))
	}
}
