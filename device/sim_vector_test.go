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

// biasReluSpec is z = relu(x * y + bias) over rows x cols, bias broadcast over rows by
// a stride-0 GM view, tiled tr x tc (edge tiles partial), one block per tile.
type biasReluSpec struct {
	rows, cols, tr, tc int
	dt                 dtype.DType
}

func (s biasReluSpec) program(r0, c0 int) *isa.Program {
	b := newProg("bias_relu", isa.Vector)
	px := b.param("x", s.dt, s.rows*s.cols)
	py := b.param("y", s.dt, s.rows*s.cols)
	pb := b.param("bias", s.dt, s.cols)
	pz := b.param("z", s.dt, s.rows*s.cols)
	tx := b.tile("x", isa.Vec, s.dt, s.tr, s.tc)
	ty := b.tile("y", isa.Vec, s.dt, s.tr, s.tc)
	tb := b.tile("bias", isa.Vec, s.dt, s.tr, s.tc)
	t1 := b.tile("xy", isa.Vec, s.dt, s.tr, s.tc)
	t2 := b.tile("z", isa.Vec, s.dt, s.tr, s.tc)
	vr, vc := min(s.tr, s.rows-r0), min(s.tc, s.cols-c0)
	off := r0*s.cols + c0
	b.op(isa.TLOAD, tl(tx), view(px, off, vr, vc, s.cols))
	b.op(isa.TLOAD, tl(ty), view(py, off, vr, vc, s.cols))
	b.op(isa.TLOAD, tl(tb), view(pb, c0, vr, vc, 0)) // every row reads the same bias
	b.op(isa.TMUL, tl(t1), tl(tx), tl(ty))
	b.op(isa.TADD, tl(t1), tl(t1), tl(tb))
	b.op(isa.TRELU, tl(t2), tl(t1))
	b.op(isa.TSTORE, view(pz, off, vr, vc, s.cols), tl(t2))
	return b.p
}

func (s biasReluSpec) run(t testing.TB, chip *Chip, x, y, bias []float64, opts RunOptions) ([]float64, *TaskStats) {
	t.Helper()
	l := layout(dtype.Encode(s.dt, x), dtype.Encode(s.dt, y), dtype.Encode(s.dt, bias), make([]byte, s.rows*s.cols*s.dt.Size()))
	var blocks []Block
	for r0 := 0; r0 < s.rows; r0 += s.tr {
		for c0 := 0; c0 < s.cols; c0 += s.tc {
			blocks = append(blocks, Block{Prog: compile(t, chip, s.program(r0, c0)), ParamAddrs: l.addrs})
		}
	}
	st, err := RunTask(chip, l.gm, isa.Vector, blocks, opts)
	require.NoError(t, err)
	return dtype.Decode(s.dt, l.bytes(3, s.rows*s.cols*s.dt.Size()), s.rows*s.cols), st
}

func (s biasReluSpec) inputs(seed uint64) (x, y, bias []float64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	return randValues(rng, s.dt, s.rows*s.cols, 3), randValues(rng, s.dt, s.rows*s.cols, 3), randValues(rng, s.dt, s.cols, 3)
}

func (s biasReluSpec) ref(x, y, bias []float64) []float64 {
	z := make([]float64, len(x))
	for i := range z {
		v := dtype.Round(s.dt, dtype.Round(s.dt, x[i]*y[i])+bias[i%s.cols])
		z[i] = dtype.Round(s.dt, math.Max(v, 0))
	}
	return z
}

func TestElementwiseEdgeTilesAndBroadcast(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.Float16, dtype.BFloat16, dtype.Float32} {
		// 40 x 100 in 16 x 64 tiles: a 3 x 2 grid with partial last row and column,
		// six blocks on tiny's four vector cores.
		s := biasReluSpec{rows: 40, cols: 100, tr: 16, tc: 64, dt: dt}
		x, y, bias := s.inputs(11)
		got, st := s.run(t, preset(t, "tiny"), x, y, bias, RunOptions{})
		require.Equal(t, s.ref(x, y, bias), got, dt.String())
		assert.Equal(t, 6, st.Blocks)
		assert.Equal(t, 4, st.ActiveCores)
		assert.Equal(t, int64(3*40*100*dt.Size()), st.GMBytesRead)
		assert.Equal(t, int64(40*100*dt.Size()), st.GMBytesWritten)
	}
}

// vecProgram runs one vector op on a single tile loaded from x (and y) and stores the
// result to z.
func runVecOp(t *testing.T, op isa.Opcode, in, out dtype.DType, x, y []float64) []float64 {
	t.Helper()
	n := len(x)
	b := newProg("op", isa.Vector)
	px := b.param("x", in, n)
	py := b.param("y", in, n)
	pz := b.param("z", out, n)
	tx := b.tile("x", isa.Vec, in, 1, n)
	ty := b.tile("y", isa.Vec, in, 1, n)
	tz := b.tile("z", isa.Vec, out, 1, n)
	b.op(isa.TLOAD, tl(tx), view(px, 0, 1, n, n))
	b.op(isa.TLOAD, tl(ty), view(py, 0, 1, n, n))
	switch op {
	case isa.TADD, isa.TMUL:
		b.op(op, tl(tz), tl(tx), tl(ty))
	default:
		b.op(op, tl(tz), tl(tx))
	}
	b.op(isa.TSTORE, view(pz, 0, 1, n, n), tl(tz))
	m := compile(t, preset(t, "tiny"), b.p)
	if y == nil {
		y = make([]float64, n)
	}
	l := layout(dtype.Encode(in, x), dtype.Encode(in, y), make([]byte, n*out.Size()))
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	return dtype.Decode(out, l.bytes(2, n*out.Size()), n)
}

func TestTCVTFloat32ToFloat16RoundsOnce(t *testing.T) {
	x := []float64{
		1 + 0x1p-11,           // tie -> 1
		1 + 3*0x1p-11,         // tie -> 1 + 2^-9 (even)
		1 + 0x1p-11 + 0x1p-23, // just above the tie -> up (a double rounding would give 1)
		65519.99,              // below the overflow tie -> 65504
		65520,                 // the tie -> inf
		-1e-8,                 // a sixth of the smallest subnormal -> -0
		3e-8,                  // 0.503 ulp of the smallest subnormal -> 2^-24
		math.Inf(-1),
		math.Copysign(0, -1),
	}
	x = append(x, make([]float64, 16-len(x))...)
	got := runVecOp(t, isa.TCVT, dtype.Float32, dtype.Float16, x, nil)
	want := []float64{1, 1 + 0x1p-9, 1 + 0x1p-10, 65504, math.Inf(1), math.Copysign(0, -1), 0x1p-24, math.Inf(-1), math.Copysign(0, -1)}
	for i, w := range want {
		assert.Equal(t, w, got[i], "tcvt(%g)", x[i])
		assert.Equal(t, math.Signbit(w), math.Signbit(got[i]), "sign of tcvt(%g)", x[i])
		// And it agrees with the dtype package bit for bit.
		assert.Equal(t, float64(dtype.Float16ToFloat32(dtype.Float32ToFloat16(float32(x[i])))), got[i])
	}
}

func TestTCVTNaNAndIntegers(t *testing.T) {
	got := runVecOp(t, isa.TCVT, dtype.Float32, dtype.Float16, append([]float64{math.NaN()}, make([]float64, 15)...), nil)
	assert.True(t, math.IsNaN(got[0]))
	// Float -> int truncates toward zero.
	x := []float64{2.9, -2.9, 0.5, -0.5, 1e6, -7, 0, 3}
	got = runVecOp(t, isa.TCVT, dtype.Float32, dtype.Int32, x, nil)
	assert.Equal(t, []float64{2, -2, 0, 0, 1e6, -7, 0, 3}, got)
	// Int -> float is exact in range.
	got = runVecOp(t, isa.TCVT, dtype.Int32, dtype.Float32, []float64{-5, 1 << 20, 7, 0, 1, 2, 3, 4}, nil)
	assert.Equal(t, []float64{-5, 1 << 20, 7, 0, 1, 2, 3, 4}, got)
}

func TestVectorIntegerArithmeticWraps(t *testing.T) {
	x := []float64{70000, -70000, 46341, 3, 0, 1, -1, 2147483647}
	y := []float64{70000, 70000, 46341, -4, 9, 1, -1, 2}
	got := runVecOp(t, isa.TMUL, dtype.Int32, dtype.Int32, x, y)
	for i := range x {
		assert.Equal(t, float64(int32(x[i])*int32(y[i])), got[i], "%g * %g", x[i], y[i])
	}
	got = runVecOp(t, isa.TADD, dtype.Int32, dtype.Int32, x, y)
	for i := range x {
		assert.Equal(t, float64(int32(x[i])+int32(y[i])), got[i], "%g + %g", x[i], y[i])
	}
	x8 := make([]float64, 32)
	y8 := make([]float64, 32)
	x8[0], y8[0], x8[1], y8[1] = 100, 100, -128, -1
	got = runVecOp(t, isa.TADD, dtype.Int8, dtype.Int8, x8, y8)
	assert.Equal(t, -56.0, got[0])
	assert.Equal(t, 127.0, got[1])
	got = runVecOp(t, isa.TRELU, dtype.Int8, dtype.Int8, []float64{-3, 4, 0, -128, 127, 1, -1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil)
	assert.Equal(t, []float64{0, 4, 0, 0, 127, 1, 0, 2}, got[:8])
}

func TestReluKeepsNaN(t *testing.T) {
	x := []float64{math.NaN(), -1, 2, math.Inf(-1), math.Inf(1), math.Copysign(0, -1), 0.5, -0.5}
	got := runVecOp(t, isa.TRELU, dtype.Float32, dtype.Float32, x, nil)
	assert.True(t, math.IsNaN(got[0]))
	assert.Equal(t, []float64{0, 2, 0, math.Inf(1), 0, 0.5, 0}, got[1:])
	assert.False(t, math.Signbit(got[5]), "relu(-0) is +0")
}

func TestFloatArithmeticIsCorrectlyRounded(t *testing.T) {
	// Random same-dtype operands: every result equals the exact value rounded once.
	rng := rand.New(rand.NewPCG(21, 22))
	for _, dt := range []dtype.DType{dtype.Float16, dtype.BFloat16, dtype.Float32} {
		x := randValues(rng, dt, 256, 100)
		y := randValues(rng, dt, 256, 1e-2)
		for _, op := range []isa.Opcode{isa.TADD, isa.TMUL} {
			got := runVecOp(t, op, dt, dt, x, y)
			for i := range x {
				exact := x[i] + y[i]
				if op == isa.TMUL {
					exact = x[i] * y[i]
				}
				require.Equal(t, dtype.Round(dt, exact), got[i], "%s %s(%g, %g)", dt, op, x[i], y[i])
			}
		}
	}
}

func TestStridedViewsTranspose(t *testing.T) {
	// Load X^T (column stride = X's row length) into a tile, store it contiguously; then
	// store a tile back through a transposed view.
	const r, c = 5, 7
	b := newProg("transpose", isa.Vector)
	px := b.param("x", dtype.Float32, r*c)
	pt := b.param("xt", dtype.Float32, r*c)
	pb := b.param("back", dtype.Float32, r*c)
	tt := b.tile("t", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(tt), isa.GMOp(isa.GMView{Param: px, Rows: c, Cols: r, RowStride: 1, ColStride: c}))
	b.op(isa.TSTORE, view(pt, 0, c, r, r), tl(tt))
	b.op(isa.TSTORE, isa.GMOp(isa.GMView{Param: pb, Rows: c, Cols: r, RowStride: 1, ColStride: c}), tl(tt))
	m := compile(t, preset(t, "tiny"), b.p)
	x := make([]float64, r*c)
	for i := range x {
		x[i] = float64(i)
	}
	l := layout(dtype.Encode(dtype.Float32, x), make([]byte, r*c*4), make([]byte, r*c*4))
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	xt := dtype.Decode(dtype.Float32, l.bytes(1, r*c*4), r*c)
	for i := range r {
		for j := range c {
			assert.Equal(t, x[i*c+j], xt[j*r+i])
		}
	}
	assert.Equal(t, x, dtype.Decode(dtype.Float32, l.bytes(2, r*c*4), r*c))
}

func TestLoadZeroFillsOutsideTheWindow(t *testing.T) {
	// Fill the tile with ones, reload a 3 x 5 window into it, store the whole tile.
	b := newProg("zero_fill", isa.Vector)
	pone := b.param("ones", dtype.Float16, 64)
	px := b.param("x", dtype.Float16, 64)
	pz := b.param("z", dtype.Float16, 64)
	tt := b.tile("t", isa.Vec, dtype.Float16, 8, 16)
	b.op(isa.TLOAD, tl(tt), view(pone, 0, 8, 8, 8))
	b.op(isa.TLOAD, tl(tt), view(px, 0, 3, 5, 8))
	b.op(isa.TSTORE, view(pz, 0, 8, 8, 8), tl(tt))
	m := compile(t, preset(t, "tiny"), b.p)
	ones, x := make([]float64, 64), make([]float64, 64)
	for i := range ones {
		ones[i], x[i] = 1, float64(i+2)
	}
	l := layout(dtype.Encode(dtype.Float16, ones), dtype.Encode(dtype.Float16, x), make([]byte, 128))
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	z := dtype.Decode(dtype.Float16, l.bytes(2, 128), 64)
	for i := range 8 {
		for j := range 8 {
			want := 0.0
			if i < 3 && j < 5 {
				want = x[i*8+j]
			}
			assert.Equal(t, want, z[i*8+j], "(%d, %d)", i, j)
		}
	}
}

func TestEmptyViewOnlyZeroFills(t *testing.T) {
	// The compiler emits a 0-column window for a K step of depth 0.
	b := newProg("empty", isa.Vector)
	px := b.param("x", dtype.Float32, 0)
	pz := b.param("z", dtype.Float32, 16)
	tt := b.tile("t", isa.Vec, dtype.Float32, 2, 8)
	b.op(isa.TLOAD, tl(tt), view(px, 0, 2, 0, 0))
	b.op(isa.TSTORE, view(pz, 0, 2, 8, 8), tl(tt))
	m := compile(t, preset(t, "tiny"), b.p)
	l := layout(make([]byte, 0), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, make([]byte, 64), l.bytes(1, 64))
}

func TestTMOVVecConverts(t *testing.T) {
	b := newProg("mov", isa.Vector)
	px := b.param("x", dtype.Float16, 16)
	pz := b.param("z", dtype.Float32, 16)
	th := b.tile("h", isa.Vec, dtype.Float16, 1, 16)
	tf := b.tile("f", isa.Vec, dtype.Float32, 1, 16)
	b.op(isa.TLOAD, tl(th), view(px, 0, 1, 16, 16))
	b.op(isa.TMOV, tl(tf), tl(th))
	b.op(isa.TSTORE, view(pz, 0, 1, 16, 16), tl(tf))
	m := compile(t, preset(t, "tiny"), b.p)
	assert.Equal(t, isa.PipeV, m.Instrs[2].Pipe)
	x := randValues(rand.New(rand.NewPCG(1, 1)), dtype.Float16, 16, 1000)
	l := layout(dtype.Encode(dtype.Float16, x), make([]byte, 64))
	_, err := RunTask(preset(t, "tiny"), l.gm, isa.Vector, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, x, dtype.Decode(dtype.Float32, l.bytes(1, 64), 16))
}
