package lower

import (
	"math"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

var posInf = math.Inf(1)

// Elementwise ops whose meaning is one vector instruction on operands converted to
// the result dtype. Each instruction rounds once, as the reference does, so results
// agree bit for bit.
var singleInstruction = map[string]isa.Opcode{
	"sub": isa.TSUB, "div": isa.TDIV, "maximum": isa.TMAX, "minimum": isa.TMIN,
	"neg": isa.TNEG, "abs": isa.TABS,
	"exp": isa.TEXP, "log": isa.TLOG, "sqrt": isa.TSQRT, "rsqrt": isa.TRSQRT, "reciprocal": isa.TRECIP,
	// bool operands are 0/1 after conversion (nonzero and NaN are true), so bitwise ops are
	// the logical ones
	"logical_and": isa.TAND, "logical_or": isa.TOR, "logical_xor": isa.TXOR, "logical_not": isa.TNOT,
}

var compareModes = map[string]isa.Mode{
	"equal": isa.CmpEQ, "not_equal": isa.CmpNE, "less": isa.CmpLT,
	"less_equal": isa.CmpLE, "greater": isa.CmpGT, "greater_equal": isa.CmpGE,
}

// promoted converts every operand to their common promoted dtype: comparisons are
// exact in it, as numpy's are.
func promoted(in []dtype.DType, _ dtype.DType) []dtype.DType {
	p := in[0]
	for _, d := range in[1:] {
		p = core.PromoteTypes(p, d)
	}
	out := make([]dtype.DType, len(in))
	for i := range out {
		out[i] = numeric(p)
	}
	return out
}

// numeric is the dtype the vector unit compares d in: itself, or int8 for bool.
func numeric(d dtype.DType) dtype.DType {
	if d == dtype.Bool {
		return dtype.Int8
	}
	return d
}

// scratch counts extra full-size tiles for the tiling budget, in units of a
// double-buffered pair (two single scratch tiles make one).
func scratch(n int) func(core.Attrs) int { return func(core.Attrs) int { return n } }

// own keeps each operand in its own dtype (bool as int8).
func own(in []dtype.DType, _ dtype.DType) []dtype.DType {
	out := make([]dtype.DType, len(in))
	for i, d := range in {
		out[i] = numeric(d)
	}
	return out
}

// maskOps are the instructions of a comparison-like body.
var maskOps = []isa.Opcode{isa.TEXPANDS, isa.TSELS}

func init() {
	for name, op := range singleInstruction {
		lowerings[name] = vectorOp(op)
	}
	for name, mode := range compareModes {
		lowerings[name] = lowering{kind: TileElementwise, core: isa.Vector, body: compare(mode), computeIn: promoted,
			colAlign: 256, uses: append([]isa.Opcode{isa.TCMP}, maskOps...)}
	}
	lowerings["isnan"] = lowering{kind: TileElementwise, core: isa.Vector, body: isNaNBody, computeIn: own,
		colAlign: 256, uses: append([]isa.Opcode{isa.TCMP}, maskOps...)}
	lowerings["isfinite"] = lowering{kind: TileElementwise, core: isa.Vector, body: isFiniteBody, computeIn: own,
		colAlign: 256, uses: append([]isa.Opcode{isa.TABS, isa.TCMPS}, maskOps...)}
	roundOps := []isa.Opcode{isa.TCVT, isa.TMULS, isa.TABS, isa.TCMPS, isa.TSEL}
	for name, mode := range map[string]isa.Mode{"floor": isa.RoundFloor, "ceil": isa.RoundCeil} {
		lowerings[name] = lowering{kind: TileElementwise, core: isa.Vector, body: rounding(mode), colAlign: 256, extraLive: scratch(3), uses: roundOps}
	}
	lowerings["mod"] = lowering{kind: TileElementwise, core: isa.Vector, body: modBody, colAlign: 256, extraLive: scratch(2),
		uses: []isa.Opcode{isa.TREM, isa.TCMPS, isa.TSELS}}
	lowerings["floor_divide"] = lowering{kind: TileElementwise, core: isa.Vector, body: floorDivideBody, colAlign: 256, extraLive: scratch(8),
		uses: append([]isa.Opcode{isa.TREM, isa.TSUB, isa.TDIV, isa.TSELS}, roundOps...)}
	lowerings["iota"] = lowering{kind: TileElementwise, core: isa.Vector, body: iotaBody, extraLive: scratch(1),
		uses: []isa.Opcode{isa.TCI, isa.TCOLEXPAND, isa.TCVT, isa.TROWEXPAND, isa.TEXPANDS}}
	mathOps := []isa.Opcode{isa.TABS, isa.TMULS, isa.TEXP, isa.TSUBS, isa.TADDS, isa.TDIV, isa.TMUL, isa.TRECIP, isa.TEXPANDS, isa.TCMPS, isa.TSEL, isa.TCVT}
	inF32 := func(in []dtype.DType, _ dtype.DType) []dtype.DType { return []dtype.DType{dtype.Float32} }
	lowerings["tanh"] = lowering{kind: TileElementwise, core: isa.Vector, body: tanhBody, computeIn: inF32, colAlign: 256, extraLive: scratch(9), uses: mathOps}
	lowerings["erf"] = lowering{kind: TileElementwise, core: isa.Vector, body: erfBody, computeIn: inF32, colAlign: 256, extraLive: scratch(9), uses: mathOps}
	trigOps := append([]isa.Opcode{isa.TSUB, isa.TADD, isa.TANDS, isa.TCMPS, isa.TSEL}, mathOps...)
	lowerings["sin"] = lowering{kind: TileElementwise, core: isa.Vector, body: sinCosBody(false), computeIn: inF32, colAlign: 256, extraLive: scratch(9), uses: trigOps}
	lowerings["cos"] = lowering{kind: TileElementwise, core: isa.Vector, body: sinCosBody(true), computeIn: inF32, colAlign: 256, extraLive: scratch(9), uses: trigOps}
	lowerings["pow"] = lowering{kind: TileElementwise, core: isa.Vector, body: powDispatch, colAlign: 256, extraLive: scratch(6),
		computeIn: func(_ []dtype.DType, out dtype.DType) []dtype.DType {
			if out.IsFloat() {
				return []dtype.DType{dtype.Float32, dtype.Float32}
			}
			return []dtype.DType{dtype.Int32, dtype.Int32}
		},
		uses: append([]isa.Opcode{isa.TLOG, isa.TCMP, isa.TSELS, isa.TSHRS, isa.TANDS}, mathOps...)}
	// full has no inputs: each output tile is filled with the value, rounded to the dtype.
	lowerings["full"] = lowering{kind: TileElementwise, core: isa.Vector, uses: []isa.Opcode{isa.TEXPANDS},
		body: func(b *vecBody, dst int, _ []int) {
			b.emit(isa.TEXPANDS, isa.ModeNone, dst, dtype.Round(b.e.prog.Tiles[dst].DType, b.attrs.Float("value", 0)))
		}}
	lowerings["where"] = lowering{kind: TileElementwise, core: isa.Vector, body: whereBody, colAlign: 256,
		uses: []isa.Opcode{isa.TCMPS, isa.TSEL},
		computeIn: func(in []dtype.DType, out dtype.DType) []dtype.DType {
			return []dtype.DType{dtype.Int8, out, out} // the condition is compared with 0 as int8
		}}
}
