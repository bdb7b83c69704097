package ptoas

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// The integer division and remainder groups, read literally, against Go's integer
// division (which truncates toward zero, and gives the dividend for the most negative
// one over -1, as ours wraps) and the remainder given the divisor's sign: every i8 pair, and i32 pairs of extremes, of values near the f32
// estimate's limits and of quotients near their truncation boundaries.

// divChunk is the element count of one program's tiles.
const divChunk = 1024

// divGroupQuotients runs op (tdiv or trem) of dt on (a, b) through the group read
// literally.
func divGroupQuotients(t *testing.T, op string, dt dtype.DType, a, b []float64) []float64 {
	t.Helper()
	var out []float64
	for lo := 0; lo < len(a); lo += divChunk {
		hi := min(lo+divChunk, len(a))
		ca, cb := make([]float64, divChunk), make([]float64, divChunk)
		for i := range cb {
			cb[i] = 1
		}
		copy(ca, a[lo:hi])
		copy(cb, b[lo:hi])
		src := fmt.Sprintf(`kernel div vector
param %%a: %[1]s[1024]
param %%b: %[1]s[1024]
param %%out: %[1]s[1024]
tile %%ta: vec %[1]s[32x32]
tile %%tb: vec %[1]s[32x32]
tile %%to: vec %[1]s[32x32]
  tload %%ta, %%a[0; 32x32; 32,1]
  tload %%tb, %%b[0; 32x32; 32,1]
  %[2]s %%to, %%ta, %%tb
  tstore %%out[0; 32x32; 32,1], %%to
end
`, dt, op)
		p, err := isa.Parse(src)
		require.NoError(t, err)
		m, err := WriteTask(Task{Name: "div", Programs: []*isa.Program{p}})
		require.NoError(t, err)
		fns, err := Read("div", literal(m.Text), 0)
		require.NoError(t, err)
		got, err := runBytes(fns[0].Programs[0], [][]byte{dtype.Encode(dt, ca), dtype.Encode(dt, cb), make([]byte, divChunk*dt.Size())})
		require.NoError(t, err)
		out = append(out, dtype.Decode(dt, got[2], divChunk)[:hi-lo]...)
	}
	return out
}

func checkQuotients(t *testing.T, dt dtype.DType, a, b []float64, want func(x, y int64) int64) {
	t.Helper()
	check(t, "tdiv", dt, a, b, want)
	check(t, "trem", dt, a, b, func(x, y int64) int64 { // numpy's remainder: b's sign
		r := x % y // int64: no overflow
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r
	})
}

func check(t *testing.T, op string, dt dtype.DType, a, b []float64, want func(x, y int64) int64) {
	t.Helper()
	got := divGroupQuotients(t, op, dt, a, b)
	bad := 0
	for i := range a {
		if w := float64(want(int64(a[i]), int64(b[i]))); got[i] != w {
			if bad < 10 {
				t.Errorf("%s %s: %v, %v: the group gives %v, want %v", op, dt, a[i], b[i], got[i], w)
			}
			bad++
		}
	}
	require.Zero(t, bad, "%d of %d quotients wrong", bad, len(a))
}

func TestIntDivGroupIsExactForEveryInt8Pair(t *testing.T) {
	var a, b []float64
	for x := -128; x < 128; x++ {
		for y := -128; y < 128; y++ {
			if y != 0 {
				a, b = append(a, float64(x)), append(b, float64(y))
			}
		}
	}
	checkQuotients(t, dtype.Int8, a, b, func(x, y int64) int64 { return int64(int8(x) / int8(y)) })
}

func TestIntDivGroupIsExactOnInt32Extremes(t *testing.T) {
	edges := []int64{0, 1, 2, 3, 7, 1<<24 - 1, 1 << 24, 1<<24 + 1, 1 << 30, 1<<31 - 128, 1<<31 - 129, 1<<31 - 256, 1<<31 - 2, math.MaxInt32}
	var vals []int64
	for _, e := range edges {
		vals = append(vals, e, -e)
	}
	vals = append(vals, math.MinInt32, math.MinInt32+1)
	var a, b []float64
	add := func(x, y int64) {
		if y != 0 {
			a, b = append(a, float64(int32(x))), append(b, float64(int32(y)))
		}
	}
	for _, x := range vals {
		for _, y := range vals {
			add(x, y)
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 30000; i++ {
		x := int64(int32(rng.Uint32()))
		var y int64
		switch i % 3 {
		case 0:
			y = int64(int32(rng.Uint32()))
		case 1:
			y = rng.Int63n(2000) - 1000
		default: // a quotient at a truncation boundary, and one off it
			y = int64(int32(rng.Uint32())) >> uint(rng.Intn(31))
			if y == 0 {
				y = 1
			}
			q := x / y
			x = q*y + []int64{0, 1, -1, y - 1, 1 - y}[rng.Intn(5)]
		}
		add(x, y)
	}
	checkQuotients(t, dtype.Int32, a, b, func(x, y int64) int64 { return int64(int32(x) / int32(y)) })
}
