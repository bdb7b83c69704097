package lower

import "pypto/isa"

// lowering says how a Tensor Graph op becomes tile work. Ops absent from this table
// cannot run on the device and are rejected at compile time (never silently run on
// the host).
type lowering struct {
	kind   TileKind
	core   isa.CoreKind
	vector isa.Opcode // the vector instruction of an elementwise op
}

var lowerings = map[string]lowering{
	"matmul": {kind: TileMatmul, core: isa.Cube},
	"add":    {kind: TileElementwise, core: isa.Vector, vector: isa.TADD},
	"mul":    {kind: TileElementwise, core: isa.Vector, vector: isa.TMUL},
	"relu":   {kind: TileElementwise, core: isa.Vector, vector: isa.TRELU},
}
