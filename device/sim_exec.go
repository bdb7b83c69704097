package device

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// exec computes the values of one data instruction (flags and barriers have none).
// Every buffer and GM access is bounds-checked here, whatever Compile and RunTask's
// checks already established, so a hand-edited machine program fails cleanly.
func (c *coreSim) exec(m *MachineProgram, blk *Block, in *Instr) error {
	switch in.Op {
	case isa.SET_FLAG, isa.WAIT_FLAG, isa.TSYNC:
		return nil
	case isa.TLOAD:
		return c.load(m, blk, in.Args[0], in.Args[1])
	case isa.TSTORE:
		return c.store(m, blk, in.Args[0], in.Args[1])
	case isa.TMOV, isa.TCVT:
		dst, src := in.Args[0], in.Args[1]
		if dst.Rows*dst.Cols != src.Rows*src.Cols {
			return fmt.Errorf("%s between tiles of %d and %d elements", in.Op, dst.Rows*dst.Cols, src.Rows*src.Cols)
		}
		d, err := c.tile(dst)
		if err != nil {
			return err
		}
		s, err := c.tile(src)
		if err != nil {
			return err
		}
		convert(src.DType, s, dst.DType, d, dst.Rows*dst.Cols)
		return nil
	case isa.TEXTRACT:
		return c.extract(in)
	case isa.TMATMUL, isa.TMATMUL_ACC:
		return c.matmul(in)
	case isa.TADD, isa.TMUL, isa.TRELU:
		return c.elementwise(in)
	}
	return fmt.Errorf("the simulator has no semantics for %s", in.Op)
}

// tile returns the bytes of a tile operand in this core's buffer.
func (c *coreSim) tile(o Operand) ([]byte, error) {
	if o.Kind != isa.KindTile || int(o.Loc) >= len(c.bufs) {
		return nil, fmt.Errorf("operand is not a placed tile")
	}
	buf := c.bufs[o.Loc]
	n := o.Bytes()
	if o.Addr < 0 || n < 0 || o.Addr+n > len(buf) {
		return nil, fmt.Errorf("tile bytes [%#x, %#x) lie outside the %s buffer (%d bytes in use, capacity %d)",
			o.Addr, o.Addr+n, o.Loc, len(buf), c.chip.Capacity(o.Loc))
	}
	return buf[o.Addr : o.Addr+n : o.Addr+n], nil
}

// gmBase checks that a view lies inside its param and the param inside GM, and
// returns the GM byte address of the param.
func (c *coreSim) gmBase(m *MachineProgram, blk *Block, o Operand) (int, error) {
	v := o.GM
	if v.Param < 0 || v.Param >= len(m.Params) || v.Param >= len(blk.ParamAddrs) {
		return 0, fmt.Errorf("GM view names param %d; the block binds %d", v.Param, len(blk.ParamAddrs))
	}
	if msg := checkView(m.Params, v); msg != "" {
		return 0, fmt.Errorf("%s", msg)
	}
	prm := m.Params[v.Param]
	base := blk.ParamAddrs[v.Param]
	if base < 0 || base+prm.Elems*prm.DType.Size() > len(c.gm) {
		return 0, fmt.Errorf("param %s at GM byte %d (%d bytes) lies outside the %d-byte GM", prm.Name, base, prm.Elems*prm.DType.Size(), len(c.gm))
	}
	if o.DType != prm.DType {
		return 0, fmt.Errorf("GM operand dtype %s differs from param %s's %s", o.DType, prm.Name, prm.DType)
	}
	return base, nil
}

// load copies a strided GM window into the top-left of a tile and zero-fills the rest.
func (c *coreSim) load(m *MachineProgram, blk *Block, dst, src Operand) error {
	d, err := c.tile(dst)
	if err != nil {
		return err
	}
	base, err := c.gmBase(m, blk, src)
	if err != nil {
		return err
	}
	v := src.GM
	if v.Rows > dst.Rows || v.Cols > dst.Cols || src.DType != dst.DType {
		return fmt.Errorf("GM window %s[%dx%d] does not fit tile %s[%dx%d]", src.DType, v.Rows, v.Cols, dst.DType, dst.Rows, dst.Cols)
	}
	size := dst.DType.Size()
	rowBytes := dst.Cols * size
	for r := 0; r < dst.Rows; r++ {
		row := d[r*rowBytes : (r+1)*rowBytes]
		if r >= v.Rows {
			clear(row)
			continue
		}
		start := base + (v.Offset+r*v.RowStride)*size
		n := v.Cols * size
		if v.ColStride == 1 {
			copy(row[:n], c.gm[start:start+n])
		} else {
			for col := 0; col < v.Cols; col++ {
				e := start + col*v.ColStride*size
				copy(row[col*size:(col+1)*size], c.gm[e:e+size])
			}
		}
		clear(row[n:])
	}
	c.gmRead += int64(v.Rows * v.Cols * size)
	return nil
}

// store copies the top-left window of a tile to GM, converting to the GM dtype.
func (c *coreSim) store(m *MachineProgram, blk *Block, dst, src Operand) error {
	s, err := c.tile(src)
	if err != nil {
		return err
	}
	base, err := c.gmBase(m, blk, dst)
	if err != nil {
		return err
	}
	v := dst.GM
	if v.Rows > src.Rows || v.Cols > src.Cols {
		return fmt.Errorf("GM window %dx%d is larger than the tile (%dx%d)", v.Rows, v.Cols, src.Rows, src.Cols)
	}
	sd, dd := src.DType, dst.DType
	ss, ds := sd.Size(), dd.Size()
	for r := 0; r < v.Rows; r++ {
		srow := s[r*src.Cols*ss:]
		start := base + (v.Offset+r*v.RowStride)*ds
		if v.ColStride == 1 {
			convert(sd, srow, dd, c.gm[start:start+v.Cols*ds], v.Cols)
			continue
		}
		c.tmp = grow(c.tmp, v.Cols*ds)
		convert(sd, srow, dd, c.tmp, v.Cols)
		for col := 0; col < v.Cols; col++ {
			e := start + col*v.ColStride*ds
			copy(c.gm[e:e+ds], c.tmp[col*ds:(col+1)*ds])
		}
	}
	c.gmWritten += int64(v.Rows * v.Cols * ds)
	return nil
}

// extract copies the sub-tile at (row, col) of a Mat tile into a Left/Right tile.
func (c *coreSim) extract(in *Instr) error {
	dst, src := in.Args[0], in.Args[1]
	r0, c0 := int(in.Args[2].Imm), int(in.Args[3].Imm)
	if r0 < 0 || c0 < 0 || r0+dst.Rows > src.Rows || c0+dst.Cols > src.Cols || dst.DType != src.DType {
		return fmt.Errorf("sub-tile %s[%dx%d] at (%d, %d) does not fit in %s[%dx%d]", dst.DType, dst.Rows, dst.Cols, r0, c0, src.DType, src.Rows, src.Cols)
	}
	d, err := c.tile(dst)
	if err != nil {
		return err
	}
	s, err := c.tile(src)
	if err != nil {
		return err
	}
	size := dst.DType.Size()
	n := dst.Cols * size
	for r := 0; r < dst.Rows; r++ {
		from := ((r0+r)*src.Cols + c0) * size
		copy(d[r*n:(r+1)*n], s[from:from+n])
	}
	return nil
}

// matmul computes Acc (=|+=) Left @ Right.
func (c *coreSim) matmul(in *Instr) error {
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

// elementwise computes TADD / TMUL / TRELU. Operands share the destination dtype
// (Compile checks it). Floats compute in float32, which rounds every sum and product
// of same-dtype f16/bf16/f32 operands exactly as rounding the exact value would;
// integers compute exactly in int64 and wrap on the store.
func (c *coreSim) elementwise(in *Instr) error {
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

// grow returns s resized to n, reallocating only when it is too small.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
