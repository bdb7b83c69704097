package device

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// The cube: TMATMUL and TMATMUL_ACC on pipe M.

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.TMATMUL:     {exec: execMatmul, work: workMatmul},
		isa.TMATMUL_ACC: {access: accumulateAccess, exec: execMatmul, work: workMatmul},
	})
}

// accumulateAccess: the destination is read as well as written (TMATMUL_ACC).
func accumulateAccess(in *Instr) accessSet {
	s := conventionalAccess(in)
	s.add(in.Args[0], false)
	return s
}

// workMatmul: one CubeM x CubeKStep x CubeN block of MACs per cycle; partial blocks
// cost a whole one (the cube works on whole fractals).
func workMatmul(chip *Chip, in *Instr) int64 {
	a, b := in.Args[1], in.Args[2]
	return ceilDiv(int64(a.Rows), chip.CubeM) * ceilDiv(int64(a.Cols), chip.CubeKStep(a.DType)) * ceilDiv(int64(b.Cols), chip.CubeN)
}

// execMatmul computes Acc (=|+=) Left @ Right.
func execMatmul(c *coreSim, _ *execCtx, in *Instr) error {
	dst, a, b := in.Args[0], in.Args[1], in.Args[2]
	mm, k, n := a.Rows, a.Cols, b.Cols
	if b.Rows != k || dst.Rows != mm || dst.Cols != n {
		return fmt.Errorf("shapes do not chain: %dx%d = %dx%d @ %dx%d", dst.Rows, dst.Cols, a.Rows, a.Cols, b.Rows, b.Cols)
	}
	d, err := c.tile(dst)
	if err != nil {
		return err
	}
	as, err := c.tile(a)
	if err != nil {
		return err
	}
	bs, err := c.tile(b)
	if err != nil {
		return err
	}
	acc := in.Op == isa.TMATMUL_ACC
	switch {
	case a.DType.IsFloat() && b.DType == a.DType && dst.DType == dtype.Float32:
		c.fa, c.fb, c.fc = grow(c.fa, mm*k), grow(c.fb, k*n), grow(c.fc, mm*n)
		decodeF32(a.DType, as, c.fa)
		decodeF32(b.DType, bs, c.fb)
		if acc {
			decodeF32(dtype.Float32, d, c.fc)
		} else {
			clear(c.fc)
		}
		matmulF32(c.fc, c.fa, c.fb, mm, k, n)
		encodeF32(dtype.Float32, c.fc, d)
	case a.DType == dtype.Int8 && b.DType == dtype.Int8 && dst.DType == dtype.Int32:
		c.ia, c.ib, c.ic = grow(c.ia, mm*k), grow(c.ib, k*n), grow(c.ic, mm*n)
		decodeInt(dtype.Int8, as, c.ia)
		decodeInt(dtype.Int8, bs, c.ib)
		c.id = grow(c.id, mm*n)
		if acc {
			decodeInt(dtype.Int32, d, c.id)
			for i, v := range c.id {
				c.ic[i] = int32(v)
			}
		} else {
			clear(c.ic)
		}
		matmulInt(c.ic, c.ia, c.ib, mm, k, n)
		for i, v := range c.ic {
			c.id[i] = int64(v)
		}
		encodeInt(dtype.Int32, c.id, d)
	default:
		return fmt.Errorf("no cube path for %s x %s -> %s", a.DType, b.DType, dst.DType)
	}
	return nil
}
