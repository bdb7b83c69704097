package device

import (
	"fmt"

	"pypto/isa"
)

// GM <-> buffer transfers: TLOAD on MTE2, TSTORE on MTE3 (from UB) or FIX (from L0C).

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.TLOAD:  {exec: execLoad, work: workLoad},
		isa.TSTORE: {route: routeStore, exec: execStore, work: workStore},
	})
}

// routeStore: UB is written out by MTE3, L0C by the fixpipe.
func routeStore(ck *checkCtx, in isa.Instr) (isa.Pipe, string) {
	if ck.tile(in, 1).Loc == isa.Acc {
		return isa.PipeFIX, ""
	}
	return isa.PipeMTE3, ""
}

// workLoad: MTE2 moves the window's bytes at the per-core GM read rate.
func workLoad(chip *Chip, in *Instr) int64 {
	return ceilDiv(viewBytes(in.Args[1]), chip.GMReadBytesPerCycle)
}

// workStore: from L0C the fixpipe reads the stored window's accumulator bytes; from UB
// MTE3 writes the window's GM bytes.
func workStore(chip *Chip, in *Instr) int64 {
	if in.Pipe == isa.PipeFIX {
		v := in.Args[0].GM
		return ceilDiv(int64(v.Rows*v.Cols*in.Args[1].DType.Size()), chip.FixpipeBytesPerCycle)
	}
	return ceilDiv(viewBytes(in.Args[0]), chip.UBToGMBytesPerCycle)
}

// viewBytes is the number of GM bytes a view transfers (broadcast elements count once
// per use: the engine moves them each time).
func viewBytes(o Operand) int64 {
	return int64(o.GM.Rows) * int64(o.GM.Cols) * int64(o.DType.Size())
}

// execLoad copies a strided GM window into the top-left of a tile and zero-fills the
// rest.
func execLoad(c *coreSim, x *execCtx, in *Instr) error {
	dst, src := in.Args[0], in.Args[1]
	d, err := c.tile(dst)
	if err != nil {
		return err
	}
	base, err := c.gmBase(x, src)
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

// execStore copies the top-left window of a tile to GM, converting to the GM dtype.
func execStore(c *coreSim, x *execCtx, in *Instr) error {
	dst, src := in.Args[0], in.Args[1]
	s, err := c.tile(src)
	if err != nil {
		return err
	}
	base, err := c.gmBase(x, dst)
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
