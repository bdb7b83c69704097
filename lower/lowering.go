package lower

import (
	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// lowering says how a Tensor Graph op becomes tile work. Ops absent from this table
// cannot run on the device and are rejected at compile time (never silently run on
// the host).
type lowering struct {
	kind TileKind
	core isa.CoreKind
	// body emits an elementwise op's instructions from its (converted) input tiles into
	// the output tile; nil makes the op a copy of its one converted input.
	body func(b *vecBody, dst int, srcs []int)
	// uses lists the instructions body may emit (for the device-support check).
	uses []isa.Opcode
	// computeIn gives the dtype each input is converted to before the body runs; nil
	// means the output's dtype.
	computeIn func(in []dtype.DType, out dtype.DType) []dtype.DType
	// colAlign, when set, is the multiple tile widths must be (packed masks need whole
	// 32-byte rows at one bit per element: 256).
	colAlign int
	// maps, for view ops, says how the output indexes each input (see affineMap);
	// nil means numpy broadcasting.
	maps func(in []core.Shape, out core.Shape, attrs core.Attrs) []affineMap
	// partial ops are split into one tile op per input, each writing its part of the
	// output through outMap (concat); consecutive partial writers may share an output.
	partial bool
	outMap  func(in core.Shape, out core.Shape, attrs core.Attrs) affineMap
	// indirect ops read input 0 through addresses the body computes (gathers): it is not
	// loaded, and the body sees its GM view through vecBody.source.
	indirect bool
	// check refuses, with a clear error, cases of the op the lowering cannot handle.
	check func(in []core.TensorType, out core.TensorType) *core.Error
	// extraLive counts full-size scratch tiles the op keeps live besides its operands.
	extraLive func(attrs core.Attrs) int
}

// operandTypes is computeIn with its default.
func (l lowering) operandTypes(in []dtype.DType, out dtype.DType) []dtype.DType {
	if l.computeIn != nil {
		return l.computeIn(in, out)
	}
	ts := make([]dtype.DType, len(in))
	for i := range ts {
		ts[i] = out
	}
	return ts
}

// instructions lists every instruction the lowering of op may emit.
func (l lowering) instructions(op string) []isa.Opcode {
	switch l.kind {
	case TileMatmul:
		return append([]isa.Opcode{isa.TLOAD, isa.TEXTRACT, isa.TMATMUL, isa.TMATMUL_ACC, isa.TSTORE}, dynamicInstructions...)
	case TileMatmulEpilogue:
		return append([]isa.Opcode{isa.TLOAD, isa.TEXTRACT, isa.TMATMUL, isa.TMATMUL_ACC, isa.TPUSH, isa.TPOP, isa.TFREE, isa.TCVT, isa.TSTORE}, dynamicInstructions...)
	case TileAttention:
		return attentionInstructions
	case TileConv:
		return []isa.Opcode{isa.TLOAD, isa.TMOV, isa.TIMG2COL, isa.TEXTRACT, isa.TMATMUL, isa.TMATMUL_ACC, isa.TMATMUL_BIAS, isa.TSTORE}
	case TileConvEpilogue:
		return []isa.Opcode{isa.TLOAD, isa.TMOV, isa.TIMG2COL, isa.TEXTRACT, isa.TMATMUL, isa.TMATMUL_ACC, isa.TMATMUL_BIAS, isa.TPUSH, isa.TPOP, isa.TFREE, isa.TCVT, isa.TSTORE}
	case TileScan:
		return []isa.Opcode{isa.TLOAD, isa.TCVT, isa.TADD, isa.TEXPANDS, isa.TSTORE}
	case TileSort:
		return append([]isa.Opcode{isa.TLOAD, isa.TCVT, isa.TFILLPAD, isa.TCI, isa.TCOLEXPAND, isa.TSORT32, isa.TMRGSORT,
			isa.TROWEXPANDADD, isa.TMAXS, isa.TGATHER, isa.TSTORE, isa.TANDS, isa.TSHRS, isa.TMINS}, gatherOps...)
	case TileRows:
		return rowsInstructions
	case TileUpdate:
		return updateInstructions
	case TileScatter:
		return scatterInstructions
	case TileReduce:
		r := reductions[op]
		return []isa.Opcode{isa.TLOAD, isa.TCVT, r.row, r.col, r.combine, isa.TEXPANDS, isa.TSTORE}
	}
	return append([]isa.Opcode{isa.TLOAD, isa.TCVT, isa.TSTORE}, l.uses...)
}

// unsupported returns the first instruction op's lowering needs that the simulated
// device does not implement yet, if any.
func (l lowering) unsupported(op string) (isa.Opcode, bool) {
	for _, in := range l.instructions(op) {
		if !device.Supports(in) {
			return in, true
		}
	}
	return isa.OpInvalid, false
}

// vectorOp is the lowering of an elementwise op that is one vector instruction.
func vectorOp(op isa.Opcode) lowering {
	uses := []isa.Opcode{op}
	if alt, ok := onBools[op]; ok {
		uses = append(uses, alt)
	}
	return lowering{kind: TileElementwise, core: isa.Vector, body: single(op), uses: uses}
}

var lowerings = map[string]lowering{
	"matmul":       {kind: TileMatmul, core: isa.Cube},
	"batch_matmul": {kind: TileMatmul, core: isa.Cube},
	"add":          vectorOp(isa.TADD),
	"mul":          vectorOp(isa.TMUL),
	"relu":         vectorOp(isa.TRELU),
	"cumsum":       {kind: TileScan, core: isa.Vector},
	"sort":         {kind: TileSort, core: isa.Vector},
	"argsort":      {kind: TileSort, core: isa.Vector},
}
