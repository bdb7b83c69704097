package ptoas

import (
	"pypto/dtype"
	"pypto/isa"
)

// Conversions. ptoas 0.1.1 drops tcvt's rounding mode (its C++ converts with the
// default whatever the mode), so a float-to-integer conversion with a mode is written as
// the default conversion (toward zero) corrected by one where the mode rounds the other
// way, from the exact remainder x - trunc(x); every other conversion is the dialect's
// tcvt (a float-to-float or integer-to-float conversion with a mode other than rint
// keeps its mode, and the export's check of the C++ refuses it).
func init() {
	opWriters[isa.TCVT] = writeConvert
}

// cvtPlain are the modes of a float-to-integer conversion the default one computes.
var cvtPlain = map[isa.Mode]bool{isa.ModeNone: true, isa.RoundTrunc: true}

// writeConvert writes tcvt. ptoas 0.1.1 inserts no synchronisation for tcvt either (its
// C++ of a load, a conversion and a store has no flag), so the auto form writes every
// conversion between barriers; the manual form's flags order it.
func writeConvert(w *writer, in isa.Instr) {
	dst, src := w.p.Tiles[in.Args[0].Tile], w.p.Tiles[in.Args[1].Tile]
	s := &opSeq{w: w, g: w.group(in)}
	auto := w.addrs == nil
	if auto {
		s.barrier()
		defer s.barrier()
	}
	mode := in.Mode
	switch {
	case src.DType.IsFloat() && dst.DType.IsInt() && !cvtPlain[mode]:
		writeConvertToInt(s, in, src, dst)
		return
	case src.DType.IsInt() && dst.DType.IsInt(),
		src.DType.IsFloat() && dst.DType.IsInt(),
		dst.DType.IsFloat() && mode == isa.RoundRint:
		// An integer is its own rounding, toward zero is the default to integers, and
		// rint the default to floats: the default conversion, marked with ours.
		mode = isa.ModeNone
	}
	if !auto && mode == in.Mode {
		w.op("tcvt", "rmode = #pto<round_mode "+roundNames[mode]+">", "", w.tileOp(in, 1), w.tileOp(in, 0))
		return
	}
	s.op("tcvt", "rmode = #pto<round_mode "+roundNames[mode]+">", w.tileOp(in, 1), w.tileOp(in, 0))
}

// writeConvertToInt: t = trunc(x) (the default conversion, to i32), frac = x - t
// (exact: |x| < 2^23 where it matters), and t + adj, adj in {-1, 0, 1} by the mode
// from frac's sign and size and t's parity; adj is 0 where |x| >= 2^23 (x is an
// integer, or NaN or infinite: the default conversion is then the mode's).
func writeConvertToInt(s *opSeq, in isa.Instr, src, dst isa.TileDecl) {
	w := s.w
	rows, cols := dst.Rows, dst.Cols
	cvt := func(from, to operand) { s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", from, to) }
	i32 := func() operand { return s.scratch(dtype.Int32, rows, cols) }
	x := w.tileOp(in, 1)
	if src.DType != dtype.Float32 {
		f := s.scratch(dtype.Float32, rows, cols)
		cvt(x, f)
		x = f
	}
	t, tf, frac := i32(), s.scratch(dtype.Float32, rows, cols), s.scratch(dtype.Float32, rows, cols)
	cvt(x, t)
	cvt(t, tf)
	s.op("tsub", "", x, tf, frac)
	c31 := s.fill(31, rows, cols)
	fbits, mag, sign := i32(), i32(), i32()
	s.op("treshape", "", frac, fbits)
	s.op("tands", "", fbits, s.i32(0x7fffffff), mag)
	s.op("tshr", "", fbits, c31, sign)
	// lanes -1 where mag > k, where mag < k, as (k - mag) >> 31 and (mag - k) >> 31.
	above := func(k int64) operand {
		r := s.fill(k, rows, cols)
		s.op("tsub", "", r, mag, r)
		s.op("tshr", "", r, c31, r)
		return r
	}
	below := func(k int64) operand {
		r := i32()
		s.op("tadds", "", mag, s.i32(-k), r)
		s.op("tshr", "", r, c31, r)
		return r
	}
	// even: -1 where t is even.
	even := func() operand {
		r := i32()
		s.op("tands", "", t, s.i32(1), r)
		s.op("tadds", "", r, s.i32(-1), r)
		return r
	}
	const half = 0x3f000000 // 0.5 in f32
	var cond operand        // -1 where the result is t + sign(frac)
	switch in.Mode {
	case isa.RoundFloor, isa.RoundCeil:
		// floor: frac < 0; ceil: frac > 0; the step is then sign(frac).
		cond = above(0)
		if in.Mode == isa.RoundFloor {
			s.op("tand", "", cond, sign, cond)
		} else {
			s.op("txors", "", sign, s.i32(-1), sign)
			s.op("tand", "", cond, sign, cond)
			s.op("txors", "", sign, s.i32(-1), sign)
		}
	case isa.RoundAway:
		cond = below(half)
		s.op("txors", "", cond, s.i32(-1), cond)
	case isa.RoundRint:
		cond = above(half)
		tie := below(half)
		s.op("tor", "", tie, cond, tie)
		s.op("txors", "", tie, s.i32(-1), tie) // |frac| == 0.5
		odd := even()
		s.op("txors", "", odd, s.i32(-1), odd)
		s.op("tand", "", tie, odd, tie)
		s.op("tor", "", cond, tie, cond)
	case isa.RoundOdd:
		cond = above(0)
		s.op("tand", "", cond, even(), cond)
	default:
		w.fail("tcvt.%s to an integer has no group of ops", in.Mode)
	}
	// adj = sign(frac) where cond, 0 elsewhere (sign | 1 is -1 or 1), and 0 where
	// |x| >= 2^23.
	xbits, small := i32(), i32()
	s.op("treshape", "", x, xbits)
	s.op("tands", "", xbits, s.i32(0x7fffffff), small)
	s.op("tadds", "", small, s.i32(-0x4b000000), small)
	s.op("tshr", "", small, c31, small)
	s.op("tand", "", cond, small, cond)
	s.op("tor", "", sign, s.fill(1, rows, cols), sign) // ptoas 0.1.1 rejects tors
	s.op("tand", "", cond, sign, cond)
	if dst.DType == dtype.Int32 {
		s.op("tadd", "", t, cond, w.tileOp(in, 0))
		return
	}
	// A narrower integer: the low bits, sign-extended, so that the conversion is exact.
	s.op("tadd", "", t, cond, t)
	shift := s.fill(int64(32-8*dst.DType.Size()), rows, cols)
	s.op("tshl", "", t, shift, t)
	s.op("tshr", "", t, shift, t)
	cvt(t, w.tileOp(in, 0))
}
