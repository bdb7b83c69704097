package device

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// vectorKernels is one implementation of each vector kernel.
type vectorKernels struct {
	binary func(op vecOp, dst, a, b []float32)
	scalar func(op vecOp, dst, a []float32, s float32)
	lanes  func(xs []float32, mul bool) float32
	maxMin func(xs []float32, isMax bool) float32
	exp    func(dst, src []float32)
}

// vectorInputs are float32 values of every kind: normal values over a wide range,
// zeros of both signs, subnormals, infinities, NaNs, and equal pairs.
func vectorInputs(rng *rand.Rand, n int) []float32 {
	xs := make([]float32, n)
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), nan32, 1e-40, -1e-42, 88.7, 88.8, -103.9, -104.1, 11.09}
	for i := range xs {
		switch rng.IntN(8) {
		case 0:
			xs[i] = special[rng.IntN(len(special))]
		case 1:
			xs[i] = float32(rng.NormFloat64() * 100)
		default:
			xs[i] = float32(rng.NormFloat64() * 3)
		}
	}
	return xs
}

func sameBits(t *testing.T, what string, want, got []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s: element %d: portable %v (%#08x), SIMD %v (%#08x)", what, i, want[i], math.Float32bits(want[i]), got[i], math.Float32bits(got[i]))
		}
	}
}

// checkVectorKernels compares k with the portable kernels bit for bit on lengths that
// leave every tail, for every operation (NaN results included: both give nan32).
func checkVectorKernels(t *testing.T, k vectorKernels) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 1000, 4096, 4099} {
		a, b := vectorInputs(rng, n), vectorInputs(rng, n)
		for i := 0; i < n; i += 5 { // equal pairs: signed zeros meet each other
			b[i] = a[i]
			if i%10 == 0 {
				b[i] = -a[i]
			}
		}
		want, got := make([]float32, n), make([]float32, n)
		for op := vecAdd; op <= vecMin; op++ {
			binaryF32Go(op, want, a, b)
			k.binary(op, got, a, b)
			sameBits(t, "binary", want, got)
			s := float32(math.Copysign(0, -1))
			if n > 0 {
				s = b[0]
			}
			scalarF32Go(op, want, a, s)
			k.scalar(op, got, a, s)
			sameBits(t, "scalar", want, got)
		}
		for _, mul := range []bool{false, true} {
			sameBits(t, "lane reduce", []float32{laneReduceGo(a, mul)}, []float32{k.lanes(a, mul)})
			sameBits(t, "max/min", []float32{rowMaxMinGo(a, mul)}, []float32{k.maxMin(a, mul)})
		}
		expF32Go(want, a)
		k.exp(got, a)
		sameBits(t, "exp", want, got)
	}
}

// The portable kernels pass against themselves (the check needs no SIMD to be run).
func TestVectorKernelCheckRuns(t *testing.T) {
	checkVectorKernels(t, vectorKernels{binaryF32Go, scalarF32Go, laneReduceGo, rowMaxMinGo, expF32Go})
}

// exp64 is within 4 float64 ulps of e^x, the exact value from math/big's series (an
// oracle sharing nothing with exp64), on inputs over the whole float32 range where
// e^x is a finite nonzero float32, and rounds to float32 as math.Exp does on a million
// more inputs.
func TestExp64IsAccurate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 300; i++ {
		x := float32(rng.Float64()*190 - 103)
		want := bigExp(float64(x))
		got := new(big.Float).SetPrec(200).SetFloat64(exp64(x))
		rel, _ := new(big.Float).Quo(new(big.Float).Sub(got, want), want).Float64()
		if math.Abs(rel) > 4*0x1p-53 {
			t.Fatalf("exp64(%v): relative error %g", x, rel)
		}
	}
	for i := 0; i < 1_000_000; i++ {
		x := float32(rng.Float64()*190 - 103)
		if float32(exp64(x)) != float32(math.Exp(float64(x))) {
			t.Fatalf("exp64(%v) = %v rounds to %v as float32, math.Exp to %v", x, exp64(x), float32(exp64(x)), float32(math.Exp(float64(x))))
		}
	}
	if !math.IsNaN(exp64(nan32)) || exp64(float32(math.Inf(1))) < math.MaxFloat32 || exp64(float32(math.Inf(-1))) > 0x1p-150 {
		t.Fatal("special values")
	}
}

// bigExp is e^x to 200 bits by the Taylor series of e^(x/2^10), squared ten times.
func bigExp(x float64) *big.Float {
	const prec = 200
	y := new(big.Float).SetPrec(prec).SetFloat64(x)
	y.Quo(y, new(big.Float).SetPrec(prec).SetFloat64(1024))
	sum, term := new(big.Float).SetPrec(prec).SetFloat64(1), new(big.Float).SetPrec(prec).SetFloat64(1)
	for n := 1; n < 60; n++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(n)))
		sum.Add(sum, term)
	}
	for range 10 {
		sum.Mul(sum, sum)
	}
	return sum
}

// BenchmarkVectorKernels times the selected kernels (SIMD where the build and CPU
// have them) and the portable ones on one 4 x 4096 f32 tile's values.
func BenchmarkVectorKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := vectorInputs(rng, 4*4096), vectorInputs(rng, 4*4096)
	out := make([]float32, len(x))
	for _, set := range []struct {
		name string
		k    vectorKernels
	}{
		{"selected", vectorKernels{binaryF32, scalarF32, laneReduce, rowMaxMin, expF32}},
		{"portable", vectorKernels{binaryF32Go, scalarF32Go, laneReduceGo, rowMaxMinGo, expF32Go}},
	} {
		b.Run(set.name+"/exp", func(b *testing.B) {
			for b.Loop() {
				set.k.exp(out, x)
			}
		})
		b.Run(set.name+"/add", func(b *testing.B) {
			for b.Loop() {
				set.k.binary(vecAdd, out, x, y)
			}
		})
		b.Run(set.name+"/rowsum", func(b *testing.B) {
			for b.Loop() {
				set.k.lanes(x, false)
			}
		})
		b.Run(set.name+"/rowmax", func(b *testing.B) {
			for b.Loop() {
				set.k.maxMin(x, true)
			}
		})
	}
}
