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
