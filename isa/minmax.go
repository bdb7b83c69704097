package isa

import "math"

// Max and Min are TMAX and TMIN on one pair of elements: NaN if either is NaN, with
// +0 above -0. math.Max and math.Min give an infinity precedence over NaN
// (math.Max(NaN, +Inf) is +Inf), which is not what the vector unit does; the
// reductions (TROWMAX, TCOLMIN, ...) fold with these too.
func Max(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	return math.Max(a, b)
}

// Min: see Max.
func Min(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	return math.Min(a, b)
}
