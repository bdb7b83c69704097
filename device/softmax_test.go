package device

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// Tiled row softmax (TROWMAX, TROWEXPANDSUB, TEXP, TROWSUM, TROWEXPANDDIV), run on the
// device and on the reference interpreter and compared bit for bit.

// softmaxBlock is one block of a static softmax over a rows x 128 f32 matrix: it
// handles the 16-row tile at row r0, the last one partial through the valid rows of
// its tiles and the window of its load and store.
func softmaxBlock(rows, r0 int) string {
	vr := min(16, rows-r0)
	return fmt.Sprintf(`
kernel softmax vector
param %%x: f32[%[1]d]
param %%y: f32[%[1]d]
tile %%t: vec f32[16x128] valid %[2]d x *
tile %%m: vec f32[16x8] valid %[2]d x 1
  tload %%t, %%x[%[3]d; %[2]dx128; 128,1]
  trowmax %%m, %%t
  trowexpandsub %%t, %%t, %%m
  texp %%t, %%t
  trowsum %%m, %%t
  trowexpanddiv %%t, %%t, %%m
  tstore %%y[%[3]d; %[2]dx128; 128,1], %%t
end
`, rows*128, vr, r0*128)
}

func TestSoftmaxTiledMultiBlock(t *testing.T) {
	const rows = 53
	chip := preset(t, "tiny")
	x := make([]float64, rows*128)
	for i := range x {
		x[i] = float64(float32(math.Sin(float64(i)*0.37) * 6))
	}
	in := [][]byte{dtype.Encode(dtype.Float32, x), make([]byte, rows*128*4)}

	l := layout(in...)
	var blocks []Block
	want := cloneAll(in)
	for r0 := 0; r0 < rows; r0 += 16 {
		p := parse(t, softmaxBlock(rows, r0))
		require.NoError(t, isa.Interpret(p, want))
		blocks = append(blocks, Block{Prog: compile(t, chip, p), ParamAddrs: l.addrs})
	}
	st, err := RunTask(chip, l.gm, isa.Vector, blocks, RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, want[1], l.bytes(1, len(in[1])), "device and reference agree bit for bit")
	assert.Equal(t, 4, st.Blocks)

	// And the result is a softmax: rows sum to 1, to float32 accuracy.
	y := dtype.Decode(dtype.Float32, l.bytes(1, len(in[1])), rows*128)
	for r := 0; r < rows; r++ {
		sum := 0.0
		for c := 0; c < 128; c++ {
			sum += y[r*128+c]
		}
		assert.InDelta(t, 1, sum, 1e-5, "row %d", r)
	}
}

// softmaxDynamic is the docs/isa.md example: n rows read from GM, a loop over
// 16-row tiles, the last partial through a register-given valid size and window.
const softmaxDynamic = `
kernel softmax_dyn vector
param %x: f32[131072]
param %y: f32[131072]
param %n: i32[1]
reg %rows
reg %tiles
reg %i
reg %off
reg %vr
tile %t: vec f32[16x128] valid %vr x *
tile %m: vec f32[16x1] valid %vr x * dn
  sld %rows, %n[0; 1x1; 1,1]
  sadd %tiles, %rows, 15
  sdiv %tiles, %tiles, 16
  loop %i, %tiles
    smul %off, %i, 2048
    smul %vr, %i, -16
    sadd %vr, %vr, %rows
    smin %vr, %vr, 16
    tload %t, %x[%off; %vr<=16 x 128; 128,1]
    trowmax %m, %t
    trowexpandsub %t, %t, %m
    texp %t, %t
    trowsum %m, %t
    trowexpanddiv %t, %t, %m
    tstore %y[%off; %vr<=16 x 128; 128,1], %t
  endloop
end
`

func TestSoftmaxDynamicLoop(t *testing.T) {
	p := parse(t, softmaxDynamic)
	for _, n := range []int{0, 1, 16, 37} {
		params := randParams(p, uint64(n))
		params[2] = dtype.Encode(dtype.Int32, []float64{float64(n)})
		want := runReference(t, p, params)
		got, st := runDevice(t, preset(t, "a2"), p, params)
		compareOutputs(t, p, want, got)
		if n > 0 {
			assert.Equal(t, int64(n*128*4), st.GMBytesWritten, "n=%d: only the valid rows are stored", n)
		}
	}
}

func TestSoftmaxF16ThroughF32(t *testing.T) {
	// f16 in and out, computed in f32: tcvt up, softmax, tcvt down.
	src := `
kernel softmax_h vector
param %x: f16[2048]
param %y: f16[2048]
tile %h: vec f16[16x128]
tile %t: vec f32[16x128]
tile %m: vec f32[16x8]
  tload %h, %x[0; 16x128; 128,1]
  tcvt %t, %h
  trowmax %m, %t
  trowexpandsub %t, %t, %m
  texp %t, %t
  trowsum %m, %t
  trowexpanddiv %t, %t, %m
  tcvt %h, %t
  tstore %y[0; 16x128; 128,1], %h
end
`
	p := parse(t, src)
	params := randParams(p, 9)
	want := runReference(t, p, params)
	got, _ := runDevice(t, preset(t, "tiny"), p, params)
	compareOutputs(t, p, want, got)
}
