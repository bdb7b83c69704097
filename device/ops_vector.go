package device

import (
	"fmt"

	"pypto/isa"
)

// Vector-pipe arithmetic on UB tiles.

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.TADD:  {exec: execElementwise, work: workVector},
		isa.TMUL:  {exec: execElementwise, work: workVector},
		isa.TRELU: {exec: execElementwise, work: workVector},
		isa.TCVT:  {exec: execConvert, work: workVector},
	})
}

// workVector: one repeat of the vector unit moves VectorBytesPerCycle of the widest
// operand.
func workVector(chip *Chip, in *Instr) int64 {
	widest := 0
	for _, a := range in.Args {
		if a.Kind == isa.KindTile {
			widest = max(widest, a.Bytes())
		}
	}
	return ceilDiv(int64(widest), chip.VectorBytesPerCycle)
}

// execElementwise computes TADD / TMUL / TRELU. Operands share the destination dtype
// (Compile checks it). Floats compute in float32, which rounds every sum and product
// of same-dtype f16/bf16/f32 operands exactly as rounding the exact value would;
// integers compute exactly in int64 and wrap on the store.
func execElementwise(c *coreSim, _ *execCtx, in *Instr) error {
	dst := in.Args[0]
	n := dst.Rows * dst.Cols
	srcs := make([][]byte, 0, 2)
	for _, o := range in.Args[1:] {
		if o.Rows*o.Cols != n || o.DType != dst.DType {
			return fmt.Errorf("%s operand %s[%dx%d] does not match the destination %s[%dx%d]", in.Op, o.DType, o.Rows, o.Cols, dst.DType, dst.Rows, dst.Cols)
		}
		s, err := c.tile(o)
		if err != nil {
			return err
		}
		srcs = append(srcs, s)
	}
	d, err := c.tile(dst)
	if err != nil {
		return err
	}
	dt := dst.DType
	switch {
	case dt.IsFloat():
		c.fa = grow(c.fa, n)
		decodeF32(dt, srcs[0], c.fa)
		if in.Op == isa.TRELU {
			reluF32(c.fa, c.fa)
		} else {
			c.fb = grow(c.fb, n)
			decodeF32(dt, srcs[1], c.fb)
			if in.Op == isa.TADD {
				for i, v := range c.fb {
					c.fa[i] += v
				}
			} else {
				for i, v := range c.fb {
					c.fa[i] *= v
				}
			}
		}
		encodeF32(dt, c.fa, d)
	case dt.IsInt():
		c.ia = grow(c.ia, n)
		decodeInt(dt, srcs[0], c.ia)
		if in.Op == isa.TRELU {
			for i, v := range c.ia {
				c.ia[i] = max(v, 0)
			}
		} else {
			c.ib = grow(c.ib, n)
			decodeInt(dt, srcs[1], c.ib)
			if in.Op == isa.TADD {
				for i, v := range c.ib {
					c.ia[i] += v
				}
			} else {
				for i, v := range c.ib {
					c.ia[i] *= v
				}
			}
		}
		encodeInt(dt, c.ia, d)
	default:
		return fmt.Errorf("%s has no semantics for %s", in.Op, dt)
	}
	return nil
}
