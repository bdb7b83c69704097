package lower

import (
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// Bodies of the math functions the vector unit has no instruction for (exp2, expm1,
// log1p, log2, log10, erfc, logaddexp, hypot, atan2): each is built from TEXP, TLOG,
// division and selects in fp32 and rounded once to the result dtype. The error bounds
// below are in fp32 ulps of the result (docs/lowering.md); a narrower result dtype
// rounds them away but for the rare value near a rounding boundary.

// f32c is c rounded to fp32: the constant the vector unit holds.
func f32c(c float64) float64 { return float64(float32(c)) }

// maskNamed returns a packed mask scratch tile of its own, for a body that needs
// several at once.
func (b *vecBody) maskNamed(name string) int { return b.tile(name, dtype.Int8, b.tr, b.tc/8) }

// i32 returns an int32 scratch tile of the body's shape.
func (b *vecBody) i32(name string) int { return b.tile(name, dtype.Int32, b.tr, b.tc) }

// scalePow2 multiplies the fp32 tile v in place by 2**n for the int32 tile n, |n| <= 255,
// one bit of |n| at a time by exact powers of two (up for n > 0, down for n < 0): a
// result below the normal range rounds at each step that stays there, so a subnormal
// result may be off by one unit of the smallest subnormal.
func (b *vecBody) scalePow2(v, n int) {
	mag, bit, t, m := b.i32("sp_mag"), b.i32("sp_bit"), b.f32("sp_t"), b.mask()
	for _, dir := range []float64{1, -1} {
		b.emit(isa.TMULS, isa.ModeNone, mag, n, dir)
		b.emit(isa.TMAXS, isa.ModeNone, mag, mag, 0.0)
		for k := 0; k < 8; k++ {
			b.emit(isa.TSHRS, isa.ModeNone, bit, mag, float64(k))
			b.emit(isa.TANDS, isa.ModeNone, bit, bit, 1.0)
			b.emit(isa.TCMPS, isa.CmpNE, m, bit, 0.0)
			// 2**(2**k); 2**128 (past fp32's range as one constant) is two steps of 2**64
			steps := 1
			e := 1 << k
			if k == 7 {
				steps, e = 2, 64
			}
			src := v
			for s := 0; s < steps; s++ {
				b.emit(isa.TMULS, isa.ModeNone, t, src, math.Ldexp(1, int(dir)*e))
				src = t
			}
			b.emit(isa.TSEL, isa.ModeNone, v, m, t, v)
		}
	}
}

// exp2Body: x = n + f with n = rint(x) and |f| <= 1/2, 2**x = 2**n * exp(f*ln2), the
// power of two exact (scalePow2); x is first limited to [-300, 300], past which 2**x is
// 0 or inf in fp32 anyway. Within 1 ulp; exact at integers.
func exp2Body(b *vecBody, dst int, srcs []int) {
	c, nf, f, e := b.f32("clamped"), b.f32("n_f"), b.f32("frac"), b.f32("e")
	n := b.i32("n")
	b.emit(isa.TMINS, isa.ModeNone, c, srcs[0], 300.0)
	b.emit(isa.TMAXS, isa.ModeNone, c, c, -300.0) // NaN stays NaN
	b.emit(isa.TCVT, isa.RoundRint, n, c)
	b.emit(isa.TCVT, isa.ModeNone, nf, n)
	b.emit(isa.TSUB, isa.ModeNone, f, c, nf)
	b.emit(isa.TMULS, isa.ModeNone, f, f, f32c(math.Ln2))
	b.emit(isa.TEXP, isa.ModeNone, e, f)
	b.emit(isa.TMINS, isa.ModeNone, n, n, 255.0)
	b.emit(isa.TMAXS, isa.ModeNone, n, n, -255.0)
	b.scalePow2(e, n)
	b.emit(isa.TCVT, isa.ModeNone, dst, e)
}

// expm1Body is Kahan's: u = exp(x), then x where u == 1 (tiny x, -0 kept), -1 where
// u - 1 == -1, inf where u is, and (u - 1) * (x / log u) elsewhere, whose rounding
// errors cancel (within 2 ulps).
func expm1Body(b *vecBody, dst int, srcs []int) {
	x := srcs[0]
	u, um1, lu, r := b.f32("u"), b.f32("u_m1"), b.f32("log_u"), b.f32("r")
	m := b.mask()
	b.emit(isa.TEXP, isa.ModeNone, u, x)
	b.emit(isa.TSUBS, isa.ModeNone, um1, u, 1.0)
	b.emit(isa.TLOG, isa.ModeNone, lu, u)
	b.emit(isa.TDIV, isa.ModeNone, lu, x, lu)
	b.emit(isa.TMUL, isa.ModeNone, r, um1, lu)
	b.emit(isa.TCMPS, isa.CmpEQ, m, u, 1.0)
	b.emit(isa.TSEL, isa.ModeNone, r, m, x, r)
	b.emit(isa.TCMPS, isa.CmpEQ, m, um1, -1.0)
	b.emit(isa.TSEL, isa.ModeNone, r, m, um1, r)
	b.emit(isa.TCMPS, isa.CmpEQ, m, u, posInf)
	b.emit(isa.TSEL, isa.ModeNone, r, m, u, r)
	b.emit(isa.TCVT, isa.ModeNone, dst, r)
}

// log1pBody is Kahan's: u = 1 + x, then x where u == 1 (tiny x, -0 kept), inf where u
// is, and log(u) * (x / (u - 1)) elsewhere, which corrects the rounding of 1 + x
// (within 2 ulps); -1 gives -inf and below it NaN, through log.
func log1pBody(b *vecBody, dst int, srcs []int) {
	x := srcs[0]
	u, um1, lu, r := b.f32("u"), b.f32("u_m1"), b.f32("log_u"), b.f32("r")
	m := b.mask()
	b.emit(isa.TADDS, isa.ModeNone, u, x, 1.0)
	b.emit(isa.TSUBS, isa.ModeNone, um1, u, 1.0)
	b.emit(isa.TLOG, isa.ModeNone, lu, u)
	b.emit(isa.TDIV, isa.ModeNone, um1, x, um1)
	b.emit(isa.TMUL, isa.ModeNone, r, lu, um1)
	b.emit(isa.TCMPS, isa.CmpEQ, m, u, 1.0)
	b.emit(isa.TSEL, isa.ModeNone, r, m, x, r)
	b.emit(isa.TCMPS, isa.CmpEQ, m, u, posInf)
	b.emit(isa.TSEL, isa.ModeNone, r, m, u, r)
	b.emit(isa.TCVT, isa.ModeNone, dst, r)
}

// log2Body splits x = m * 2**e with m in (1/2, 2) by exact power-of-two steps (down
// while m >= 2**s, up while m <= 2**-s, for s = 64, 32, ..., 1; twice 64 up so that
// subnormals reach the range), then log2 x = e + log(m) * log2(e). Powers of two give e
// exactly (m = 1); elsewhere within 2 ulps. Zero, negatives, inf and NaN come out of
// log(m) unchanged by the steps (-inf, NaN, inf, NaN).
func log2Body(b *vecBody, dst int, srcs []int) {
	m, e, t, te := b.f32("mant"), b.f32("expo"), b.f32("t"), b.f32("t_e")
	mk := b.mask()
	b.emit(isa.TMULS, isa.ModeNone, m, srcs[0], 1.0)
	b.emit(isa.TEXPANDS, isa.ModeNone, e, 0.0)
	step := func(cmp isa.Mode, bound, factor, de float64) {
		b.emit(isa.TCMPS, cmp, mk, m, bound)
		b.emit(isa.TMULS, isa.ModeNone, t, m, factor)
		b.emit(isa.TSEL, isa.ModeNone, m, mk, t, m)
		b.emit(isa.TADDS, isa.ModeNone, te, e, de)
		b.emit(isa.TSEL, isa.ModeNone, e, mk, te, e)
	}
	for s := 64; s >= 1; s /= 2 {
		step(isa.CmpGE, math.Ldexp(1, s), math.Ldexp(1, -s), float64(s))
	}
	step(isa.CmpLE, math.Ldexp(1, -64), math.Ldexp(1, 64), -64)
	for s := 64; s >= 1; s /= 2 {
		step(isa.CmpLE, math.Ldexp(1, -s), math.Ldexp(1, s), float64(-s))
	}
	b.emit(isa.TLOG, isa.ModeNone, t, m)
	b.emit(isa.TMULS, isa.ModeNone, t, t, f32c(math.Log2E))
	b.emit(isa.TADD, isa.ModeNone, te, e, t)
	b.emit(isa.TCVT, isa.ModeNone, dst, te)
}

// log10Body: log(x) / ln 10 (the division, unlike a product with 1/ln 10, is exact at
// the powers of ten fp32 holds); within 2 ulps.
func log10Body(b *vecBody, dst int, srcs []int) {
	t := b.f32("t")
	b.emit(isa.TLOG, isa.ModeNone, t, srcs[0])
	b.emit(isa.TDIVS, isa.ModeNone, t, t, f32c(math.Ln10))
	b.emit(isa.TCVT, isa.ModeNone, dst, t)
}

// erfcCoeffs is the least-squares polynomial in t - 0.6, t = 1/(1 + z/2), of
// log(erfc(z) / t) + z**2 over z in [0, 10.5] (fitted to float64 erfc by
// lower/testdata/fit_erfc.py; error under 2e-8 there, 1.3e-7 evaluated in fp32).
var erfcCoeffs = []float64{-0.5357597470283508, 1.3714202642440796, 0.07027620822191238, -0.4089133143424988,
	-0.0102753397077322, 0.289133757352829, -0.08149447292089462, -0.2328140139579773, 0.17293766140937805,
	0.1710273176431656, -0.1712324023246765, -0.11291118711233139}

// erfcBody: for z = |x| (limited to 10.5, past which erfc underflows fp32),
// erfc(z) = t * exp(-zh**2) * exp(P(t - 0.6) - (z - zh)(z + zh)) with zh = z rounded to
// 1/256, whose square is exact, so that the large exponent z**2 loses nothing; negative
// x gives 2 - erfc(|x|). Within 6 ulps down to the subnormals.
func erfcBody(b *vecBody, dst int, srcs []int) {
	x := srcs[0]
	z, t, u, zh, zl, e1, e2 := b.f32("z"), b.f32("t"), b.f32("u"), b.f32("zh"), b.f32("zl"), b.f32("e1"), b.f32("e2")
	n := b.i32("z256")
	b.emit(isa.TABS, isa.ModeNone, z, x)
	b.emit(isa.TMINS, isa.ModeNone, z, z, 10.5) // NaN stays NaN
	b.emit(isa.TMULS, isa.ModeNone, u, z, 0.5)
	b.emit(isa.TADDS, isa.ModeNone, u, u, 1.0)
	b.emit(isa.TRECIP, isa.ModeNone, t, u)
	b.emit(isa.TSUBS, isa.ModeNone, u, t, 0.6)
	p := b.horner("erfc_p", u, erfcCoeffs)
	b.emit(isa.TMULS, isa.ModeNone, zh, z, 256.0)
	b.emit(isa.TCVT, isa.RoundRint, n, zh)
	b.emit(isa.TCVT, isa.ModeNone, zh, n)
	b.emit(isa.TMULS, isa.ModeNone, zh, zh, 1.0/256)
	b.emit(isa.TSUB, isa.ModeNone, zl, z, zh) // exact; NaN for NaN
	b.emit(isa.TADD, isa.ModeNone, u, z, zh)
	b.emit(isa.TMUL, isa.ModeNone, u, u, zl)
	b.emit(isa.TSUB, isa.ModeNone, u, p, u)
	b.emit(isa.TEXP, isa.ModeNone, e2, u)
	b.emit(isa.TMUL, isa.ModeNone, e2, e2, t)
	b.emit(isa.TMUL, isa.ModeNone, u, zh, zh)
	b.emit(isa.TMULS, isa.ModeNone, u, u, -1.0)
	b.emit(isa.TEXP, isa.ModeNone, e1, u)
	b.emit(isa.TMUL, isa.ModeNone, e1, e1, e2) // erfc(|x|)
	m := b.mask()
	b.emit(isa.TMULS, isa.ModeNone, e2, e1, -1.0)
	b.emit(isa.TADDS, isa.ModeNone, e2, e2, 2.0)
	b.emit(isa.TCMPS, isa.CmpLT, m, x, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, e1, m, e2, e1)
	b.emit(isa.TCVT, isa.ModeNone, dst, e1)
}

// logAddExpBody is numpy's formula: max(a, b) + log1p(exp(-|a - b|)) with log1p as
// log1pBody computes it, and a + ln 2 where a == b (so inf and -inf stay); NaN if either
// is NaN. Within 2 ulps.
func logAddExpBody(b *vecBody, dst int, srcs []int) {
	a, c := srcs[0], srcs[1]
	mx, d, r := b.f32("max"), b.f32("diff"), b.f32("lae")
	b.emit(isa.TMAX, isa.ModeNone, mx, a, c)
	b.emit(isa.TSUB, isa.ModeNone, d, a, c)
	b.emit(isa.TABS, isa.ModeNone, d, d)
	b.emit(isa.TMULS, isa.ModeNone, d, d, -1.0)
	b.emit(isa.TEXP, isa.ModeNone, d, d)
	l := b.f32("l1p")
	log1pBody(b, l, []int{d})
	b.emit(isa.TADD, isa.ModeNone, r, mx, l)
	eq, s := b.maskNamed("equal"), b.f32("same")
	b.emit(isa.TCMP, isa.CmpEQ, eq, a, c)
	b.emit(isa.TADDS, isa.ModeNone, s, a, f32c(math.Ln2))
	b.emit(isa.TSEL, isa.ModeNone, r, eq, s, r)
	b.emit(isa.TCVT, isa.ModeNone, dst, r)
}

// hypotBody: with p = max(|a|, |b|) and q = min, p * sqrt(1 + (q/p)**2), which cannot
// overflow before the result does; 0 where p is 0, inf where either operand is infinite
// (C's hypot, NaN or not). Within 2 ulps.
func hypotBody(b *vecBody, dst int, srcs []int) {
	aa, ab, p, q, r := b.f32("abs_a"), b.f32("abs_b"), b.f32("p"), b.f32("q"), b.f32("hyp")
	b.emit(isa.TABS, isa.ModeNone, aa, srcs[0])
	b.emit(isa.TABS, isa.ModeNone, ab, srcs[1])
	b.emit(isa.TMAX, isa.ModeNone, p, aa, ab)
	b.emit(isa.TMIN, isa.ModeNone, q, aa, ab)
	b.emit(isa.TDIV, isa.ModeNone, q, q, p)
	b.emit(isa.TMUL, isa.ModeNone, q, q, q)
	b.emit(isa.TADDS, isa.ModeNone, q, q, 1.0)
	b.emit(isa.TSQRT, isa.ModeNone, q, q)
	b.emit(isa.TMUL, isa.ModeNone, r, p, q)
	m := b.mask()
	b.emit(isa.TCMPS, isa.CmpEQ, m, p, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, r, m, p, r)
	b.emit(isa.TCMPS, isa.CmpEQ, m, aa, posInf)
	b.emit(isa.TSEL, isa.ModeNone, r, m, aa, r)
	b.emit(isa.TCMPS, isa.CmpEQ, m, ab, posInf)
	b.emit(isa.TSEL, isa.ModeNone, r, m, ab, r)
	b.emit(isa.TCVT, isa.ModeNone, dst, r)
}

// negativeMask sets m where v is below zero or is -0 (whose reciprocal is -inf); inv is
// a scratch tile.
func (b *vecBody) negativeMask(m, v, inv int) {
	m2 := b.maskNamed("neg_zero")
	b.emit(isa.TCMPS, isa.CmpLT, m, v, 0.0)
	b.emit(isa.TRECIP, isa.ModeNone, inv, v)
	b.emit(isa.TCMPS, isa.CmpLT, m2, inv, 0.0)
	b.emit(isa.TOR, isa.ModeNone, m, m, m2)
}

// atan2Body (y = a, x = b): t = min(|y|, |x|) / max(|y|, |x|) in [0, 1] (1 where they
// are equal, infinities included, and 0 where both are 0), atan t from Cephes' atanf
// (t above tan(pi/8) reduced by atan t = pi/4 + atan((t - 1)/(t + 1)), then its
// polynomial), then pi/2 - r where |y| > |x|, pi - r where x is negative (-0 included),
// and the sign of y (-0 included), as C's atan2. Within 3 ulps. Six fp32 scratch tiles,
// each reused once its value is dead.
func atan2Body(b *vecBody, dst int, srcs []int) {
	y, x := srcs[0], srcs[1]
	ta, tb, hi, t := b.f32("s0"), b.f32("s1"), b.f32("s2"), b.f32("s3")
	gt, ne, m := b.maskNamed("y_above"), b.maskNamed("unequal"), b.mask()
	b.emit(isa.TABS, isa.ModeNone, ta, y)
	b.emit(isa.TABS, isa.ModeNone, tb, x)
	b.emit(isa.TCMP, isa.CmpGT, gt, ta, tb)
	b.emit(isa.TCMP, isa.CmpNE, ne, ta, tb) // true for NaN, which then stays
	b.emit(isa.TMAX, isa.ModeNone, hi, ta, tb)
	b.emit(isa.TMIN, isa.ModeNone, t, ta, tb)
	b.emit(isa.TDIV, isa.ModeNone, t, t, hi)
	b.emit(isa.TSELS, isa.ModeNone, t, ne, t, 1.0)
	b.emit(isa.TCMPS, isa.CmpNE, m, hi, 0.0)
	b.emit(isa.TSELS, isa.ModeNone, t, m, t, 0.0)

	big := b.maskNamed("reduced")
	u, v, base := ta, tb, hi
	b.emit(isa.TCMPS, isa.CmpGT, big, t, f32c(math.Sqrt2-1))
	b.emit(isa.TSUBS, isa.ModeNone, u, t, 1.0)
	b.emit(isa.TADDS, isa.ModeNone, v, t, 1.0)
	b.emit(isa.TDIV, isa.ModeNone, u, u, v)
	b.emit(isa.TSEL, isa.ModeNone, u, big, u, t)
	b.emit(isa.TEXPANDS, isa.ModeNone, base, f32c(math.Pi/4))
	b.emit(isa.TSELS, isa.ModeNone, base, big, base, 0.0)
	z := v
	b.emit(isa.TMUL, isa.ModeNone, z, u, u)
	poly := b.horner("atan_p", z, []float64{-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2})
	r, w := t, u
	b.emit(isa.TMUL, isa.ModeNone, poly, poly, z)
	b.emit(isa.TMUL, isa.ModeNone, poly, poly, u)
	b.emit(isa.TADD, isa.ModeNone, poly, poly, u)
	b.emit(isa.TADD, isa.ModeNone, r, base, poly) // atan t

	b.emit(isa.TMULS, isa.ModeNone, w, r, -1.0)
	b.emit(isa.TADDS, isa.ModeNone, w, w, f32c(math.Pi/2))
	b.emit(isa.TSEL, isa.ModeNone, r, gt, w, r)
	b.negativeMask(m, x, v)
	b.emit(isa.TMULS, isa.ModeNone, w, r, -1.0)
	b.emit(isa.TADDS, isa.ModeNone, w, w, f32c(math.Pi))
	b.emit(isa.TSEL, isa.ModeNone, r, m, w, r)
	b.negativeMask(m, y, v)
	b.emit(isa.TMULS, isa.ModeNone, w, r, -1.0)
	b.emit(isa.TSEL, isa.ModeNone, r, m, w, r)
	b.emit(isa.TCVT, isa.ModeNone, dst, r)
}
