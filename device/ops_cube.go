package device

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// The cube (pipe M): TMATMUL and TGEMV with their ACC, BIAS and MX forms. Each
// computes dst's valid region (row 0 only for the GEMV forms) over k < a's valid
// cols; the rest of dst is unchanged. Float operands multiply in float32 (exact for
// f16 / bf16, rounded for f32) and add to a float32 accumulator one k at a time in
// increasing k, as L0C accumulates in fp32; int8 operands accumulate exactly in int32
// with wrap-around, except in the MX forms, which scale them and accumulate in fp32. The reference interpreter sums exactly in float64 instead, so
// float results agree with it to the accumulation's rounding, not bit for bit.

func init() {
	entries := map[isa.Opcode]*opImpl{}
	for _, op := range []isa.Opcode{isa.TMATMUL, isa.TMATMUL_ACC, isa.TMATMUL_BIAS, isa.TMATMUL_MX, isa.TGEMV, isa.TGEMV_ACC, isa.TGEMV_BIAS, isa.TGEMV_MX} {
		e := &opImpl{exec: execMatmul, work: workMatmul}
		if op == isa.TMATMUL_ACC || op == isa.TGEMV_ACC {
			e.access = accumulateAccess
		}
		entries[op] = e
	}
	defineOps(entries)
}

// matmulForm says which variant an opcode is.
type matmulForm struct{ gemv, acc, bias, mx bool }

func formOf(op isa.Opcode) matmulForm {
	return matmulForm{
		gemv: op == isa.TGEMV || op == isa.TGEMV_ACC || op == isa.TGEMV_BIAS || op == isa.TGEMV_MX,
		acc:  op == isa.TMATMUL_ACC || op == isa.TGEMV_ACC,
		bias: op == isa.TMATMUL_BIAS || op == isa.TGEMV_BIAS,
		mx:   op == isa.TMATMUL_MX || op == isa.TGEMV_MX,
	}
}

// accumulateAccess: the destination is read as well as written.
func accumulateAccess(in *Instr, s *accessSet) {
	conventionalAccess(in, s)
	s.add(in.Args[0], false)
}

// matmulShape is the computed region: m rows, n cols, depth k.
func matmulShape(in *Instr) (m, k, n int) {
	dst, a := in.Args[0], in.Args[1]
	m, n, k = dst.ValidRows, dst.ValidCols, a.ValidCols
	if formOf(in.Op).gemv {
		m = min(m, 1)
	}
	return m, k, n
}

// workMatmul: one CubeM x CubeKStep x CubeN block of MACs per cycle; a partial block
// costs a whole one (the cube works on whole fractals), so a GEMV costs as much as a
// 16-row matmul.
func workMatmul(chip *Chip, in *Instr) int64 {
	m, k, n := matmulShape(in)
	if m == 0 || k == 0 || n == 0 {
		return 0
	}
	dt := in.Args[1].DType
	return ceilDiv(int64(m), chip.CubeM) * ceilDiv(int64(k), chip.CubeKStep(dt)) * ceilDiv(int64(n), chip.CubeN)
}

func execMatmul(c *coreSim, _ *execCtx, in *Instr) error {
	f := formOf(in.Op)
	dst, a, b := in.Args[0], in.Args[1], in.Args[2]
	var as, bs, bias Operand
	if f.mx {
		as, b, bs = in.Args[2], in.Args[3], in.Args[4]
	}
	if f.bias {
		bias = in.Args[3]
	}
	m, k, n := matmulShape(in)
	if m > dst.Rows || n > dst.Cols || m > a.Rows || k > a.Cols || k > b.Rows || n > b.Cols {
		return fmt.Errorf("shapes do not chain: %dx%d of %dx%d = %dx%d @ %dx%d", m, n, dst.Rows, dst.Cols, a.Rows, a.Cols, b.Rows, b.Cols)
	}
	d, err := c.tile(dst)
	if err != nil {
		return err
	}
	ab, err := c.tile(a)
	if err != nil {
		return err
	}
	bb, err := c.tile(b)
	if err != nil {
		return err
	}
	switch {
	case (a.DType.IsFloat() || f.mx) && b.DType == a.DType && dst.DType == dtype.Float32:
		c.fa, c.fb = grow(c.fa, a.Rows*a.Cols), grow(c.fb, b.Rows*b.Cols)
		decodeToF32(a.DType, ab, c.fa)
		decodeToF32(b.DType, bb, c.fb)
		acc, inPlace := f32Values(d, &c.fc)
		if f.mx {
			if err := c.scaleMX(as, bs, a, b, k); err != nil {
				return err
			}
		}
		if err := c.initAcc(acc, f, bias, m, n, dst.Cols); err != nil {
			return err
		}
		kernel := matmulF32
		if !f.mx && (a.DType == dtype.Float16 || a.DType == dtype.BFloat16) {
			kernel = matmulF32Exact
		}
		kernel(acc, c.fa, c.fb, m, k, n, dst.Cols, a.Cols, b.Cols)
		if !inPlace {
			encodeF32(dtype.Float32, acc, d)
		}
	case a.DType == dtype.Int8 && b.DType == dtype.Int8 && dst.DType == dtype.Int32 && !f.mx:
		c.ia, c.ib, c.id = grow(c.ia, a.Rows*a.Cols), grow(c.ib, b.Rows*b.Cols), grow(c.id, dst.Rows*dst.Cols)
		decodeInt(dtype.Int8, ab, c.ia)
		decodeInt(dtype.Int8, bb, c.ib)
		decodeInt(dtype.Int32, d, c.id)
		c.ic = grow(c.ic, dst.Rows*dst.Cols)
		for i, v := range c.id {
			c.ic[i] = int32(v)
		}
		if !f.acc {
			for i := 0; i < m; i++ {
				clear(c.ic[i*dst.Cols : i*dst.Cols+n])
			}
		}
		if f.bias {
			bt, err := c.tile(bias)
			if err != nil {
				return err
			}
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					c.ic[i*dst.Cols+j] = int32(elems{o: bias, b: bt}.atInt(0, j))
				}
			}
		}
		matmulInt(c.ic, c.ia, c.ib, m, k, n, dst.Cols, a.Cols, b.Cols)
		for i, v := range c.ic {
			c.id[i] = int64(v)
		}
		encodeInt(dtype.Int32, c.id, d)
	default:
		return fmt.Errorf("no cube path for %s x %s -> %s", a.DType, b.DType, dst.DType)
	}
	return nil
}

// decodeToF32 widens a float or int8 operand to float32 (exact for both).
func decodeToF32(d dtype.DType, src []byte, dst []float32) {
	if d == dtype.Int8 {
		for i := range dst {
			dst[i] = float32(int8(src[i]))
		}
		return
	}
	decodeF32(d, src, dst)
}

// initAcc starts the float accumulator's computed region at 0, at the bias row, or
// (for the ACC forms) at what dst holds.
func (c *coreSim) initAcc(acc []float32, f matmulForm, bias Operand, m, n, ldc int) error {
	switch {
	case f.acc:
		return nil
	case f.bias:
		bt, err := c.tile(bias)
		if err != nil {
			return err
		}
		if n > bias.Cols || bias.DType != dtype.Float32 {
			return fmt.Errorf("bias %s[%dx%d] does not cover %d f32 columns", bias.DType, bias.Rows, bias.Cols, n)
		}
		row := make([]float32, bias.Cols)
		decodeF32(dtype.Float32, bt[:4*bias.Cols], row)
		for i := 0; i < m; i++ {
			copy(acc[i*ldc:i*ldc+n], row[:n])
		}
	default:
		for i := 0; i < m; i++ {
			clear(acc[i*ldc : i*ldc+n])
		}
	}
	return nil
}

// scaleMX multiplies the decoded operands by their block scales: as[i, x/32] scales
// row i of a and bs[x/32, j] column j of b in each block of 32 k. The scaled values
// round to float32, the cube's multiplier input.
func (c *coreSim) scaleMX(as, bs, a, b Operand, k int) error {
	sa, err := c.tileView(as)
	if err != nil {
		return err
	}
	sb, err := c.tileView(bs)
	if err != nil {
		return err
	}
	if (k+31)/32 > as.Cols || a.Rows > as.Rows || (k+31)/32 > bs.Rows || b.Cols > bs.Cols {
		return fmt.Errorf("block scales %dx%d and %dx%d do not cover %dx%d @ %dx%d", as.Rows, as.Cols, bs.Rows, bs.Cols, a.Rows, k, k, b.Cols)
	}
	for i := 0; i < a.Rows; i++ {
		for x := 0; x < k; x++ {
			c.fa[i*a.Cols+x] = float32(float64(c.fa[i*a.Cols+x]) * sa.at(i, x/32))
		}
	}
	for x := 0; x < k; x++ {
		for j := 0; j < b.Cols; j++ {
			c.fb[x*b.Cols+j] = float32(float64(c.fb[x*b.Cols+j]) * sb.at(x/32, j))
		}
	}
	return nil
}
