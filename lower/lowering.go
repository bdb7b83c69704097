package lower

import (
	"pypto/core"
	"pypto/device"
	"pypto/isa"
)

// lowering says how a Tensor Graph op becomes tile work. Ops absent from this table
// cannot run on the device and are rejected at compile time (never silently run on
// the host).
type lowering struct {
	kind   TileKind
	core   isa.CoreKind
	vector isa.Opcode // the vector instruction of an elementwise op; none for a copy
	// maps, for view ops, says how the output indexes each input (see affineMap);
	// nil means numpy broadcasting.
	maps func(in []core.Shape, out core.Shape, attrs core.Attrs) []affineMap
	// check refuses, with a clear error, cases of the op the lowering cannot handle.
	check func(n *core.Node) *core.Error
}

// instructions lists every instruction the lowering of op may emit.
func (l lowering) instructions(op string) []isa.Opcode {
	switch l.kind {
	case TileMatmul:
		return []isa.Opcode{isa.TLOAD, isa.TMOV, isa.TMATMUL, isa.TMATMUL_ACC, isa.TSTORE}
	case TileReduce:
		r := reductions[op]
		return []isa.Opcode{isa.TLOAD, isa.TCVT, r.row, r.col, r.combine, isa.TEXPANDS, isa.TSTORE}
	}
	ins := []isa.Opcode{isa.TLOAD, isa.TCVT, isa.TSTORE}
	if l.vector != isa.OpInvalid {
		ins = append(ins, l.vector)
	}
	return ins
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

var lowerings = map[string]lowering{
	"matmul":       {kind: TileMatmul, core: isa.Cube},
	"batch_matmul": {kind: TileMatmul, core: isa.Cube},
	"add":          {kind: TileElementwise, core: isa.Vector, vector: isa.TADD},
	"mul":          {kind: TileElementwise, core: isa.Vector, vector: isa.TMUL},
	"relu":         {kind: TileElementwise, core: isa.Vector, vector: isa.TRELU},
}
