package dtype

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every binary16 value widens to float32 and rounds back to itself.
func TestFloat16RoundTripsEveryValue(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := Float16ToFloat32(uint16(h))
		back := Float32ToFloat16(f)
		if f != f {
			require.True(t, back&0x7c00 == 0x7c00 && back&0x3ff != 0, "NaN %#04x must stay NaN", h)
			continue
		}
		require.Equal(t, uint16(h), back, "value %#04x (%g)", h, f)
	}
}

// Every bfloat16 value widens to float32 and rounds back to itself.
func TestBFloat16RoundTripsEveryValue(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := BFloat16ToFloat32(uint16(h))
		back := Float32ToBFloat16(f)
		if f != f {
			require.True(t, BFloat16ToFloat32(back) != BFloat16ToFloat32(back), "NaN %#04x must stay NaN", h)
			continue
		}
		require.Equal(t, uint16(h), back)
	}
}

// Rounding to float16 is to the nearest value, ties to even, checked against the exact
// midpoints between neighbouring half values across the whole finite range.
func TestFloat16RoundsToNearestEven(t *testing.T) {
	for h := uint16(0); h < 0x7bff; h++ {
		lo, hi := float64(Float16ToFloat32(h)), float64(Float16ToFloat32(h+1))
		mid := float32((lo + hi) / 2) // exact: half values have 11 significant bits
		want := h
		if h&1 == 1 {
			want = h + 1
		}
		require.Equal(t, want, Float32ToFloat16(mid), "tie between %#04x and %#04x", h, h+1)
		require.Equal(t, h, Float32ToFloat16(math.Nextafter32(mid, float32(lo))))
		require.Equal(t, h+1, Float32ToFloat16(math.Nextafter32(mid, float32(hi))))
	}
	require.Equal(t, uint16(0x7c00), Float32ToFloat16(65520), "65520 rounds up to +inf")
	require.Equal(t, uint16(0x7bff), Float32ToFloat16(65519.99))
	require.Equal(t, uint16(0x0001), Float32ToFloat16(0x1p-24), "smallest subnormal")
	require.Equal(t, uint16(0x0000), Float32ToFloat16(0x1p-25), "tie to even rounds to zero")
	require.Equal(t, uint16(0x8000), Float32ToFloat16(float32(math.Copysign(0, -1))))
}

func TestBFloat16RoundsToNearestEven(t *testing.T) {
	require.Equal(t, uint16(0x3f80), Float32ToBFloat16(math.Float32frombits(0x3f808000)), "tie to even (down)")
	require.Equal(t, uint16(0x3f82), Float32ToBFloat16(math.Float32frombits(0x3f818000)), "tie to even (up)")
	require.Equal(t, uint16(0x3f81), Float32ToBFloat16(math.Float32frombits(0x3f808001)))
	require.Equal(t, uint16(0x7f80), Float32ToBFloat16(math.MaxFloat32), "overflow rounds to +inf")
}

func TestRoundAndStoreAgree(t *testing.T) {
	vals := []float64{0, -0.0, 1.5, -2.75, 1e6, -1e-9, 300, -129, 2147483648.5, math.Inf(1), math.NaN(), 65519.9}
	for _, d := range All {
		buf := make([]byte, d.Size())
		for _, v := range vals {
			Store(d, buf, 0, v)
			got, want := Load(d, buf, 0), Round(d, v)
			if want != want {
				require.True(t, got != got || d.IsInt() || d == Bool, "%s(%g)", d, v)
				continue
			}
			require.Equal(t, want, got, "%s(%g)", d, v)
		}
	}
	require.Equal(t, float64(-128), Round(Int8, 128), "int8 wraps like a two's-complement store")
	require.Equal(t, float64(-2), Round(Int32, -2.9), "truncates toward zero")
	require.Equal(t, float64(0), Round(Int32, math.NaN()), "NaN converts to 0")
	require.Equal(t, float64(2147483648), Round(Int64, 2147483648.5), "int64 holds what int32 cannot")
	require.Equal(t, 8, Int64.Size())
	buf := make([]byte, 8)
	Store(Int64, buf, 0, -(1 << 53))
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0xe0, 0xff}, buf, "stored as a little-endian two's-complement int64")
}

func TestParse(t *testing.T) {
	for _, d := range All {
		got, err := Parse(d.String())
		require.NoError(t, err)
		require.Equal(t, d, got)
		got, err = Parse(d.LongName())
		require.NoError(t, err)
		require.Equal(t, d, got)
	}
	_, err := Parse("float64")
	require.ErrorContains(t, err, "unknown dtype")
}

// Rounding a float64 to half or bfloat16 rounds once: the neighbours of every midpoint
// between adjacent values, one float64 ulp away (which float32 cannot tell from the
// midpoint, so float64 -> float32 -> half would round them as ties), go to the nearer
// value, and the midpoints themselves to the even one. The oracle is the pair of
// neighbours and their exact midpoint, not a rounding routine.
func TestFloat64RoundsOnceToHalfAndBFloat16(t *testing.T) {
	check := func(name string, round func(float64) uint16, widen func(uint16) float32, last uint16) {
		for _, sign := range []uint16{0, 0x8000} {
			for h := uint16(0); h < last; h++ {
				lo, hi := float64(widen(sign|h)), float64(widen(sign|(h+1)))
				mid := (lo + hi) / 2 // exact: both have few significant bits
				even := sign | h
				if h&1 == 1 {
					even = sign | (h + 1)
				}
				require.Equal(t, even, round(mid), "%s: tie between %#04x and %#04x", name, sign|h, sign|(h+1))
				require.Equal(t, sign|h, round(math.Nextafter(mid, lo)), "%s: just beside %#04x", name, sign|h)
				require.Equal(t, sign|(h+1), round(math.Nextafter(mid, hi)), "%s: just beside %#04x", name, sign|(h+1))
				require.Equal(t, sign|h, round(lo), "%s: %#04x is exact", name, sign|h)
			}
		}
	}
	check("f16", Float64ToFloat16, Float16ToFloat32, 0x7bff)
	check("bf16", Float64ToBFloat16, BFloat16ToFloat32, 0x7f7f)
	require.Equal(t, uint16(0x7c00), Float64ToFloat16(65520), "the midpoint above the largest half rounds to +inf")
	require.Equal(t, uint16(0x7bff), Float64ToFloat16(math.Nextafter(65520, 0)))
	require.Equal(t, uint16(0xfc00), Float64ToFloat16(-1e300), "overflow beyond float32 too")
	require.Equal(t, uint16(0x7f80), Float64ToBFloat16(1e300))
	require.Equal(t, uint16(0x0000), Float64ToFloat16(0x1p-25), "the tie at half the smallest subnormal rounds to zero")
	require.Equal(t, uint16(0x0001), Float64ToFloat16(math.Nextafter(0x1p-25, 1)))
	require.Equal(t, uint16(0x0000), Float64ToFloat16(1e-300), "below float32's range too")
	require.True(t, Float64ToFloat16(math.NaN())&0x7c00 == 0x7c00 && Float64ToFloat16(math.NaN())&0x3ff != 0)
	require.Equal(t, uint16(0x8000), Float64ToFloat16(math.Copysign(0, -1)))
}
