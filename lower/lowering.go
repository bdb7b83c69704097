package lower

import (
	"pypto/core"
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

var lowerings = map[string]lowering{
	"matmul":       {kind: TileMatmul, core: isa.Cube},
	"batch_matmul": {kind: TileMatmul, core: isa.Cube},
	"add":          {kind: TileElementwise, core: isa.Vector, vector: isa.TADD},
	"mul":          {kind: TileElementwise, core: isa.Vector, vector: isa.TMUL},
	"relu":         {kind: TileElementwise, core: isa.Vector, vector: isa.TRELU},
}
