package ptoas

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// Groups on programs the golden cases cannot hold: a NaN scalar (a golden program's
// binary round trip compares immediates with ==), and gathers from windows of every
// shape the chunked loop distinguishes (contiguous, strided rows, rows that are not
// whole 32-byte blocks, a tail chunk, a register offset).

// randomCase gives prog's params random values of their dtype (an index param values
// below n).
func randomCase(t *testing.T, name, text string, n int) groupCase {
	p, err := isa.Parse(text)
	require.NoError(t, err, name)
	rng := rand.New(rand.NewSource(1))
	c := groupCase{name: name, prog: p, params: make([][]byte, len(p.Params))}
	index := indexParams(p)
	for i, prm := range p.Params {
		vals := make([]float64, prm.Elems)
		for k := range vals {
			switch {
			case index[i]:
				vals[k] = float64(rng.Intn(n))
			case prm.DType.IsFloat():
				vals[k] = rng.NormFloat64() * 4
			default:
				vals[k] = float64(rng.Intn(256) - 128)
			}
		}
		c.params[i] = dtype.Encode(prm.DType, vals)
	}
	return c
}

func TestCompareWithNaNScalarComputesTheInstruction(t *testing.T) {
	for _, dt := range []string{"f32", "f16"} {
		for _, mode := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
			text := fmt.Sprintf(`kernel cmp_nan vector
param %%a: %s[128]
param %%m: i8[128]
tile %%tm: vec i8[4x32]
tile %%ta: vec %s[4x32] valid 3x20
  tload %%tm, %%m[0; 4x32; 32,1]
  tload %%ta, %%a[0; 4x32; 32,1]
  tcmps.%s %%tm, %%ta, NaN
  tstore %%m[0; 4x32; 32,1], %%tm
end
`, dt, dt, mode)
			c := randomCase(t, "tcmps."+mode+" "+dt+" NaN", text, 0)
			assert.True(t, checkGroups(t, c))
			checkGroups(t, edgeInputs(c))
		}
	}
}

func TestGMGatherComputesTheInstruction(t *testing.T) {
	cases := []struct {
		name, dt   string
		elems      int
		window     string
		rows, cols int
		valid      string
		n          int // window elements
	}{
		{"contiguous, chunks and a tail", "f16", 20000, "16; 1x19000; 19000,1", 8, 64, "valid 8x48", 19000},
		{"contiguous rows", "f32", 9000, "0; 70x128; 128,1", 4, 32, "", 70 * 128},
		{"strided rows, a tail", "f32", 40000, "5; 300x64; 128,1", 4, 32, "valid 3x32", 300 * 64},
		{"strided rows, not whole blocks", "f16", 3000, "7; 40x50; 60,1", 2, 32, "", 40 * 50},
		{"one chunk", "f32", 64, "0; 1x64; 64,1", 4, 8, "", 64},
	}
	for _, tc := range cases {
		text := fmt.Sprintf(`kernel mg vector
param %%g: %s[%d]
param %%idx: i32[%d]
param %%out: %s[%d]
tile %%ti: vec i32[%dx%d]
tile %%to: vec %s[%dx%d] %s
  tload %%ti, %%idx[0; %dx%d; %d,1]
  mgather %%to, %%g[%s], %%ti
  tstore %%out[0; %dx%d; %d,1], %%to
end
`, tc.dt, tc.elems, tc.rows*tc.cols, tc.dt, tc.rows*tc.cols, tc.rows, tc.cols, tc.dt, tc.rows, tc.cols, tc.valid,
			tc.rows, tc.cols, tc.cols, tc.window, tc.rows, tc.cols, tc.cols)
		c := randomCase(t, "mgather "+tc.name, text, tc.n)
		assert.True(t, checkGroups(t, c), tc.name)
		checkGroups(t, edgeInputs(c))
	}
	// With a register offset.
	text := `kernel mg vector
param %g: f32[5000]
param %idx: i32[128]
param %out: f32[128]
reg %o
tile %ti: vec i32[4x32]
tile %to: vec f32[4x32]
  smov %o, 37
  tload %ti, %idx[0; 4x32; 32,1]
  mgather %to, %g[%o+3; 30x100; 150,1], %ti
  tstore %out[0; 4x32; 32,1], %to
end
`
	c := randomCase(t, "mgather at a register offset", text, 3000)
	assert.True(t, checkGroups(t, c))
}

// Conversions with a mode at the edges of the remainder's exactness: about 2^23 (from
// where every f32 is an integer), about 2^31 (the integer range), just below 0.5.
func TestConvertWithModeAtTheEdges(t *testing.T) {
	vals := []float64{8388607.5, -8388607.5, 8388608, -8388609, 4194303.5, 2147483520, -2147483648, 3e9, -3e9,
		0.49999997, -0.49999997, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1e-40, -1e-40, 16777215, 255.5, -128.5, 127.5}
	for _, dt := range []string{"i32", "i8"} {
		for _, mode := range []string{"rint", "round", "floor", "ceil", "trunc"} {
			text := fmt.Sprintf(`kernel cvt vector
param %%a: f32[256]
param %%out: %s[256]
tile %%ta: vec f32[8x32]
tile %%to: vec %s[8x32]
  tload %%ta, %%a[0; 8x32; 32,1]
  tcvt.%s %%to, %%ta
  tstore %%out[0; 8x32; 32,1], %%to
end
`, dt, dt, mode)
			c := randomCase(t, "tcvt."+mode+" f32 to "+dt, text, 0)
			x := make([]float64, 256)
			for k := range x {
				x[k] = vals[k%len(vals)]
			}
			c.params[0] = dtype.Encode(dtype.Float32, x)
			assert.True(t, checkGroups(t, c))
		}
	}
}
