package core

import (
	"sort"

	"pypto/dtype"
)

// Sorting along one axis is stable, with NaN ordered above every number (numpy sorts
// NaN last; torch's topk counts NaN as the largest): ascending puts NaN last,
// descending first, and equal values keep their order. topk is a composite: the first
// k of a sort (values) or argsort (indices), so ties go to the lower index. The Python
// topk returns (values, indices) by applying both ops; a fused kernel computes both at
// once (see docs/ARCHITECTURE.md, "multi-output ops").

func init() {
	sortAttrs := []AttrSpec{{"axis", int64(-1)}, {"descending", false}}
	Register(&OpDef{Name: "sort", Arity: 1, Attrs: sortAttrs, Doc: "the values sorted along axis (stable; NaN above every number)",
		Infer: inferSort("sort", false), Eval: evalSort(false)})
	Register(&OpDef{Name: "argsort", Arity: 1, Attrs: append(sortAttrs[:len(sortAttrs):len(sortAttrs)], indexDTypeAttr), Doc: "the indices (int64) that sort x along axis (stable; NaN above every number)",
		Infer: inferSort("argsort", true), Eval: evalSort(true)})
	topkAttrs := []AttrSpec{{"k", int64(1)}, {"axis", int64(-1)}, {"largest", true}}
	Register(&OpDef{Name: "topk_values", Arity: 1, Attrs: topkAttrs, Doc: "the k largest (or smallest) values along axis, in order; ties go to the lower index",
		Infer: inferTopk("topk_values", false), Eval: evalTopk(false), Decompose: decomposeTopk("sort")})
	Register(&OpDef{Name: "topk_indices", Arity: 1, Attrs: append(topkAttrs[:len(topkAttrs):len(topkAttrs)], indexDTypeAttr), Doc: "the indices (int64) of topk_values",
		Infer: inferTopk("topk_indices", true), Eval: evalTopk(true), Decompose: decomposeTopk("argsort")})
	Register(&OpDef{Name: "cumsum", Arity: 1, Attrs: []AttrSpec{{"axis", int64(-1)}},
		Doc: "the running sum along axis; bool and integers give int32", Infer: inferCumsum, Eval: evalCumsum})
}

func inferSort(name string, indices bool) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		x := in[0]
		if _, err := normAxis(name, attrs.Int("axis", -1), len(x.Shape)); err != nil {
			return TensorType{}, err
		}
		dt := x.DType
		if indices {
			var err *Error
			if dt, err = indexDType(name, attrs); err != nil {
				return TensorType{}, err
			}
		}
		return TensorType{DType: dt, Shape: x.Shape.Clone()}, nil
	}
}

// sortedOrder returns the positions of a line's values in sorted order.
func sortedOrder(vals []float64, descending bool) []int {
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	less := func(a, b float64) bool { // NaN above every number
		if isNaN(a) {
			return false
		}
		return isNaN(b) || a < b
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := vals[order[i]], vals[order[j]]
		if descending {
			return less(b, a)
		}
		return less(a, b)
	})
	return order
}

// sortLines sorts every line along axis and calls put with the line's output base,
// stride, and sorted order.
func sortLines(x *Array, axis int, descending bool, put func(base, stride int, vals []float64, order []int)) {
	it := newAxisIter(x.Type.Shape, axis)
	vals := make([]float64, it.n)
	it.lines(func(_, base, stride int) {
		for j := range vals {
			vals[j] = x.Data[base+j*stride]
		}
		put(base, stride, vals, sortedOrder(vals, descending))
	})
}

func evalSort(indices bool) func([]*Array, Attrs, *Array) {
	return func(in []*Array, attrs Attrs, out *Array) {
		ax, _ := normAxis("", attrs.Int("axis", -1), len(in[0].Type.Shape))
		sortLines(in[0], ax, attrs.Bool("descending", false), func(base, stride int, vals []float64, order []int) {
			for j, o := range order {
				if indices {
					out.Data[base+j*stride] = float64(o)
				} else {
					out.Data[base+j*stride] = vals[o]
				}
			}
		})
	}
}

func inferTopk(name string, indices bool) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		x := in[0]
		ax, err := normAxis(name, attrs.Int("axis", -1), len(x.Shape))
		if err != nil {
			return TensorType{}, err
		}
		k := attrs.Int("k", 1)
		if k < 0 || k > x.Shape[ax] {
			return TensorType{}, Errorf(ValueError, "topk: k=%d is out of range for axis %d of size %d (shape %v)", k, ax, x.Shape[ax], x.Shape).
				Because("topk selects k of the %s along the axis", plural(x.Shape[ax], "element")).
				Suggest("use k <= %d, or choose another axis (dim=...)", x.Shape[ax])
		}
		out := x.Shape.Clone()
		out[ax] = k
		dt := x.DType
		if indices {
			var err *Error
			if dt, err = indexDType(name, attrs); err != nil {
				return TensorType{}, err
			}
		}
		return TensorType{DType: dt, Shape: out}, nil
	}
}

func evalTopk(indices bool) func([]*Array, Attrs, *Array) {
	return func(in []*Array, attrs Attrs, out *Array) {
		x := in[0]
		ax, _ := normAxis("", attrs.Int("axis", -1), len(x.Type.Shape))
		k := attrs.Int("k", 1)
		oit := newAxisIter(out.Type.Shape, ax)
		line := 0
		var bases []int
		oit.lines(func(_, base, _ int) { bases = append(bases, base) })
		sortLines(x, ax, attrs.Bool("largest", true), func(_, _ int, vals []float64, order []int) {
			for j := 0; j < k; j++ {
				v := vals[order[j]]
				if indices {
					v = float64(order[j])
				}
				out.Data[bases[line]+j*oit.inner] = v
			}
			line++
		})
	}
}

func decomposeTopk(sortOp string) func(*Builder, []Value, Attrs, Location) (Value, error) {
	return func(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
		d := newDec(b, loc)
		t := d.typ(in[0])
		ax, err := normAxis("topk", attrs.Int("axis", -1), len(t.Shape))
		if err != nil {
			return -1, err
		}
		sa := Attrs{"axis": int64(ax), "descending": attrs.Bool("largest", true)}
		if sortOp == "argsort" {
			sa["dtype"] = attrs.Str("dtype", "int64")
		}
		s := d.op(sortOp, sa, in[0])
		starts, stops, steps := make([]int64, len(t.Shape)), int64s(t.Shape), make([]int64, len(t.Shape))
		for i := range steps {
			steps[i] = 1
		}
		stops[ax] = int64(attrs.Int("k", 1))
		return d.done(d.op("slice", Attrs{"starts": starts, "stops": stops, "steps": steps}, s))
	}
}

func inferCumsum(in []TensorType, attrs Attrs) (TensorType, *Error) {
	x := in[0]
	if _, err := normAxis("cumsum", attrs.Int("axis", -1), len(x.Shape)); err != nil {
		return TensorType{}, err
	}
	return TensorType{DType: sumFor(x.DType), Shape: x.Shape.Clone()}, nil
}

func evalCumsum(in []*Array, attrs Attrs, out *Array) {
	x := in[0]
	ax, _ := normAxis("", attrs.Int("axis", -1), len(x.Type.Shape))
	isInt := out.Type.DType.IsInt()
	newAxisIter(x.Type.Shape, ax).lines(func(_, base, stride int) {
		acc, accI := 0.0, int64(0)
		for j := 0; j < x.Type.Shape[ax]; j++ {
			p := base + j*stride
			if isInt {
				accI += int64(x.Data[p])
				out.Data[p] = dtype.Round(out.Type.DType, float64(int32(accI)))
			} else {
				acc += x.Data[p]
				out.Data[p] = dtype.Round(out.Type.DType, acc)
			}
		}
	})
}
