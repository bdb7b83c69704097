package device

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// f16ULP is the spacing of fp16 values around v.
func f16ULP(v float64) float64 {
	if math.Abs(v) < 0x1p-14 {
		return 0x1p-24
	}
	_, e := math.Frexp(v)
	return math.Ldexp(1, e-11)
}

func TestGEMMTiled2x2WithKAccumulation(t *testing.T) {
	// 48 x 48 x 40 in 32 x 32 x 32 tiles: a 2 x 2 grid whose second row and column are
	// 16-wide edge tiles, and two K steps of which the second is 8 deep (the rest of
	// the tiles zero-filled). Four blocks on tiny's two cube cores.
	s := gemmSpec{M: 48, N: 48, K: 40, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float16}
	rng := rand.New(rand.NewPCG(1, 2))
	a := randValues(rng, dtype.Float16, s.M*s.K, 1)
	b := randValues(rng, dtype.Float16, s.K*s.N, 1)
	for _, pingPong := range []bool{false, true} {
		s.PingPong = pingPong
		out, st := s.run(t, preset(t, "tiny"), a, b, RunOptions{})
		got := dtype.Decode(s.Out, out, s.M*s.N)
		// Bit for bit what the documented arithmetic gives ...
		require.Equal(t, s.refMirror(a, b), got)
		// ... and within one fp16 step of the float64 result rounded once.
		for i, want := range s.ref64(a, b) {
			require.InDelta(t, want, got[i], f16ULP(want), "element %d", i)
		}
		assert.Equal(t, 4, st.Blocks)
		assert.Equal(t, 2, st.ActiveCores)
		assert.Equal(t, int64(s.M*s.N*2), st.GMBytesWritten)
	}
}

func TestGEMMWithExtract(t *testing.T) {
	// A's row panel is loaded once and sliced with TEXTRACT per K step.
	s := gemmSpec{M: 64, N: 32, K: 96, TM: 32, TN: 32, TK: 32, In: dtype.Float16, Out: dtype.Float32, Extract: true}
	rng := rand.New(rand.NewPCG(3, 4))
	a := randValues(rng, dtype.Float16, s.M*s.K, 2)
	b := randValues(rng, dtype.Float16, s.K*s.N, 2)
	out, _ := s.run(t, preset(t, "tiny"), a, b, RunOptions{})
	require.Equal(t, s.refMirror(a, b), dtype.Decode(dtype.Float32, out, s.M*s.N))
}

func TestGEMMBFloat16(t *testing.T) {
	s := gemmSpec{M: 32, N: 48, K: 64, TM: 32, TN: 32, TK: 32, In: dtype.BFloat16, Out: dtype.BFloat16, PingPong: true}
	rng := rand.New(rand.NewPCG(5, 6))
	a := randValues(rng, dtype.BFloat16, s.M*s.K, 4)
	b := randValues(rng, dtype.BFloat16, s.K*s.N, 4)
	out, _ := s.run(t, preset(t, "tiny"), a, b, RunOptions{})
	require.Equal(t, s.refMirror(a, b), dtype.Decode(dtype.BFloat16, out, s.M*s.N))
}

func TestGEMMInt8(t *testing.T) {
	// int8 x int8 accumulates exactly in int32.
	s := gemmSpec{M: 40, N: 40, K: 96, TM: 32, TN: 32, TK: 64, In: dtype.Int8, Out: dtype.Int32, PingPong: true}
	rng := rand.New(rand.NewPCG(7, 8))
	a := randValues(rng, dtype.Int8, s.M*s.K, 127)
	b := randValues(rng, dtype.Int8, s.K*s.N, 127)
	out, _ := s.run(t, preset(t, "tiny"), a, b, RunOptions{})
	require.Equal(t, s.refMirror(a, b), dtype.Decode(dtype.Int32, out, s.M*s.N))
}

func TestFixpipeStoreRoundsToNearestEven(t *testing.T) {
	// acc = a0 * 1 + a1 * 1, with sums an fp16 cannot hold exactly; the fixpipe store
	// to fp16 must round each to nearest, ties to even.
	cases := []struct{ a0, a1, want float64 }{
		{1, 0x1p-11, 1},                     // tie: 1 + half an ulp -> even (1)
		{1 + 0x1p-10, 0x1p-11, 1 + 0x1p-9},  // tie: odd mantissa rounds up
		{1, 0x1p-11 + 0x1p-12, 1 + 0x1p-10}, // above the tie
		{1, 0x1p-11 - 0x1p-13, 1},           // below the tie
		{65504, 16, math.Inf(1)},            // 65520 is the tie to infinity
		{65504, 15, 65504},                  // just below it
	}
	// Column 1 of C halves the same sums: subnormal results that fall on ties.
	halves := []struct{ a0, want float64 }{
		{0x1p-24, 0},             // half the smallest subnormal: tie to even (0)
		{3 * 0x1p-24, 0x1p-23},   // 1.5 ulp: tie to even (2 ulp)
		{-5 * 0x1p-24, -0x1p-23}, // -2.5 ulp: tie to even (-2 ulp)
	}
	b := newProg("fixpipe_round", isa.Cube)
	pa := b.param("a", dtype.Float16, 16*16)
	pw := b.param("w", dtype.Float16, 16*16)
	pc := b.param("c", dtype.Float16, 16*16)
	am := b.tile("a_l1", isa.Mat, dtype.Float16, 16, 16)
	wm := b.tile("w_l1", isa.Mat, dtype.Float16, 16, 16)
	al := b.tile("a_l0", isa.Left, dtype.Float16, 16, 16)
	wl := b.tile("w_l0", isa.Right, dtype.Float16, 16, 16)
	acc := b.tile("acc", isa.Acc, dtype.Float32, 16, 16)
	b.op(isa.TLOAD, tl(am), view(pa, 0, 16, 16, 16))
	b.op(isa.TLOAD, tl(wm), view(pw, 0, 16, 16, 16))
	b.op(isa.TMOV, tl(al), tl(am))
	b.op(isa.TMOV, tl(wl), tl(wm))
	b.op(isa.TMATMUL, tl(acc), tl(al), tl(wl))
	b.op(isa.TSTORE, view(pc, 0, 16, 16, 16), tl(acc))
	m := compile(t, preset(t, "tiny"), b.p)

	a := make([]float64, 256)
	w := make([]float64, 256)
	w[0], w[16] = 1, 1 // column 0 of C sums A's first two columns
	w[1] = 0.5         // column 1 halves A's first column
	for i, c := range cases {
		a[i*16], a[i*16+1] = c.a0, c.a1
	}
	for i, c := range halves {
		a[(len(cases)+i)*16] = c.a0
	}
	for _, v := range a {
		require.Equal(t, v, dtype.Round(dtype.Float16, v), "inputs must be fp16 values")
	}
	l := layout(dtype.Encode(dtype.Float16, a), dtype.Encode(dtype.Float16, w), make([]byte, 512))
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Cube, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	got := dtype.Decode(dtype.Float16, l.bytes(2, 512), 256)
	for i, c := range cases {
		assert.Equal(t, c.want, got[i*16], "%g + %g", c.a0, c.a1)
	}
	for i, c := range halves {
		got := got[(len(cases)+i)*16+1]
		assert.Equal(t, c.want, got, "%g / 2", c.a0)
		assert.Equal(t, math.Signbit(c.a0), math.Signbit(got), "sign of %g / 2", c.a0)
	}
}

func TestMatmulAccKeepsAccumulating(t *testing.T) {
	// Two matmul.acc steps on top of a matmul triple the product.
	b := newProg("acc3", isa.Cube)
	pa := b.param("a", dtype.Float16, 16*16)
	pc := b.param("c", dtype.Float32, 16*16)
	am := b.tile("a_l1", isa.Mat, dtype.Float16, 16, 16)
	al := b.tile("a_l0", isa.Left, dtype.Float16, 16, 16)
	ar := b.tile("a_r", isa.Right, dtype.Float16, 16, 16)
	acc := b.tile("acc", isa.Acc, dtype.Float32, 16, 16)
	b.op(isa.TLOAD, tl(am), view(pa, 0, 16, 16, 16))
	b.op(isa.TMOV, tl(al), tl(am))
	b.op(isa.TMOV, tl(ar), tl(am))
	b.op(isa.TMATMUL, tl(acc), tl(al), tl(ar))
	b.op(isa.TMATMUL_ACC, tl(acc), tl(al), tl(ar))
	b.op(isa.TMATMUL_ACC, tl(acc), tl(al), tl(ar))
	b.op(isa.TSTORE, view(pc, 0, 16, 16, 16), tl(acc))
	m := compile(t, preset(t, "tiny"), b.p)
	a := make([]float64, 256)
	for i := range 16 {
		a[i*16+i] = float64(i + 1) // diagonal: A @ A = diag((i+1)^2)
	}
	l := layout(dtype.Encode(dtype.Float16, a), make([]byte, 1024))
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Cube, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	got := dtype.Decode(dtype.Float32, l.bytes(1, 1024), 256)
	for i := range 16 {
		for j := range 16 {
			want := 0.0
			if i == j {
				want = 3 * float64((i+1)*(i+1))
			}
			require.Equal(t, want, got[i*16+j], "(%d, %d)", i, j)
		}
	}
}

func TestGEMMFloat32(t *testing.T) {
	// fp32 operands: each product rounds to fp32, then accumulates like the others.
	s := gemmSpec{M: 17, N: 65, K: 33, TM: 16, TN: 32, TK: 16, In: dtype.Float32, Out: dtype.Float32, PingPong: true}
	rng := rand.New(rand.NewPCG(13, 14))
	a := randValues(rng, dtype.Float32, s.M*s.K, 1)
	b := randValues(rng, dtype.Float32, s.K*s.N, 1)
	out, st := s.run(t, preset(t, "tiny"), a, b, RunOptions{})
	require.Equal(t, s.refMirror(a, b), dtype.Decode(dtype.Float32, out, s.M*s.N))
	assert.Equal(t, 6, st.Blocks)
}
