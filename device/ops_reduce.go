package device

import (
	"math"

	"pypto/isa"
)

// Row and column reductions over the source's valid region. Float sums and products
// accumulate in float64 in index order and round once; integer ones accumulate
// exactly in int64 and wrap; max and min propagate NaN.

func init() {
	entries := map[isa.Opcode]*opImpl{}
	for _, op := range []isa.Opcode{isa.TROWSUM, isa.TROWPROD, isa.TROWMAX, isa.TROWMIN, isa.TCOLSUM, isa.TCOLPROD, isa.TCOLMAX, isa.TCOLMIN} {
		entries[op] = &opImpl{exec: execReduce, work: workVector}
	}
	defineOps(entries)
}

// reduction is the running value of one row or column.
type reduction struct {
	kind byte // '+', '*', '>', '<'
	f    float64
	i    int64
}

func reductionKind(op isa.Opcode) byte {
	switch op {
	case isa.TROWSUM, isa.TCOLSUM:
		return '+'
	case isa.TROWPROD, isa.TCOLPROD:
		return '*'
	case isa.TROWMAX, isa.TCOLMAX:
		return '>'
	}
	return '<'
}

func newReduction(kind byte, dst elems) reduction {
	r := reduction{kind: kind}
	lo, hi := intRange(dst.o.DType)
	switch kind {
	case '*':
		r.f, r.i = 1, 1
	case '>':
		r.f = lo // -Inf for floats
	case '<':
		r.f = hi
	}
	return r
}

func (r *reduction) add(x float64, xi int64) {
	switch r.kind {
	case '+':
		r.f += x
		r.i += xi
	case '*':
		r.f *= x
		r.i *= xi
	case '>':
		r.f = isa.Max(r.f, x)
	case '<':
		r.f = isa.Min(r.f, x)
	}
}

func (r *reduction) store(dst elems, row, col int) {
	if dst.o.DType.IsInt() && (r.kind == '+' || r.kind == '*') {
		dst.setInt(row, col, r.i)
		return
	}
	dst.set(row, col, r.f)
}

// reduceRow is a float row reduction in float64 in index order.
func reduceRow(kind byte, xs []float64) float64 {
	var acc float64
	switch kind {
	case '+':
		for _, x := range xs {
			acc += x
		}
	case '*':
		acc = 1
		for _, x := range xs {
			acc *= x
		}
	case '>':
		acc = math.Inf(-1)
		for _, x := range xs {
			acc = isa.Max(acc, x)
		}
	default:
		acc = math.Inf(1)
		for _, x := range xs {
			acc = isa.Min(acc, x)
		}
	}
	return acc
}

// execReduce writes dst[r, 0] for each valid row of src (row forms) or dst[0, c] for
// each valid column (column forms).
func execReduce(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src := vs[0], c.snap(vs[1], 1)
	kind := reductionKind(in.Op)
	if in.Op <= isa.TROWMIN && !dst.o.DType.IsInt() {
		for r := 0; r < src.rows; r++ {
			dst.set(r, 0, reduceRow(kind, src.f[r*src.o.Cols:r*src.o.Cols+src.cols]))
		}
		return nil
	}
	read := func(r, col int) (float64, int64) {
		if src.o.DType.IsInt() {
			x := src.atInt(r, col)
			return float64(x), x
		}
		x := src.at(r, col)
		return x, int64(x)
	}
	if in.Op <= isa.TROWMIN {
		for r := 0; r < src.rows; r++ {
			red := newReduction(kind, dst)
			for col := 0; col < src.cols; col++ {
				red.add(read(r, col))
			}
			red.store(dst, r, 0)
		}
		return nil
	}
	for col := 0; col < src.cols; col++ {
		red := newReduction(kind, dst)
		for r := 0; r < src.rows; r++ {
			red.add(read(r, col))
		}
		red.store(dst, 0, col)
	}
	return nil
}
