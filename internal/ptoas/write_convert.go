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

const rint = "rmode = #pto<round_mode CAST_RINT>"

// writeCvt writes tcvt. ptoas 0.1.1 inserts no synchronisation for tcvt (its C++ of
// a load, a conversion and a store has no flag between them), so the auto form puts
// a conversion between PIPE_ALL barriers, and a group drains every pipe around each
// tcvt and treshape in it (fencedSeq); the manual form's flags order the instruction.
func writeCvt(w *writer, in isa.Instr) {
	dst, src := w.p.Tiles[in.Args[0].Tile], w.p.Tiles[in.Args[1].Tile]
	toInt := src.DType.IsFloat() && (dst.DType.IsInt() && dst.DType != dtype.Bool)
	plain := in.Mode == isa.ModeNone && !toInt
	if !plain && !(in.Mode == isa.RoundRint && (toInt || dst.DType.IsFloat())) && !(toInt && in.Mode != isa.RoundOdd) {
		w.fail("tcvt.%s from %s to %s cannot be written in PTO-AS for ptoas 0.1.1: the dialect's tcvt is compiled to CAST_RINT (nearest even) whatever its mode, and only float to integer conversions are written around it", in.Mode, src.DType, dst.DType)
	}
	if plain && w.addrs != nil {
		w.op("tcvt", rint, "", w.tileOp(in, 1), w.tileOp(in, 0))
		return
	}
	f := newFencedSeq(w, in)
	if toInt && in.Mode != isa.RoundRint {
		writeCvtToInt(f, in)
		return
	}
	// Nearest even is the dialect's CAST_RINT; the group keeps our mode.
	f.fenced("tcvt", rint, w.tileOp(in, 1), w.tileOp(in, 0))
}

// writeCvtToInt writes a float to integer conversion that truncates, floors, ceils
// or rounds half away: r = rint(x) (CAST_RINT), d = float(r) - x (exact: |d| <= 1/2
// and both are near), then, from the bits of d and x as i32 (treshape), -1/0 masks
// of d > 0, d < 0, d == -1/2, d == 1/2 and x < 0 pick the neighbour the mode wants:
// floor adds -1 where d > 0, ceil +1 where d < 0, truncation floors where x >= 0 and
// ceils where x < 0, and half away moves a tie rint took toward zero. Where |x| >= 2^23
// x is an integer and r is the answer (the masks are cleared), which also covers
// infinities and NaN, converted by the dialect's conversion as by ours.
func writeCvtToInt(f *fencedSeq, in isa.Instr) {
	w, s := f.s.w, f.s
	dst, src := w.p.Tiles[in.Args[0].Tile], w.p.Tiles[in.Args[1].Tile]
	rows, cols := dst.Rows, dst.Cols
	x := w.tileOp(in, 1)
	if src.DType != dtype.Float32 {
		xf := s.scratch(dtype.Float32, rows, cols)
		f.fenced("tcvt", rint, x, xf) // f16 and bf16 widen exactly
		x = xf
	}
	r := w.tileOp(in, 0)
	if dst.DType != dtype.Int32 {
		r = s.scratch(dtype.Int32, rows, cols)
	}
	fl := s.scratch(dtype.Float32, rows, cols)
	f.fenced("tcvt", rint, x, r)
	f.fenced("tcvt", rint, r, fl)
	f.op("tsub", "", fl, x, fl)
	d, xb := s.scratch(dtype.Int32, rows, cols), s.scratch(dtype.Int32, rows, cols)
	f.fenced("treshape", "", fl, d)
	f.fenced("treshape", "", x, xb)
	shift := s.scratch(dtype.Int32, rows, cols)
	f.op("texpands", "", s.i32(31), shift)
	// small: -1 where |x| < 2^23 (the only place r may be off).
	small := s.scratch(dtype.Int32, rows, cols)
	f.op("tands", "", xb, s.i32(0x7fffffff), small)
	f.op("tadds", "", small, s.i32(-0x4b000000), small)
	f.op("tshr", "", small, shift, small)
	// sx: -1 where x's sign bit is set (-0 included: its conversion is 0 either way).
	f.op("tshr", "", xb, shift, xb)
	m, tmp := s.scratch(dtype.Int32, rows, cols), s.scratch(dtype.Int32, rows, cols)
	// eqv sets m to -1 where d's bits equal bits, else 0.
	eqv := func(bits int64) {
		f.op("txors", "", d, s.i32(bits), m)
		f.op("texpands", "", s.i32(0), tmp)
		f.op("tsub", "", tmp, m, tmp)
		f.op("tor", "", m, tmp, m)
		f.op("tshr", "", m, shift, m)
		f.op("txors", "", m, s.i32(-1), m)
	}
	// pos sets m to -1 where d > 0; neg where d < 0 (d is never -0: x - x is +0).
	pos := func() {
		f.op("texpands", "", s.i32(0), m)
		f.op("tsub", "", m, d, m)
		f.op("tshr", "", m, shift, m)
	}
	neg := func() { f.op("tshr", "", d, shift, m) }
	// apply adds m (-1/0) to r, or subtracts it, where small (and, with sign, where
	// x's sign is that: +1 negative, -1 non-negative, 0 any).
	apply := func(add bool, sign int) {
		f.op("tand", "", m, small, m)
		switch sign {
		case 1:
			f.op("tand", "", m, xb, m)
		case -1:
			f.op("txors", "", xb, s.i32(-1), tmp)
			f.op("tand", "", m, tmp, m)
		}
		op := "tsub"
		if add {
			op = "tadd"
		}
		f.op(op, "", r, m, r)
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
	if dst.DType != dtype.Int32 {
		// A narrower integer: the low bits, sign-extended (our wrap), so that the
		// conversion is exact whether the hardware's saturates or wraps.
		f.op("texpands", "", s.i32(int64(32-8*dst.DType.Size())), shift)
		f.op("tshl", "", r, shift, r)
		f.op("tshr", "", r, shift, r)
		f.fenced("tcvt", rint, r, w.tileOp(in, 0))
	} else if !f.drained {
		f.s.barrier()
	}
}
