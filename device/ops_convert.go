package device

import (
	"fmt"
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// TCVT: conversion with a rounding mode. Without a mode floats round to nearest even
// and integers truncate toward zero; integer results wrap to the dtype's width (what
// dtype.Round does, and the reference with it).

func execCvt(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src := vs[0], c.snap(vs[1], 1)
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			v, err := roundTo(dst.o.DType, src.at(r, col), in.Mode)
			if err != nil {
				return err
			}
			dst.set(r, col, v) // v is a value of the dtype: storing it is exact
		}
	}
	return nil
}

// roundTo is v as dtype d holds it, rounded with mode: for floats the neighbour of v
// in d that the mode names, for integers the integer the mode names, wrapped.
func roundTo(d dtype.DType, v float64, mode isa.Mode) (float64, error) {
	if mode == isa.ModeNone || mode == isa.RoundRint && d.IsFloat() {
		return dtype.Round(d, v), nil
	}
	if !d.IsFloat() {
		x, err := roundInteger(v, mode)
		return dtype.Round(d, x), err
	}
	n := dtype.Round(d, v)
	if n == v || math.IsNaN(v) || math.IsInf(v, 0) {
		return n, nil
	}
	lo, hi := n, n // the neighbours of v in d
	if n < v {
		hi = nextUp(d, n)
	} else {
		lo = -nextUp(d, -n)
	}
	switch mode {
	case isa.RoundFloor:
		return lo, nil
	case isa.RoundCeil:
		return hi, nil
	case isa.RoundTrunc:
		if v > 0 {
			return lo, nil
		}
		return hi, nil
	case isa.RoundAway:
		switch dl, dh := v-lo, hi-v; {
		case dl < dh:
			return lo, nil
		case dh < dl, v > 0:
			return hi, nil
		}
		return lo, nil
	case isa.RoundOdd:
		if floatBits(d, lo)&1 == 1 || math.IsInf(hi, 0) {
			return lo, nil
		}
		return hi, nil
	}
	return 0, fmt.Errorf("%q is not a rounding mode", mode)
}

// roundInteger rounds v to an integer with mode.
func roundInteger(v float64, mode isa.Mode) (float64, error) {
	switch mode {
	case isa.RoundRint:
		return math.RoundToEven(v), nil
	case isa.RoundAway:
		return math.Round(v), nil
	case isa.RoundFloor:
		return math.Floor(v), nil
	case isa.RoundCeil:
		return math.Ceil(v), nil
	case isa.RoundTrunc:
		return math.Trunc(v), nil
	case isa.RoundOdd:
		f := math.Floor(v)
		if f == v || math.IsNaN(v) || math.IsInf(v, 0) {
			return v, nil
		}
		if math.Mod(f, 2) != 0 {
			return f, nil
		}
		return f + 1, nil
	}
	return 0, fmt.Errorf("%q is not a rounding mode", mode)
}

// floatBits is the encoding of x, a value of float dtype d.
func floatBits(d dtype.DType, x float64) uint32 {
	switch d {
	case dtype.Float16:
		return uint32(dtype.Float32ToFloat16(float32(x)))
	case dtype.BFloat16:
		return uint32(dtype.Float32ToBFloat16(float32(x)))
	}
	return math.Float32bits(float32(x))
}

func fromFloatBits(d dtype.DType, b uint32) float64 {
	switch d {
	case dtype.Float16:
		return float64(dtype.Float16ToFloat32(uint16(b)))
	case dtype.BFloat16:
		return float64(dtype.BFloat16ToFloat32(uint16(b)))
	}
	return float64(math.Float32frombits(b))
}

// nextUp is the next value of float dtype d above x, a value of d: the encoding steps
// by one, which also takes the largest finite value to +Inf and -Inf to the lowest
// finite value.
func nextUp(d dtype.DType, x float64) float64 {
	if x == 0 {
		return fromFloatBits(d, 1) // the smallest subnormal
	}
	b := floatBits(d, x)
	if x > 0 {
		return fromFloatBits(d, b+1)
	}
	return fromFloatBits(d, b-1)
}
