package core

import (
	"math"

	"pypto/dtype"
)

// random_uniform: counter-based random numbers, the same bits for a seed on every chip
// and at every optimisation level, because element i's value is a pure function of
// (seed, i): word 0 of Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011) of the counter (i, 0, 0, 0) under the key
// (seed mod 2**32, seed >> 32), its top 24 bits scaled by 2**-24: a float32 in [0, 1)
// holding them exactly. The device computes the same rounds in int32 vector
// instructions (lower/vecbody_random.go).

// Philox-4x32's round multipliers and Weyl key increments (the paper's constants).
const (
	PhiloxM0 uint32 = 0xD2511F53
	PhiloxM1 uint32 = 0xCD9E8D57
	PhiloxW0 uint32 = 0x9E3779B9
	PhiloxW1 uint32 = 0xBB67AE85
	// PhiloxRounds is the 10 of Philox-4x32-10.
	PhiloxRounds = 10
)

// Philox4x32 is Philox-4x32-10 of counter c under key k.
func Philox4x32(c [4]uint32, k [2]uint32) [4]uint32 {
	for r := 0; r < PhiloxRounds; r++ {
		p0 := uint64(PhiloxM0) * uint64(c[0])
		p1 := uint64(PhiloxM1) * uint64(c[2])
		c = [4]uint32{uint32(p1>>32) ^ c[1] ^ k[0], uint32(p1), uint32(p0>>32) ^ c[3] ^ k[1], uint32(p0)}
		k[0] += PhiloxW0
		k[1] += PhiloxW1
	}
	return c
}

// UniformFromBits is the float in [0, 1) a Philox word gives: its top 24 bits * 2**-24.
func UniformFromBits(w uint32) float64 { return float64(w>>8) * (1.0 / (1 << 24)) }

// PhiloxKey is the key of a seed: its low and high 32 bits.
func PhiloxKey(seed int64) [2]uint32 {
	return [2]uint32{uint32(uint64(seed)), uint32(uint64(seed) >> 32)}
}

func init() {
	Register(&OpDef{Name: "random_uniform", Arity: 0, Attrs: []AttrSpec{{"shape", []int64{}}, {"seed", int64(0)}},
		Doc: "float32 uniform in [0, 1) of shape: element i (row-major) is the top 24 bits of word 0 of Philox-4x32-10 " +
			"of the counter (i, 0, 0, 0) under the key (seed mod 2**32, seed >> 32), times 2**-24 (the same bits on every device)",
		Infer: inferRandomUniform, Eval: evalRandomUniform})
	registerSym(symFullRule, "random_uniform")
}

func inferRandomUniform(_ []TensorType, attrs Attrs) (TensorType, *Error) {
	shape, err := attrShape("random_uniform", attrs.Ints("shape"))
	if err != nil {
		return TensorType{}, err
	}
	n := 1
	for _, d := range shape {
		if d > 0 && n > math.MaxInt32/d {
			return TensorType{}, Errorf(ShapeError, "random_uniform: shape %v has more than 2**31 - 1 elements, the counter's range", shape).
				Suggest("draw several smaller tensors with different seeds")
		}
		n *= d
	}
	return TensorType{DType: dtype.Float32, Shape: shape}, nil
}

func evalRandomUniform(_ []*Array, attrs Attrs, out *Array) {
	seed, _ := attrs["seed"].(int64)
	key := PhiloxKey(seed)
	for i := range out.Data {
		out.Data[i] = UniformFromBits(Philox4x32([4]uint32{uint32(i), 0, 0, 0}, key)[0])
	}
}
