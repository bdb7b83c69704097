// Package checked is the one place sizes are computed and allocations are admitted:
// overflow-checked integer arithmetic for element counts, byte sizes and offsets, and
// the limit every large allocation is checked against before it is made (a Go
// allocation that the machine cannot satisfy is a fatal runtime error, which would
// kill the Python process that loaded the library, so it must never be attempted).
//
// It imports nothing of ours, so every package (core, isa, device, session, the
// commands) can use it without bending the one-way dependencies.
package checked

import "math/bits"

// Mul returns a*b and whether it is exact: false when either operand is negative or
// the product overflows an int.
func Mul(a, b int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > uint64(maxInt) {
		return 0, false
	}
	return int(lo), true
}

// Add returns a+b and whether it is exact: false when either operand is negative or
// the sum overflows an int.
func Add(a, b int) (int, bool) {
	if a < 0 || b < 0 || a > maxInt-b {
		return 0, false
	}
	return a + b, true
}

// Product returns the product of dims (1 for none) and whether it is exact: false
// when a dim is negative or the product overflows. A zero dim makes the product 0
// however large the others are.
func Product(dims []int) (int, bool) {
	n := 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		if d == 0 {
			return 0, allNonNegative(dims)
		}
	}
	for _, d := range dims {
		var ok bool
		if n, ok = Mul(n, d); !ok {
			return 0, false
		}
	}
	return n, true
}

// Bytes is the byte size of an array of dims with elem-byte elements, and whether it
// is exact (see Product).
func Bytes(dims []int, elem int) (int, bool) {
	n, ok := Product(dims)
	if !ok {
		return 0, false
	}
	return Mul(n, elem)
}

func allNonNegative(dims []int) bool {
	for _, d := range dims {
		if d < 0 {
			return false
		}
	}
	return true
}

const maxInt = int(^uint(0) >> 1)
