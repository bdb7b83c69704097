package device

import (
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
			dst.set(r, col, isa.RoundTo(dst.o.DType, src.at(r, col), in.Mode)) // a value of the dtype: stored exactly
		}
	}
	return nil
}
