package lower

import (
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// reduction is how a reduce op maps onto the vector unit: the instruction that reduces
// a tile's rows or columns, the one that folds partial results together, and the
// identity an empty reduction gives.
type reduction struct {
	row, col, combine isa.Opcode
	identity          float64
	accumulateWide    bool // float inputs accumulate in fp32 (sum, prod), as numpy's pairwise sums stay accurate
}

var reductions = map[string]reduction{
	"sum":  {row: isa.TROWSUM, col: isa.TCOLSUM, combine: isa.TADD, identity: 0, accumulateWide: true},
	"prod": {row: isa.TROWPROD, col: isa.TCOLPROD, combine: isa.TMUL, identity: 1, accumulateWide: true},
	"max":  {row: isa.TROWMAX, col: isa.TCOLMAX, combine: isa.TMAX, identity: math.Inf(-1)},
	"min":  {row: isa.TROWMIN, col: isa.TCOLMIN, combine: isa.TMIN, identity: math.Inf(1)},
}

// accumulateType is the dtype a reduction computes in: fp32 for float sums and
// products, int32 for integer and bool ones (core's rule), the input's own for max/min
// (int8 for bool).
func (r reduction) accumulateType(in, out dtype.DType) dtype.DType {
	switch {
	case in == dtype.Bool && !r.accumulateWide:
		return dtype.Int8 // the vector unit compares numbers, not bools
	case !r.accumulateWide:
		return in
	case in.IsFloat():
		return dtype.Float32
	}
	return out // int32
}

func init() {
	for name := range reductions {
		lowerings[name] = lowering{kind: TileReduce, core: isa.Vector}
	}
}
