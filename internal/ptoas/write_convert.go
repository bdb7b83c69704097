package ptoas

import (
	"pypto/dtype"
	"pypto/isa"
)

// Conversions. ptoas 0.1.1 writes every tcvt with CAST_RINT whatever its rmode
// (docs/pto-as.md, "What 0.1.1 lacks"). CAST_RINT is the vendor's round-to-nearest-
// even mode for every conversion, a float to an integer included (truncation is
// CAST_TRUNC, a mode of its own), so only a conversion that rounds to nearest even is
// written as one op: a float result, an integer source, or a float to integer
// conversion in mode rint. A float to integer conversion that truncates (ours without
// a mode, as numpy's astype), floors, ceils or rounds half away from zero is the
// nearest-even conversion and a correction computed from the bits of the error, in
// i32 scratch tiles: every step is exact.

func init() { opWriters[isa.TCVT] = writeCvt }

// scratchLike declares a scratch tile shaped like tile t (all of it valid) of dtype d.
func (w *writer) scratchLike(t int, d dtype.DType) operand {
	decl := w.p.Tiles[t]
	decl.DType, decl.ValidRows, decl.ValidCols, decl.ValidRowsReg, decl.ValidColsReg = d, 0, 0, 0, 0
	text, err := tileType(decl, padNull)
	if err != nil {
		w.fail("%v", err)
	}
	typ := w.alias(text, aliasName(decl, padNull))
	name := w.value("tmp")
	w.line("%s = pto.alloc_tile {pypto.temp} : %s", name, typ)
	return operand{name, typ}
}

const rint = "rmode = #pto<round_mode CAST_RINT>"

// writeCvt writes tcvt. ptoas 0.1.1 inserts no synchronisation for tcvt (its C++ of
// a load, a conversion and a store has no flag between them), so the auto form puts
// every conversion between PIPE_ALL barriers, parts of the instruction's group; the
// manual form's flags order it.
func writeCvt(w *writer, in isa.Instr) {
	dst, src := w.p.Tiles[in.Args[0].Tile], w.p.Tiles[in.Args[1].Tile]
	toInt := src.DType.IsFloat() && (dst.DType.IsInt() && dst.DType != dtype.Bool)
	plain := in.Mode == isa.ModeNone && !toInt
	if !plain && !(in.Mode == isa.RoundRint && (toInt || dst.DType.IsFloat())) && !(toInt && in.Mode != isa.RoundOdd) {
		w.fail("tcvt.%s from %s to %s cannot be written in PTO-AS for ptoas 0.1.1: the dialect's tcvt is compiled to CAST_RINT (nearest even) whatever its mode, and only float to integer conversions are written around it", in.Mode, src.DType, dst.DType)
	}
	auto := w.addrs == nil
	if plain && !auto {
		w.op("tcvt", rint, "", w.tileOp(in, 1), w.tileOp(in, 0))
		return
	}
	g := w.group(in)
	k := 0
	next := func() string { k++; return g(k - 1) }
	barrier := func() { w.line(`"pto.barrier"() <{pipe = #pto.pipe<PIPE_ALL>}> {%s} : () -> ()`, next()) }
	if auto {
		barrier()
		defer barrier()
	}
	if toInt && in.Mode != isa.RoundRint {
		writeCvtToInt(w, in, next)
		return
	}
	// Nearest even is the dialect's CAST_RINT; the group keeps our mode.
	w.op("tcvt", rint, next(), w.tileOp(in, 1), w.tileOp(in, 0))
}

// writeCvtToInt writes a float to integer conversion that truncates, floors, ceils
// or rounds half away: r = rint(x) (CAST_RINT), d = float(r) - x (exact: |d| <= 1/2
// and both are near), then, from the bits of d and x as i32 (treshape), -1/0 masks
// of d > 0, d < 0, d == -1/2, d == 1/2 and x < 0 pick the neighbour the mode wants:
// floor adds -1 where d > 0, ceil +1 where d < 0, truncation floors where x >= 0 and
// ceils where x < 0, and half away moves a tie rint took toward zero. Where |x| >= 2^23
// x is an integer and r is the answer (the masks are cleared), which also covers
// infinities and NaN, converted by the dialect's conversion as by ours.
func writeCvtToInt(w *writer, in isa.Instr, next func() string) {
	t := in.Args[0].Tile
	dst, src := w.p.Tiles[t], w.p.Tiles[in.Args[1].Tile]
	i32 := func(v int64) operand { return operand{w.scalarImm(float64(v), dtype.Int32), "i32"} }
	x := w.tileOp(in, 1)
	if src.DType != dtype.Float32 {
		xf := w.scratchLike(t, dtype.Float32)
		w.op("tcvt", rint, next(), x, xf) // f16 and bf16 widen exactly
		x = xf
	}
	r := w.tileOp(in, 0)
	if dst.DType != dtype.Int32 {
		r = w.scratchLike(t, dtype.Int32)
	}
	f := w.scratchLike(t, dtype.Float32)
	w.op("tcvt", rint, next(), x, r)
	w.op("tcvt", rint, next(), r, f)
	w.op("tsub", "", next(), f, x, f)
	d, xb := w.scratchLike(t, dtype.Int32), w.scratchLike(t, dtype.Int32)
	w.op("treshape", "", next(), f, d)
	w.op("treshape", "", next(), x, xb)
	shift := w.scratchLike(t, dtype.Int32)
	w.op("texpands", "", next(), i32(31), shift)
	// small: -1 where |x| < 2^23 (the only place r may be off).
	small := w.scratchLike(t, dtype.Int32)
	w.op("tands", "", next(), xb, i32(0x7fffffff), small)
	w.op("tadds", "", next(), small, i32(-0x4b000000), small)
	w.op("tshr", "", next(), small, shift, small)
	// sx: -1 where x's sign bit is set (-0 included: its conversion is 0 either way).
	w.op("tshr", "", next(), xb, shift, xb)
	m, tmp := w.scratchLike(t, dtype.Int32), w.scratchLike(t, dtype.Int32)
	// eqv sets m to -1 where d's bits equal bits, else 0.
	eqv := func(bits int64) {
		w.op("txors", "", next(), d, i32(bits), m)
		w.op("texpands", "", next(), i32(0), tmp)
		w.op("tsub", "", next(), tmp, m, tmp)
		w.op("tor", "", next(), m, tmp, m)
		w.op("tshr", "", next(), m, shift, m)
		w.op("txors", "", next(), m, i32(-1), m)
	}
	// pos sets m to -1 where d > 0; neg where d < 0 (d is never -0: x - x is +0).
	pos := func() {
		w.op("texpands", "", next(), i32(0), m)
		w.op("tsub", "", next(), m, d, m)
		w.op("tshr", "", next(), m, shift, m)
	}
	neg := func() { w.op("tshr", "", next(), d, shift, m) }
	// apply adds m (-1/0) to r, or subtracts it, where small (and, with sign, where
	// x's sign is that: +1 negative, -1 non-negative, 0 any).
	apply := func(add bool, sign int) {
		w.op("tand", "", next(), m, small, m)
		switch sign {
		case 1:
			w.op("tand", "", next(), m, xb, m)
		case -1:
			w.op("txors", "", next(), xb, i32(-1), tmp)
			w.op("tand", "", next(), m, tmp, m)
		}
		op := "tsub"
		if add {
			op = "tadd"
		}
		w.op(op, "", next(), r, m, r)
	}
	switch in.Mode {
	case isa.RoundFloor:
		pos()
		apply(true, 0)
	case isa.RoundCeil:
		neg()
		apply(false, 0)
	case isa.ModeNone, isa.RoundTrunc:
		pos()
		apply(true, -1)
		neg()
		apply(false, 1)
	case isa.RoundAway:
		eqv(-0x41000000) // d == -0.5: rint(x) took x > 0 down
		apply(false, -1)
		eqv(0x3f000000) // d == 0.5: rint(x) took x < 0 up
		apply(true, 1)
	}
	if r.name != w.tileOp(in, 0).name {
		// A narrower integer: the low bits, sign-extended (our wrap), so that the
		// conversion is exact whether the hardware's saturates or wraps.
		w.op("texpands", "", next(), i32(int64(32-8*dst.DType.Size())), shift)
		w.op("tshl", "", next(), r, shift, r)
		w.op("tshr", "", next(), r, shift, r)
		w.op("tcvt", rint, next(), r, w.tileOp(in, 0))
	}
}
