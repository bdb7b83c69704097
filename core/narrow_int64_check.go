package core

import (
	"math"

	"pypto/dtype"
)

// Range checks of the int64 results the chip computes in int32. A narrowed op whose
// int64 result can leave int32 (a sum, a product, a conversion from float) gets a
// check: the graph computes a bool that is true when any element of the result left
// int32's range, returned as an extra output, and the run raises a ValueError naming
// the op and the user's line when one is set (Int64Plan.Widen), where the int32
// result would have wrapped silently.
//
// Each check recomputes the op in float32 and compares: an int32 result that wrapped
// differs from the true value by a multiple of 2^32, the float32 estimate from it by
// its rounding error, so |estimate - result| > 2^31 says the result wrapped whenever
// that error stays below 2^31. It does for every elementwise op (a few units in 2^24 of
// values below 2^32 in magnitude, or of a true value beyond that). A sum of n values is
// off by at most gamma(n) * sum|x| (gamma(n) = n u / (1 - n u), u = 2^-24, any order of
// additions), so sums also compute sum|x| and report a result they cannot vouch for
// (sum|x| > 2^30 / gamma(n), which takes about 10^6 values of 2^14 and more) as an
// error too: never a silent wrap. A product's error is n u of its magnitude.

// Int64Check is the extra output that tells whether an int64 result left int32.
type Int64Check struct {
	Output int // among the narrowed graph's outputs
	Op     string
	Node   Value // of the op in the graph narrowed (see Error.Node)
	Loc    Location
}

// int64Checks are the ops whose narrowed results are checked, with how.
var int64Checks = map[string]func(d *dec, n *Node, in []Value, r Value) Value{
	"add": floatRecompute, "sub": floatRecompute, "mul": floatRecompute, "neg": floatRecompute, "abs": floatRecompute,
	"pow": func(d *dec, n *Node, in []Value, r Value) Value { // a negative exponent gives -1, 0 or 1
		return d.op("logical_and", nil, floatRecompute(d, n, in, r), d.op("greater_equal", nil, in[1], d.scalar(d.typ(in[1]).DType, 0)))
	},
	"floor_divide": func(d *dec, n *Node, in []Value, r Value) Value { // integer division by 0 gives 0
		return d.op("logical_and", nil, floatRecompute(d, n, in, r), d.op("not_equal", nil, in[1], d.scalar(d.typ(in[1]).DType, 0)))
	},
	"prod": floatRecompute,
	"sum":  sumRecompute,
	"cumsum": func(d *dec, n *Node, in []Value, r Value) Value {
		return sumRecompute(d, n, in, r)
	},
	"cast": func(d *dec, n *Node, in []Value, r Value) Value { // from floats: the value beyond int32, after truncation
		if !d.typ(in[0]).DType.IsFloat() {
			return -1
		}
		x := d.cast(in[0], dtype.Float32)
		above := d.op("greater_equal", nil, x, d.scalar(dtype.Float32, 0x1p31))
		return d.op("logical_or", nil, above, d.op("less", nil, x, d.scalar(dtype.Float32, -0x1p31)))
	},
}

// wrapped is |estimate - r| > 2^31 for the float32 estimate of r.
func wrapped(d *dec, estimate, r Value) Value {
	diff := d.op("abs", nil, d.op("sub", nil, estimate, d.cast(r, dtype.Float32)))
	return d.op("greater", nil, diff, d.scalar(dtype.Float32, 0x1p31))
}

// floatRecompute is n applied to its inputs in float32, compared with r.
func floatRecompute(d *dec, n *Node, in []Value, r Value) Value {
	fs := make([]Value, len(in))
	for i, v := range in {
		fs[i] = d.cast(v, dtype.Float32)
	}
	return wrapped(d, d.op(n.Op, n.Attrs, fs...), r)
}

// sumRecompute checks a sum or cumsum: the float32 sum compared with r, and sum|x|
// within what the comparison can vouch for.
func sumRecompute(d *dec, n *Node, in []Value, r Value) Value {
	x := d.cast(in[0], dtype.Float32)
	count := n.Type.Shape.NumElements() // cumsum: the longest running sum is the axis
	if t := d.typ(in[0]); n.Op == "sum" {
		count = reductionCount(t.Shape, n.Attrs.Ints("axis"))
	} else if ax, err := normAxis("", n.Attrs.Int("axis", -1), len(t.Shape)); err == nil {
		count = t.Shape[ax]
	}
	u := 0x1p-24 * float64(max(count, 1))
	if u >= 0.5 {
		u = 0.5 // 2^23 values and more: the bound below stays a finite, tiny limit
	}
	limit := math.Ldexp(1, 30) / (u / (1 - u))
	bad := wrapped(d, d.op(n.Op, n.Attrs, x), r)
	abs := d.op(n.Op, n.Attrs, d.op("abs", nil, x))
	return d.op("logical_or", nil, bad, d.op("greater", nil, abs, d.scalar(dtype.Float32, math.Min(limit, math.MaxFloat32))))
}

// addInt64Check adds to b the check of node n, narrowed to r from the narrowed inputs
// in, when n's int64 result needs one; it returns the 0-d bool to output, or -1.
func addInt64Check(b *Builder, n *Node, in []Value, r Value) (Value, error) {
	check, ok := int64Checks[n.Op]
	if !ok || n.Type.DType != dtype.Int64 || n.Type.IsSymbolic() {
		return -1, nil
	}
	d := newDec(b, n.Loc)
	flag := check(d, n, in, r)
	if flag < 0 || d.err != nil {
		return -1, d.err
	}
	if len(d.typ(flag).Shape) > 0 {
		flag = d.op("max", Attrs{"axis": []int64{}, "keepdims": false}, flag)
	}
	return flag, d.err
}

// int64Overflow is the error of a checked op whose result left int32.
func int64Overflow(c Int64Check) *Error {
	e := Errorf(ValueError, "%s: an int64 result leaves int32's range [-2**31, 2**31 - 1], and the chip computes int64 in int32", c.Op)
	e.Node = int(c.Node) + 1
	return e.WithLoc(c.Loc).
		Because("numpy's int64 result would differ: the int32 result wraps (or, for sums of very many large values, cannot be vouched for)").
		Suggest("keep int64 results within int32, or compute in float32 first (x.astype(p.float32), exact to 2**24)")
}
