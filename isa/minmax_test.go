package isa

import (
	"math"
	"testing"
)

func TestMaxMinPropagateNaN(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range [][2]float64{{nan, inf}, {inf, nan}, {nan, -inf}, {-inf, nan}, {nan, 0}, {1, nan}} {
		if !math.IsNaN(Max(c[0], c[1])) || !math.IsNaN(Min(c[0], c[1])) {
			t.Errorf("Max/Min(%v, %v) = %v, %v; want NaN", c[0], c[1], Max(c[0], c[1]), Min(c[0], c[1]))
		}
	}
	if z := Max(math.Copysign(0, -1), 0); math.Signbit(z) {
		t.Errorf("Max(-0, +0) = -0, want +0")
	}
	if z := Min(0, math.Copysign(0, -1)); !math.Signbit(z) {
		t.Errorf("Min(+0, -0) = +0, want -0")
	}
	if Max(-inf, 3) != 3 || Min(inf, 3) != 3 {
		t.Errorf("infinities are ordinary numbers without NaN")
	}
}
