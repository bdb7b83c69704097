package core

import (
	"fmt"
	"sort"
)

// normAxis resolves a possibly negative axis of an ndim-d tensor, numpy style.
func normAxis(op string, axis, ndim int) (int, *Error) {
	if axis < -ndim || axis >= ndim {
		e := Errorf(ValueError, "%s: axis %d is out of range for a %d-d tensor", op, axis, ndim)
		if ndim == 0 {
			return 0, e.Because("a 0-d tensor has no axes").Suggest("reshape it to 1-d first, or leave the axis out")
		}
		return 0, e.Because("valid axes are %d..%d (negative ones count from the end)", -ndim, ndim-1).
			Suggest("use axis=-1 for the last axis")
	}
	if axis < 0 {
		axis += ndim
	}
	return axis, nil
}

// normAxes resolves a list of axes (empty: all of them) into sorted, distinct,
// non-negative ones.
func normAxes(op string, axes []int, ndim int) ([]int, *Error) {
	if len(axes) == 0 {
		all := make([]int, ndim)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	out := make([]int, len(axes))
	seen := map[int]bool{}
	for i, a := range axes {
		n, err := normAxis(op, a, ndim)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, Errorf(ValueError, "%s: axis %d is given twice in %v", op, n, axes).
				Suggest("list each axis once")
		}
		seen[n] = true
		out[i] = n
	}
	sort.Ints(out)
	return out, nil
}

// reducedShape is shape with the axes removed, or kept as size 1 with keepdims.
func reducedShape(shape Shape, axes []int, keepdims bool) Shape {
	red := map[int]bool{}
	for _, a := range axes {
		red[a] = true
	}
	out := Shape{}
	for i, d := range shape {
		switch {
		case !red[i]:
			out = append(out, d)
		case keepdims:
			out = append(out, 1)
		}
	}
	return out
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// axisIter walks the elements of a tensor of shape along one axis: for each of the
// outer*inner lines, the flat indices base + j*stride for j < n.
type axisIter struct {
	outer, n, inner int
}

func newAxisIter(shape Shape, axis int) axisIter {
	it := axisIter{outer: 1, n: shape[axis], inner: 1}
	for i, d := range shape {
		switch {
		case i < axis:
			it.outer *= d
		case i > axis:
			it.inner *= d
		}
	}
	return it
}

// lines calls f for every line along the axis with its first flat index and stride.
func (it axisIter) lines(f func(line, base, stride int)) {
	for o := 0; o < it.outer; o++ {
		for in := 0; in < it.inner; in++ {
			f(o*it.inner+in, o*it.n*it.inner+in, it.inner)
		}
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
