package device

import (
	"errors"
	"fmt"

	"pypto/isa"
)

// Scalar control: register arithmetic on 64-bit integers (wrapping) and the counted
// loop. They run on the scalar unit as it issues (sim_scalar.go), touch no buffer and
// cost the issue slot only.

func init() {
	entries := map[isa.Opcode]*opImpl{
		// The scalar unit interprets loops itself (blockRun.control).
		isa.LOOP:    {access: noAccess},
		isa.ENDLOOP: {access: noAccess},
	}
	for _, op := range []isa.Opcode{isa.SMOV, isa.SADD, isa.SSUB, isa.SMUL, isa.SDIV, isa.SREM, isa.SMIN, isa.SMAX} {
		entries[op] = &opImpl{access: noAccess, exec: execScalar}
	}
	defineOps(entries)
}

var errScalarDivZero = errors.New("scalar division by zero")

// execScalar computes d = a op b (SMOV: d = x). Division truncates toward zero and
// the remainder has the sign of the dividend.
func execScalar(_ *coreSim, x *execCtx, in *Instr) error {
	r := x.run
	operand := func(i int) (int64, error) { return r.scalar(in.Args[i]) }
	a, err := operand(1)
	if err != nil {
		return err
	}
	var v int64
	if in.Op == isa.SMOV {
		v = a
	} else {
		b, err := operand(2)
		if err != nil {
			return err
		}
		switch in.Op {
		case isa.SADD:
			v = a + b
		case isa.SSUB:
			v = a - b
		case isa.SMUL:
			v = a * b
		case isa.SDIV, isa.SREM:
			if b == 0 {
				return errScalarDivZero
			}
			v = a / b
			if in.Op == isa.SREM {
				v = a % b
			}
		case isa.SMIN:
			v = min(a, b)
		case isa.SMAX:
			v = max(a, b)
		}
	}
	d := in.Args[0].Reg
	if d < 0 || d >= len(r.sc.regs) {
		return fmt.Errorf("writes register %d; the program has %d", d, len(r.sc.regs))
	}
	r.sc.regs[d] = v
	return nil
}
