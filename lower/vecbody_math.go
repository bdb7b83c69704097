package lower

import (
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// The vector unit has no instructions for tanh, erf, sin and cos; like the vendor's
// math libraries, the compiler evaluates them from exp, division and polynomials in
// fp32, then rounds once to the result dtype. Their error (documented in docs/api.md)
// is a few fp32 ulps, not the reference's correctly rounded value.

// f32 returns a fresh fp32 scratch tile of the body's shape.
func (b *vecBody) f32(name string) int { return b.tile(name, dtype.Float32, b.tr, b.tc) }

// horner evaluates c[0] + x*(c[1] + x*(c[2] + ...)) into a scratch tile and returns it.
func (b *vecBody) horner(name string, x int, c []float64) int {
	acc, tmp := b.f32(name+"_a"), b.f32(name+"_b")
	b.emit(isa.TEXPANDS, isa.ModeNone, acc, c[len(c)-1])
	for i := len(c) - 2; i >= 0; i-- {
		b.emit(isa.TMUL, isa.ModeNone, tmp, acc, x)
		b.emit(isa.TADDS, isa.ModeNone, acc, tmp, c[i])
	}
	return acc
}

// withSignOf returns v with the sign of x (v >= 0): -v where x < 0.
func (b *vecBody) withSignOf(v, x int) int {
	neg, out := b.f32("neg"), b.f32("signed")
	m := b.mask()
	b.emit(isa.TMULS, isa.ModeNone, neg, v, -1.0)
	b.emit(isa.TCMPS, isa.CmpLT, m, x, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, out, m, neg, v)
	return out
}

// finish rounds the fp32 result into dst (whose dtype may be narrower), where small
// |x| < cut takes the small-argument result and others the large-argument one.
func (b *vecBody) finish(dst, x, small, large int, cut float64) {
	a, res := b.f32("abs_x"), b.f32("result")
	m := b.mask()
	b.emit(isa.TABS, isa.ModeNone, a, x)
	b.emit(isa.TCMPS, isa.CmpLT, m, a, cut)
	b.emit(isa.TSEL, isa.ModeNone, res, m, small, large)
	b.emit(isa.TCVT, isa.ModeNone, dst, res)
}

// tanhBody: for |x| >= 1/16, (1 - e)/(1 + e) with e = exp(-2|x|), sign restored (the
// subtraction is exact there, as e > 1/2 only where it is small); below, the odd Taylor
// series to x^7, whose next term is under 2^-30 relative.
func tanhBody(b *vecBody, dst int, srcs []int) {
	x := srcs[0]
	a, m2, e, num, den, q := b.f32("a"), b.f32("m2"), b.f32("e"), b.f32("num"), b.f32("den"), b.f32("q")
	b.emit(isa.TABS, isa.ModeNone, a, x)
	b.emit(isa.TMULS, isa.ModeNone, m2, a, -2.0)
	b.emit(isa.TEXP, isa.ModeNone, e, m2)
	b.emit(isa.TSUBS, isa.ModeNone, m2, e, 1.0) // e - 1
	b.emit(isa.TMULS, isa.ModeNone, num, m2, -1.0)
	b.emit(isa.TADDS, isa.ModeNone, den, e, 1.0)
	b.emit(isa.TDIV, isa.ModeNone, q, num, den)
	large := b.withSignOf(q, x)
	x2, small := b.f32("x2"), b.f32("small")
	b.emit(isa.TMUL, isa.ModeNone, x2, x, x)
	p := b.horner("tanh_p", x2, []float64{1, -1.0 / 3, 2.0 / 15, -17.0 / 315})
	b.emit(isa.TMUL, isa.ModeNone, small, p, x)
	b.finish(dst, x, small, large, 1.0/16)
}

// erfBody: for |x| < 1/2 the Taylor series to x^11 (next term under 2^-26 relative);
// above, Abramowitz and Stegun 7.1.26, 1 - t*P(t)*exp(-x^2) with t = 1/(1 + p|x|),
// absolute error under 1.5e-7, sign restored.
func erfBody(b *vecBody, dst int, srcs []int) {
	x := srcs[0]
	a, t, u, e, y := b.f32("a"), b.f32("t"), b.f32("u"), b.f32("e"), b.f32("y")
	b.emit(isa.TABS, isa.ModeNone, a, x)
	b.emit(isa.TMULS, isa.ModeNone, u, a, 0.3275911)
	b.emit(isa.TADDS, isa.ModeNone, t, u, 1.0)
	b.emit(isa.TRECIP, isa.ModeNone, u, t)
	p := b.horner("erf_p", u, []float64{0, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429})
	b.emit(isa.TMUL, isa.ModeNone, t, a, a)
	b.emit(isa.TMULS, isa.ModeNone, y, t, -1.0)
	b.emit(isa.TEXP, isa.ModeNone, e, y)
	b.emit(isa.TMUL, isa.ModeNone, y, p, e)
	b.emit(isa.TMULS, isa.ModeNone, t, y, -1.0)
	b.emit(isa.TADDS, isa.ModeNone, y, t, 1.0)
	large := b.withSignOf(y, x)
	x2, small := b.f32("x2"), b.f32("small")
	b.emit(isa.TMUL, isa.ModeNone, x2, x, x)
	c := 2 / math.Sqrt(math.Pi)
	s := b.horner("erf_s", x2, []float64{c, -c / 3, c / 10, -c / 42, c / 216, -c / 1320})
	b.emit(isa.TMUL, isa.ModeNone, small, s, x)
	b.finish(dst, x, small, large, 0.5)
}

// sinCosBody evaluates sin (cos when cosine) in fp32: x = k*pi/2 + r with k the nearest
// integer to x*2/pi and r reduced with pi/2 split into three parts (Cody and Waite; the
// first has 8 significant bits, so k*part is exact for |k| < 2^16, i.e. |x| below about
// 1e5), then the minimax polynomials of sin and cos on [-pi/4, pi/4] (Cephes' sinf and
// cosf), the pair chosen and signed by k mod 4.
func sinCosBody(cosine bool) func(b *vecBody, dst int, srcs []int) {
	return func(b *vecBody, dst int, srcs []int) {
		x := srcs[0]
		kf, ki, r, t := b.f32("k"), b.tile("k_int", dtype.Int32, b.tr, b.tc), b.f32("r"), b.f32("t")
		b.emit(isa.TMULS, isa.ModeNone, t, x, 2/math.Pi)
		b.emit(isa.TCVT, isa.RoundRint, ki, t)
		b.emit(isa.TCVT, isa.ModeNone, kf, ki)
		src := x
		for _, part := range []float64{1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8} {
			b.emit(isa.TMULS, isa.ModeNone, t, kf, part)
			b.emit(isa.TSUB, isa.ModeNone, r, src, t)
			src = r
		}
		z := b.f32("z")
		b.emit(isa.TMUL, isa.ModeNone, z, r, r)
		ps := b.horner("sin_p", z, []float64{-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4})
		s, u := b.f32("s"), b.f32("u")
		b.emit(isa.TMUL, isa.ModeNone, u, ps, z)
		b.emit(isa.TMUL, isa.ModeNone, t, u, r)
		b.emit(isa.TADD, isa.ModeNone, s, t, r) // r + r*z*P(z)
		pc := b.horner("cos_p", z, []float64{4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5})
		c := b.f32("c")
		b.emit(isa.TMUL, isa.ModeNone, u, pc, z)
		b.emit(isa.TMUL, isa.ModeNone, t, u, z)
		b.emit(isa.TMULS, isa.ModeNone, u, z, -0.5)
		b.emit(isa.TADD, isa.ModeNone, c, t, u)
		b.emit(isa.TADDS, isa.ModeNone, t, c, 1.0) // 1 - z/2 + z^2*Q(z)

		// sin x = s, c, -s, -c and cos x = c, -s, -c, s for k mod 4 = 0..3: odd k swaps
		// the pair, and bit 1 of k (of k+1 for cos) negates.
		bit, m := b.tile("k_bit", dtype.Int32, b.tr, b.tc), b.mask()
		first, second := s, t
		if cosine {
			first, second = t, s
		}
		pick := b.f32("pick")
		b.emit(isa.TANDS, isa.ModeNone, bit, ki, 1.0)
		b.emit(isa.TCMPS, isa.CmpNE, m, bit, 0.0)
		b.emit(isa.TSEL, isa.ModeNone, pick, m, second, first)
		if cosine {
			b.emit(isa.TADDS, isa.ModeNone, bit, ki, 1.0)
			b.emit(isa.TANDS, isa.ModeNone, bit, bit, 2.0)
		} else {
			b.emit(isa.TANDS, isa.ModeNone, bit, ki, 2.0)
		}
		neg, res := b.f32("neg"), b.f32("result")
		b.emit(isa.TCMPS, isa.CmpNE, m, bit, 0.0)
		b.emit(isa.TMULS, isa.ModeNone, neg, pick, -1.0)
		b.emit(isa.TSEL, isa.ModeNone, res, m, neg, pick)
		b.emit(isa.TCVT, isa.ModeNone, dst, res)
	}
}

// powBody evaluates a**b in fp32 as numpy does for floats: |a|**b = exp(b*log|a|); a
// negative base gives -|a|**b for odd integer b, |a|**b for even b and NaN otherwise;
// b == 0 and a == 1 give 1 whatever the other operand (NaN included). The error grows
// with |b*log|a|| (about that many fp32 ulps).
func powBody(b *vecBody, dst int, srcs []int) {
	x, y := srcs[0], srcs[1]
	a, t, r := b.f32("abs_a"), b.f32("t"), b.f32("r")
	b.emit(isa.TABS, isa.ModeNone, a, x)
	b.emit(isa.TLOG, isa.ModeNone, t, a)
	b.emit(isa.TMUL, isa.ModeNone, a, t, y)
	b.emit(isa.TEXP, isa.ModeNone, r, a) // |a|**b

	// integer and odd exponents: b == rint(b), and b/2 not an integer
	yr, half, hr := b.f32("y_round"), b.f32("half"), b.f32("half_round")
	b.roundToInteger(yr, y, isa.RoundRint)
	b.emit(isa.TMULS, isa.ModeNone, half, y, 0.5)
	b.roundToInteger(hr, half, isa.RoundRint)
	isInt := b.tile("is_int", dtype.Int8, b.tr, b.tc/8)
	isEven := b.tile("is_even", dtype.Int8, b.tr, b.tc/8)
	neg := b.tile("neg_base", dtype.Int8, b.tr, b.tc/8)
	b.emit(isa.TCMP, isa.CmpEQ, isInt, yr, y)
	b.emit(isa.TCMP, isa.CmpEQ, isEven, hr, half)

	negR, v := b.f32("neg_r"), b.f32("v")
	b.emit(isa.TMULS, isa.ModeNone, negR, r, -1.0)
	b.emit(isa.TSEL, isa.ModeNone, v, isEven, r, negR) // the value for a negative base and integer b
	b.emit(isa.TSELS, isa.ModeNone, t, isInt, v, math.NaN())
	b.emit(isa.TCMPS, isa.CmpLT, neg, x, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, v, neg, t, r)

	one := b.tile("is_one", dtype.Int8, b.tr, b.tc/8)
	b.emit(isa.TCMPS, isa.CmpNE, one, y, 0.0) // b != 0 keeps the value
	b.emit(isa.TSELS, isa.ModeNone, t, one, v, 1.0)
	b.emit(isa.TCMPS, isa.CmpNE, one, x, 1.0) // a != 1 keeps it
	b.emit(isa.TSELS, isa.ModeNone, v, one, t, 1.0)
	b.emit(isa.TCVT, isa.ModeNone, dst, v)
}

// intPowBody evaluates a**b for integers as the reference does: square-and-multiply
// over the 31 exponent bits in int32 (products wrap, and wrapping to int8 afterwards
// gives the exact result modulo 2^8, as the reference's); a negative exponent gives 1
// for a == 1, ±1 for a == -1 by the exponent's parity, and 0 otherwise.
func intPowBody(b *vecBody, dst int, srcs []int) {
	a, e := srcs[0], srcs[1]
	i32 := func(name string) int { return b.tile(name, dtype.Int32, b.tr, b.tc) }
	rs := [2]int{i32("pow_r0"), i32("pow_r1")}
	bases := [2]int{i32("pow_b0"), i32("pow_b1")}
	bit, prod := i32("pow_bit"), i32("pow_prod")
	m := b.mask()
	b.emit(isa.TEXPANDS, isa.ModeNone, rs[0], 1.0)
	b.emit(isa.TADDS, isa.ModeNone, bases[0], a, 0.0)
	for k := 0; k < 31; k++ {
		r, base := rs[k%2], bases[k%2]
		b.emit(isa.TSHRS, isa.ModeNone, bit, e, float64(k))
		b.emit(isa.TANDS, isa.ModeNone, prod, bit, 1.0)
		b.emit(isa.TCMPS, isa.CmpNE, m, prod, 0.0)
		b.emit(isa.TMUL, isa.ModeNone, prod, r, base)
		b.emit(isa.TSEL, isa.ModeNone, rs[(k+1)%2], m, prod, r)
		b.emit(isa.TMUL, isa.ModeNone, bases[(k+1)%2], base, base)
	}
	r := rs[1] // after 31 steps the result is in rs[31 % 2]

	ones, minus, zeros := i32("pow_ones"), i32("pow_minus"), i32("pow_zeros")
	b.emit(isa.TEXPANDS, isa.ModeNone, ones, 1.0)
	b.emit(isa.TEXPANDS, isa.ModeNone, minus, -1.0)
	b.emit(isa.TEXPANDS, isa.ModeNone, zeros, 0.0)
	neg := i32("pow_neg")
	b.emit(isa.TANDS, isa.ModeNone, bit, e, 1.0)
	b.emit(isa.TCMPS, isa.CmpNE, m, bit, 0.0)
	b.emit(isa.TSEL, isa.ModeNone, neg, m, minus, ones) // (-1)**b
	b.emit(isa.TCMPS, isa.CmpEQ, m, a, -1.0)
	b.emit(isa.TSEL, isa.ModeNone, prod, m, neg, zeros)
	b.emit(isa.TCMPS, isa.CmpEQ, m, a, 1.0)
	b.emit(isa.TSEL, isa.ModeNone, neg, m, ones, prod) // the value for a negative exponent
	b.emit(isa.TCMPS, isa.CmpLT, m, e, 0.0)
	res := i32("pow_res")
	b.emit(isa.TSEL, isa.ModeNone, res, m, neg, r)
	b.emit(isa.TCVT, isa.ModeNone, dst, res)
}

// powDispatch picks the float or the integer evaluation by the result dtype.
func powDispatch(b *vecBody, dst int, srcs []int) {
	if b.e.prog.Tiles[dst].DType.IsFloat() {
		powBody(b, dst, srcs)
		return
	}
	intPowBody(b, dst, srcs)
}
