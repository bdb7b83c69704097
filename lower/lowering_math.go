package lower

import (
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// Lowerings of the rest of numpy's elementwise set (core/ops_math.go) and of round with
// decimals. The fp32 bodies are in vecbody_special.go.

// allF32 converts every operand to fp32.
func allF32(in []dtype.DType, _ dtype.DType) []dtype.DType {
	out := make([]dtype.DType, len(in))
	for i := range out {
		out[i] = dtype.Float32
	}
	return out
}

// infBody sets dst where the fp32 operand equals one of the infinities (integers and
// bool convert to finite values, so they give false).
func infBody(pos, neg bool) func(b *vecBody, dst int, srcs []int) {
	return func(b *vecBody, dst int, srcs []int) {
		m := b.mask()
		switch {
		case pos && neg:
			a := b.f32("abs")
			b.emit(isa.TABS, isa.ModeNone, a, srcs[0])
			b.emit(isa.TCMPS, isa.CmpEQ, m, a, posInf)
		case pos:
			b.emit(isa.TCMPS, isa.CmpEQ, m, srcs[0], posInf)
		default:
			b.emit(isa.TCMPS, isa.CmpEQ, m, srcs[0], math.Inf(-1))
		}
		b.maskToBool(dst, m)
	}
}

// signBody is numpy's sign in x's dtype: 1 where x > 0, -1 where x < 0, else x + 0
// (+0 for either zero, NaN for NaN).
func signBody(b *vecBody, dst int, srcs []int) {
	x := srcs[0]
	dt := b.e.prog.Tiles[x].DType
	ones, minus := b.tile("ones", dt, b.tr, b.tc), b.tile("minus_ones", dt, b.tr, b.tc)
	m := b.mask()
	b.emit(isa.TEXPANDS, isa.ModeNone, ones, 1.0)
	b.emit(isa.TEXPANDS, isa.ModeNone, minus, -1.0)
	b.emit(isa.TADDS, isa.ModeNone, dst, x, 0.0)
	b.emit(isa.TCMPS, isa.CmpGT, m, x, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, dst, m, ones, dst)
	b.emit(isa.TCMPS, isa.CmpLT, m, x, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, dst, m, minus, dst)
}

// roundBody is numpy's round(x, decimals) (core.RoundDecimals): for floats, x times (or,
// for negative decimals, divided by) 10**|decimals| rounded to x's dtype, rounded half
// to even, then divided (multiplied) back, each step one instruction in x's dtype, as
// numpy's; integers are copied for decimals >= 0 and otherwise rounded exactly in int32
// to a multiple of f = 10**-decimals: r = x mod f in [0, f), down to x - r unless
// 2r > f, or 2r == f and (x - r)/f is odd (the sum wraps near the int32 limits).
func roundBody(b *vecBody, dst int, srcs []int) {
	x := srcs[0]
	d := b.attrs.Int("decimals", 0)
	dt := b.e.prog.Tiles[x].DType
	if dt.IsFloat() {
		if d == 0 {
			b.roundToInteger(dst, x, isa.RoundRint)
			return
		}
		scale, back := isa.TMULS, isa.TDIVS
		if d < 0 {
			scale, back = back, scale
		}
		f := dtype.Round(dt, math.Pow(10, math.Abs(float64(d))))
		y, r := b.tile("scaled", dt, b.tr, b.tc), b.tile("scaled_int", dt, b.tr, b.tc)
		b.emit(scale, isa.ModeNone, y, x, f)
		b.roundToInteger(r, y, isa.RoundRint)
		b.emit(back, isa.ModeNone, dst, r, f)
		return
	}
	if d >= 0 {
		b.emit(isa.TCVT, isa.ModeNone, dst, x)
		return
	}
	if d < -9 { // |x| < 2**31 < 10**10 / 2: every int32 rounds to 0
		b.emit(isa.TEXPANDS, isa.ModeNone, dst, 0.0)
		return
	}
	f := math.Pow(10, float64(-d))
	r, base, t := b.i32("rem"), b.i32("base"), b.i32("t")
	up, tie, odd := b.maskNamed("up"), b.maskNamed("tie"), b.maskNamed("odd")
	b.emit(isa.TREMS, isa.ModeNone, r, x, f)
	b.emit(isa.TSUB, isa.ModeNone, base, x, r)
	b.emit(isa.TMULS, isa.ModeNone, r, r, 2.0)
	b.emit(isa.TCMPS, isa.CmpGT, up, r, f)
	b.emit(isa.TCMPS, isa.CmpEQ, tie, r, f)
	b.emit(isa.TDIVS, isa.ModeNone, t, base, f)
	b.emit(isa.TANDS, isa.ModeNone, t, t, 1.0)
	b.emit(isa.TCMPS, isa.CmpNE, odd, t, 0.0)
	b.emit(isa.TAND, isa.ModeNone, tie, tie, odd)
	b.emit(isa.TOR, isa.ModeNone, up, up, tie)
	b.emit(isa.TADDS, isa.ModeNone, t, base, f)
	b.emit(isa.TSEL, isa.ModeNone, t, up, t, base)
	b.emit(isa.TCVT, isa.ModeNone, dst, t)
}

func init() {
	mathOps := []isa.Opcode{isa.TABS, isa.TMULS, isa.TEXP, isa.TLOG, isa.TSUBS, isa.TADDS, isa.TDIV, isa.TDIVS, isa.TMUL,
		isa.TADD, isa.TSUB, isa.TRECIP, isa.TSQRT, isa.TEXPANDS, isa.TCMP, isa.TCMPS, isa.TSEL, isa.TCVT, isa.TMAX, isa.TMIN,
		isa.TMAXS, isa.TMINS, isa.TSHRS, isa.TANDS, isa.TOR, isa.TSELS}
	fp32 := map[string]struct {
		body  func(b *vecBody, dst int, srcs []int)
		extra int
	}{
		"exp2": {exp2Body, 5}, "expm1": {expm1Body, 4}, "log1p": {log1pBody, 4}, "log2": {log2Body, 4},
		"log10": {log10Body, 1}, "erfc": {erfcBody, 10}, "logaddexp": {logAddExpBody, 9}, "hypot": {hypotBody, 5},
		"atan2": {atan2Body, 4},
	}
	for name, op := range fp32 {
		lowerings[name] = lowering{kind: TileElementwise, core: isa.Vector, body: op.body, computeIn: allF32, colAlign: 256,
			extraLive: scratch(op.extra), uses: mathOps}
	}
	for name, pn := range map[string][2]bool{"isinf": {true, true}, "isposinf": {true, false}, "isneginf": {false, true}} {
		lowerings[name] = lowering{kind: TileElementwise, core: isa.Vector, body: infBody(pn[0], pn[1]), computeIn: allF32,
			colAlign: 256, extraLive: scratch(1), uses: append([]isa.Opcode{isa.TABS, isa.TCMPS}, maskOps...)}
	}
	lowerings["sign"] = lowering{kind: TileElementwise, core: isa.Vector, body: signBody, computeIn: own, colAlign: 256,
		extraLive: scratch(2), uses: []isa.Opcode{isa.TEXPANDS, isa.TADDS, isa.TCMPS, isa.TSEL}}
	roundOps := []isa.Opcode{isa.TCVT, isa.TMULS, isa.TABS, isa.TCMPS, isa.TSEL}
	lowerings["trunc"] = lowering{kind: TileElementwise, core: isa.Vector, body: rounding(isa.RoundTrunc), colAlign: 256,
		extraLive: scratch(3), uses: roundOps}
	lowerings["round"] = lowering{kind: TileElementwise, core: isa.Vector, body: roundBody, colAlign: 256, extraLive: scratch(5),
		uses: append([]isa.Opcode{isa.TDIVS, isa.TEXPANDS, isa.TREMS, isa.TSUB, isa.TANDS, isa.TAND, isa.TOR, isa.TADDS}, roundOps...),
		computeIn: func(in []dtype.DType, out dtype.DType) []dtype.DType {
			if out.IsFloat() {
				return []dtype.DType{out}
			}
			return []dtype.DType{dtype.Int32}
		}}
}
