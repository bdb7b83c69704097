package ptoas

import (
	"pypto/dtype"
	"pypto/isa"
)

// Integer division, which ptoas 0.1.1 takes for f16 and f32 only, as a group of ops it
// compiles: an estimate of the quotient in f32, refined once, then made exact in i32.
// With q an estimate and r = a - q*b computed in i32 (wrapping: exact whenever the true
// r fits, which the bounds below keep), the truncated quotient is the q for which r
// has a's sign (or is 0) and |r| < |b|.
//
//  1. q0 = cvt(f32(a) / f32(b)), the quotient clamped to +-(2^31 - 128) so that the
//     conversion is in range: three roundings of 2^-24 and the conversion's (toward
//     zero or to nearest: the steps below hold for either) leave |a/b - q0| below
//     1 + 385 (+ 128 where clamped, only when |b| = 1), so r = a - q0*b fits in i32
//     and |r/b| <= 514.
//  2. q1 = cvt(f32(r) / f32(b)): now |r/b - q1| < 1 + 2^-13, so r -= q1*b leaves
//     |r| < |b| * (1 + 2^-13), q += q1.
//  3. Exact, in i32 with sign masks (x >> 31): if r has a's sign and |r| >= |b| (an
//     unsigned compare: Hacker's Delight's borrow of |r| - |b|), r moves by |b| toward
//     zero and q one step away from it; then twice, if r is nonzero and of the other
//     sign than a, r moves by |b| toward a's sign and q one step back.
//
// Every value fits its type, so the group computes the quotient exactly (INT_MIN / -1
// wraps to INT_MIN, as ours does). i8 is widened to i32 first, and the quotient (128
// only for -128 / -1) wrapped into i8's range before the narrowing conversion.

func init() {
	// Each writes the dialect's op for floats and the group for integers (the remainder:
	// the division's, moved to b's sign as ours, numpy's, is; the dialect's remainder of
	// operands of mixed signs may differ), a tile-scalar op's scalar expanded first.
	for op, name := range map[isa.Opcode]string{isa.TDIV: "tdiv", isa.TREM: "trem"} {
		opWriters[op] = func(w *writer, in isa.Instr) {
			if w.p.Tiles[in.Args[0].Tile].DType.IsInt() {
				writeIntDiv(newFencedSeq(w, in), in, w.tileOp(in, 1), w.tileOp(in, 2), op == isa.TREM)
				return
			}
			w.op(name, "", "", w.tileOp(in, 1), w.tileOp(in, 2), w.tileOp(in, 0))
		}
	}
	for op, name := range map[isa.Opcode]string{isa.TDIVS: "tdivs", isa.TREMS: "trems"} {
		opWriters[op] = func(w *writer, in isa.Instr) {
			d := w.p.Tiles[in.Args[1].Tile].DType
			if w.p.Tiles[in.Args[0].Tile].DType.IsInt() {
				f := newFencedSeq(w, in)
				b := w.temp(in.Args[0].Tile)
				f.op("texpands", "", w.imm(in, 2, d), b)
				writeIntDiv(f, in, w.tileOp(in, 1), b, op == isa.TREMS)
				return
			}
			w.op(name, "", "", w.tileOp(in, 1), w.imm(in, 2, scalarType(op, d)), w.tileOp(in, 0))
		}
	}
	notes[isa.TDIV] = "integers: an f32 estimate refined once, then made exact with i32 ops (sign masks, an unsigned compare): ptoas 0.1.1's tdiv takes f16 and f32 only"
	notes[isa.TDIVS] = "integers: the divisor expanded (texpands), then tdiv's ops: ptoas 0.1.1 rejects tdivs of integers"
	notes[isa.TREM] = "integers: tdiv's ops, then the remainder given b's sign (ours is numpy's; the dialect's may differ for mixed signs)"
	notes[isa.TREMS] = "integers: the divisor expanded (texpands), then trem's ops"
}

// divClamp bounds the f32 quotient so that its conversion to i32 is in range (2^31 -
// 128 is the largest f32 below 2^31 with room for the conversion's rounding).
const divClamp = 1<<31 - 128

// writeIntDiv writes dst = a / b (in's destination), or with rem the remainder with
// b's sign, as the group's next ops.
func writeIntDiv(f *fencedSeq, in isa.Instr, a, b operand, rem bool) {
	w := f.s.w
	dst := w.p.Tiles[in.Args[0].Tile]
	if dst.DType != dtype.Int32 && dst.DType != dtype.Int8 {
		w.fail("tdiv of %s: the dialect's tdiv takes f16 and f32 only in ptoas 0.1.1, and its ops stand for it for i32 and i8", dst.DType)
	}
	tile := func(dt dtype.DType) operand { return w.scratchTile(dst, dt, dst.Rows, dst.Cols, dst.Layout) }
	op := func(name string, ops ...operand) { f.op(name, "", ops...) }
	cvt := func(src, to operand) { f.fenced("tcvt", "rmode = #pto<round_mode CAST_RINT>", src, to) }
	i32 := func(v float64) operand { return operand{w.scalarImm(v, dtype.Int32), "i32"} }
	f32 := func(v float64) operand { return operand{w.scalarImm(v, dtype.Float32), "f32"} }

	if dst.DType == dtype.Int8 {
		a32, b32 := tile(dtype.Int32), tile(dtype.Int32)
		cvt(a, a32)
		cvt(b, b32)
		a, b = a32, b32
	}
	// 1 and 2: the estimate.
	fa, fb, lo := tile(dtype.Float32), tile(dtype.Float32), tile(dtype.Float32)
	q, r, t := tile(dtype.Int32), tile(dtype.Int32), tile(dtype.Int32)
	cvt(a, fa)
	cvt(b, fb)
	op("tdiv", fa, fb, fa)
	op("tmins", fa, f32(divClamp), fa)
	op("texpands", f32(-divClamp), lo)
	op("tmax", fa, lo, fa)
	cvt(fa, q)
	op("tmul", q, b, t)
	op("tsub", a, t, r)
	cvt(r, fa)
	op("tdiv", fa, fb, fa)
	cvt(fa, t) // q1
	op("tadd", q, t, q)
	op("tmul", t, b, t)
	op("tsub", r, t, r)
	// 3: the masks and the exact steps.
	k31, ones := tile(dtype.Int32), tile(dtype.Int32)
	op("texpands", i32(31), k31)
	op("texpands", i32(-1), ones)
	sa, nsd, babs, bs := tile(dtype.Int32), tile(dtype.Int32), tile(dtype.Int32), tile(dtype.Int32)
	x, y := tile(dtype.Int32), tile(dtype.Int32)
	op("tshr", a, k31, sa) // a < 0
	op("txor", a, b, nsd)
	op("tshr", nsd, k31, nsd)
	op("txor", nsd, ones, nsd) // a and b of one sign
	op("tshr", b, k31, bs)
	op("txor", b, bs, babs)
	op("tsub", babs, bs, babs) // |b| (2^31 for INT_MIN, read unsigned)
	op("txor", babs, sa, bs)
	op("tsub", bs, sa, bs)       // |b| with a's sign
	z := sa                      // sa's tile is free from here: fewer tiles live at once
	neg := func(v, to operand) { // -v = ~v + 1
		op("txor", v, ones, to)
		op("tsub", to, ones, to)
	}
	// step q by (mask ? sign(a)*sign(b) : 0), the sign of the quotient
	stepQ := func(mask operand, name string) {
		op("txor", mask, nsd, z)
		op("tsub", z, nsd, z)
		op(name, q, z, q)
	}
	// |r| >= |b| with r of a's sign: r -= bs, q one step away from zero.
	op("tshr", r, k31, x)
	op("txor", r, x, y)
	op("tsub", y, x, y)    // |r|, unsigned
	op("txor", y, ones, x) // ~|r|
	op("tand", x, babs, z) // ~|r| & |b|
	op("tor", x, babs, x)  // ~|r| | |b|
	op("tsub", y, babs, y) // |r| - |b|
	op("tand", x, y, x)
	op("tor", z, x, x)    // sign bit: |r| <u |b|
	op("tshr", x, k31, x) // |r| < |b|
	op("txor", r, a, y)
	op("tshr", y, k31, y) // r and a of other signs
	op("tor", x, y, x)
	op("txor", x, ones, x) // the step
	op("tand", bs, x, y)
	op("tsub", r, y, r)
	stepQ(x, "tadd")
	for i := 0; i < 2; i++ { // r nonzero of the other sign than a: r += bs, q one step back
		neg(r, x)
		op("tor", r, x, x)
		op("txor", r, a, y)
		op("tand", y, x, x)
		op("tshr", x, k31, x)
		if i == 0 || rem {
			op("tand", bs, x, y)
			op("tadd", r, y, r)
		}
		if rem {
			continue
		}
		op("txor", x, nsd, z)
		op("tsub", z, nsd, z)
		if i == 0 || dst.DType == dtype.Int8 {
			op("tsub", q, z, q)
			continue
		}
		op("tsub", q, z, w.tileOp(in, 0))
	}
	if rem { // r, of a's sign, nonzero and of the other sign than b: r += b
		neg(r, x)
		op("tor", r, x, x)
		op("txor", r, b, y)
		op("tand", y, x, x)
		op("tshr", x, k31, x)
		op("tand", b, x, y)
		if dst.DType == dtype.Int8 {
			op("tadd", r, y, r)
			cvt(r, w.tileOp(in, 0))
			return
		}
		op("tadd", r, y, w.tileOp(in, 0))
		return
	}
	if dst.DType == dtype.Int8 { // wrap into i8's range: ((q + 128) & 255) - 128
		op("texpands", i32(128), x)
		op("tadd", q, x, q)
		op("texpands", i32(255), y)
		op("tand", q, y, q)
		op("tsub", q, x, q)
		cvt(q, w.tileOp(in, 0))
	}
}
