package device

import (
	"math"

	"pypto/isa"
)

// Row and column reductions over the source's valid region. Float sums and products
// accumulate in fp32 in the vector unit's order (laneReduce, columnReduce; the order is
// isa.ReduceLanes' and docs/isa.md's) and round once to the destination; integer ones
// accumulate exactly in int64 and wrap; max and min propagate NaN (any order gives the
// same value).

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

// execReduce writes dst[r, 0] for each valid row of src (row forms) or dst[0, c] for
// each valid column (column forms).
func execReduce(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	kind := reductionKind(in.Op)
	if vs[1].o.DType.IsFloat() {
		c.reduceFloat(vs[0], vs[1], in.Op <= isa.TROWMIN, kind)
		return nil
	}
	dst, src := vs[0], c.snap(vs[1], 1)
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

// reduceFloat is a float reduction of src's rows (row) or columns into dst in fp32
// (f16 and bf16 widen exactly), rounded once to dst's dtype.
func (c *coreSim) reduceFloat(dst, src elems, row bool, kind byte) {
	cols := src.o.Cols
	xs := c.floatIn(src, dst, src.rows, 1)
	mul := kind == '*'
	if row {
		for r := 0; r < src.rows; r++ {
			x := xs[r*cols : r*cols+src.cols]
			var v float32
			switch kind {
			case '+', '*':
				v = laneReduce(x, mul)
			default:
				v = rowMaxMin(x, kind == '>')
			}
			dst.set(r, 0, float64(v))
		}
		return
	}
	c.vec[0] = grow(c.vec[0], src.cols)
	acc := c.vec[0]
	if kind == '+' || kind == '*' {
		columnReduce(acc, xs, src.rows, cols, mul)
	} else {
		columnMaxMin(acc, xs, src.rows, cols, kind == '>')
	}
	for col, v := range acc {
		dst.set(0, col, float64(v))
	}
}

// columnMaxMin writes the max (min) of each column of the rows x len(acc) region of xs
// (rows ld apart) into acc; no rows give -Inf (+Inf).
func columnMaxMin(acc, xs []float32, rows, ld int, isMax bool) {
	for j := range acc {
		acc[j] = float32(math.Inf(1))
		if isMax {
			acc[j] = float32(math.Inf(-1))
		}
	}
	for r := 0; r < rows; r++ {
		for j, x := range xs[r*ld : r*ld+len(acc)] {
			if isMax {
				acc[j] = max32(acc[j], x)
			} else {
				acc[j] = min32(acc[j], x)
			}
		}
	}
}

// laneReduce is the float row sum (product) of xs in the vector unit's order: element
// k goes to fp32 lane k % isa.ReduceLanes (64: one 256-byte repeat), each lane starting
// with its first element and adding the later ones a repeat at a time; then lane i
// takes lane i+h for h = 32, 16, ..., 1 (lanes that got no element take no part).
// Empty rows give the identity. laneReduceGo, or a SIMD kernel with the same bits.
var laneReduce = laneReduceGo

func laneReduceGo(xs []float32, mul bool) float32 {
	const lanes = isa.ReduceLanes
	if len(xs) == 0 {
		return identity32(mul)
	}
	var acc [lanes]float32
	used := copy(acc[:], xs)
	for k := lanes; k < len(xs); k += lanes {
		blk := xs[k:min(k+lanes, len(xs))]
		if mul {
			for j, x := range blk {
				acc[j] *= x
			}
		} else {
			for j, x := range blk {
				acc[j] += x
			}
		}
	}
	return foldLanes(&acc, used, mul)
}

// foldLanes is laneReduce's pairwise fold of the first used lanes.
func foldLanes(acc *[isa.ReduceLanes]float32, used int, mul bool) float32 {
	for h := isa.ReduceLanes / 2; h >= 1; h /= 2 {
		for i := 0; i < h && i+h < used; i++ {
			if mul {
				acc[i] *= acc[i+h]
			} else {
				acc[i] += acc[i+h]
			}
		}
	}
	return acc[0]
}

func identity32(mul bool) float32 {
	if mul {
		return 1
	}
	return 0
}

// columnReduce writes into acc[c] the fp32 sum (product) of column c of the rows x
// len(acc) region of xs (rows ld apart): row 0, then each later row in order.
func columnReduce(acc, xs []float32, rows, ld int, mul bool) {
	if rows == 0 {
		for i := range acc {
			acc[i] = identity32(mul)
		}
		return
	}
	copy(acc, xs[:len(acc)])
	for r := 1; r < rows; r++ {
		row := xs[r*ld : r*ld+len(acc)]
		if mul {
			for j, x := range row {
				acc[j] *= x
			}
		} else {
			for j, x := range row {
				acc[j] += x
			}
		}
	}
}
