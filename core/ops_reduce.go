package core

import (
	"math"

	"pypto/dtype"
)

// Reductions over a list of axes (empty: all axes), with keepdims. sum and prod of bool
// and integers accumulate in int32 (numpy's int64 narrowed) and wrap; of floats, the
// reference accumulates in float64 and rounds once. max and min propagate NaN; argmax
// and argmin give the first index of the extreme value (of the first NaN, if any) along
// one axis, as int32. Reducing an empty axis is an error for max/min/argmax/argmin (no
// identity) and gives 0 for sum, 1 for prod.

func init() {
	axisAttrs := []AttrSpec{{"axis", []int64{}}, {"keepdims", false}}
	Register(&OpDef{Name: "sum", Arity: 1, Attrs: axisAttrs, Doc: "the sum over axis (all when empty); bool and integers give int32",
		Infer: inferReduce("sum", sumFor, true), Eval: evalReduce(0, kernel{func(a, x float64) float64 { return a + x }, func(a, x int64) int64 { return a + x }})})
	Register(&OpDef{Name: "prod", Arity: 1, Attrs: axisAttrs, Doc: "the product over axis (all when empty); bool and integers give int32",
		Infer: inferReduce("prod", sumFor, true), Eval: evalReduce(1, kernel{func(a, x float64) float64 { return a * x }, func(a, x int64) int64 { return a * x }})})
	Register(&OpDef{Name: "max", Arity: 1, Attrs: axisAttrs, Doc: "the maximum over axis (all when empty); NaN if any element is NaN",
		Infer: inferReduce("max", same, false), Eval: evalReduce(math.Inf(-1), kernel{Float: maxFloat})})
	Register(&OpDef{Name: "min", Arity: 1, Attrs: axisAttrs, Doc: "the minimum over axis (all when empty); NaN if any element is NaN",
		Infer: inferReduce("min", same, false), Eval: evalReduce(math.Inf(1), kernel{Float: minFloat})})
	argAttrs := []AttrSpec{{"axis", int64(-1)}, {"keepdims", false}, indexDTypeAttr}
	Register(&OpDef{Name: "argmax", Arity: 1, Attrs: argAttrs, Doc: "the index (int64, like numpy's) of the first maximum along axis (of the first NaN, if any)",
		Infer: inferArg("argmax"), Eval: evalArg(func(a, b float64) bool { return a > b })})
	Register(&OpDef{Name: "argmin", Arity: 1, Attrs: argAttrs, Doc: "the index (int64) of the first minimum along axis (of the first NaN, if any)",
		Infer: inferArg("argmin"), Eval: evalArg(func(a, b float64) bool { return a < b })})
}

func same(d dtype.DType) dtype.DType { return d }

func inferReduce(name string, result func(dtype.DType) dtype.DType, hasIdentity bool) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		x := in[0]
		axes, err := normAxes(name, attrs.Ints("axis"), len(x.Shape))
		if err != nil {
			return TensorType{}, err
		}
		if !hasIdentity {
			for _, a := range axes {
				if x.Shape[a] == 0 {
					return TensorType{}, Errorf(ValueError, "%s: cannot reduce axis %d of shape %v: it is empty and %s has no identity", name, a, x.Shape, name).
						Suggest("check for empty tensors before reducing, or pad the axis")
				}
			}
		}
		return TensorType{DType: result(x.DType), Shape: reducedShape(x.Shape, axes, attrs.Bool("keepdims", false))}, nil
	}
}

// reduceIndex maps each flat input index to the flat index of its output element.
func reduceIndex(shape Shape, axes []int) func(int) int {
	red := map[int]bool{}
	for _, a := range axes {
		red[a] = true
	}
	kept := reducedShape(shape, axes, true)
	outStrides := kept.Strides()
	return func(flat int) int {
		o := 0
		for ax := len(shape) - 1; ax >= 0; ax-- {
			d := shape[ax]
			i := flat % d
			flat /= d
			if !red[ax] {
				o += i * outStrides[ax]
			}
		}
		return o
	}
}

// evalReduce accumulates in float64, or exactly in int64 for integer sums and products
// (which then wrap to int32 when stored, as mod 2^64 arithmetic agrees with mod 2^32).
func evalReduce(identity float64, k kernel) func([]*Array, Attrs, *Array) {
	return func(in []*Array, attrs Attrs, out *Array) {
		x := in[0]
		axes, _ := normAxes("", attrs.Ints("axis"), len(x.Type.Shape))
		at := reduceIndex(x.Type.Shape, axes)
		intAcc := out.Type.DType.IsInt() && k.Int != nil
		acc := make([]float64, len(out.Data))
		accI := make([]int64, len(out.Data))
		for i := range acc {
			acc[i], accI[i] = identity, int64(identity)
		}
		for i, v := range x.Data {
			o := at(i)
			if intAcc {
				accI[o] = k.Int(accI[o], int64(v))
			} else {
				acc[o] = k.Float(acc[o], v)
			}
		}
		for i := range out.Data {
			if intAcc {
				acc[i] = float64(int32(accI[i]))
			}
			out.Data[i] = dtype.Round(out.Type.DType, acc[i])
		}
	}
}

func inferArg(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		x := in[0]
		ax, err := normAxis(name, attrs.Int("axis", -1), len(x.Shape))
		if err != nil {
			return TensorType{}, err
		}
		if x.Shape[ax] == 0 {
			return TensorType{}, Errorf(ValueError, "%s: axis %d of shape %v is empty, so it has no %s", name, ax, x.Shape, name)
		}
		dt, err := indexDType(name, attrs)
		if err != nil {
			return TensorType{}, err
		}
		return TensorType{DType: dt, Shape: reducedShape(x.Shape, []int{ax}, attrs.Bool("keepdims", false))}, nil
	}
}

// evalArg keeps the first index whose value beats the best so far; a NaN beats
// everything and is never beaten, so the first NaN wins (numpy's rule).
func evalArg(better func(a, b float64) bool) func([]*Array, Attrs, *Array) {
	return func(in []*Array, attrs Attrs, out *Array) {
		x := in[0]
		ax, _ := normAxis("", attrs.Int("axis", -1), len(x.Type.Shape))
		newAxisIter(x.Type.Shape, ax).lines(func(line, base, stride int) {
			best, bi := x.Data[base], 0
			for j := 1; j < x.Type.Shape[ax] && !isNaN(best); j++ {
				v := x.Data[base+j*stride]
				if isNaN(v) || better(v, best) {
					best, bi = v, j
				}
			}
			out.Data[line] = float64(bi)
		})
	}
}
