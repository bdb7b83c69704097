package device

import (
	"fmt"

	"pypto/isa"
)

// Tile -> tile moves between locations: TMOV (MTE1, FIX or V by the locations) and
// TEXTRACT (a sub-tile of L1 into L0A / L0B on MTE1).

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.TMOV:     {route: routeMov, exec: execConvert, work: workMove},
		isa.TEXTRACT: {access: extractAccess, exec: execExtract, work: workMove},
	})
}

// routeMov: L1 -> L0A/L0B on MTE1, L0C -> UB through the fixpipe, UB -> UB on the
// vector pipe.
func routeMov(ck *checkCtx, in isa.Instr) (isa.Pipe, string) {
	switch ck.tile(in, 1).Loc {
	case isa.Mat:
		return isa.PipeMTE1, ""
	case isa.Acc:
		return isa.PipeFIX, ""
	}
	return isa.PipeV, ""
}

// workMove: MTE1 writes the destination at the L1 -> L0A or L1 -> L0B rate; the
// fixpipe reads the accumulator at its rate; the vector pipe moves the wider side.
func workMove(chip *Chip, in *Instr) int64 {
	dst, src := in.Args[0], in.Args[1]
	switch in.Pipe {
	case isa.PipeMTE1:
		rate := chip.L1ToL0ABytesPerCycle
		if dst.Loc == isa.Right {
			rate = chip.L1ToL0BBytesPerCycle
		}
		return ceilDiv(int64(dst.Bytes()), rate) + fractalRows(dst)*int64(chip.L1ToL0FractalRowCycles)
	case isa.PipeFIX:
		return ceilDiv(int64(src.Bytes()), chip.FixpipeBytesPerCycle)
	}
	return ceilDiv(int64(max(dst.Bytes(), src.Bytes())), chip.VectorBytesPerCycle)
}

// fractalRows is the rows of 512-byte fractals of a tile (16 rows each, whatever the
// dtype: fp16 16x16, fp32 16x8, int8 16x32).
func fractalRows(o Operand) int64 { return ceilDiv(int64(o.Rows), 16) }

// extractAccess: TEXTRACT writes its destination and reads only the sub-tile's rows
// of the source, from its first element to its last, row-major.
func extractAccess(in *Instr, s *accessSet) {
	s.add(in.Args[0], true)
	dst, src := in.Args[0], in.Args[1]
	r, c := int(in.Args[2].Imm), int(in.Args[3].Imm)
	size := src.DType.Size()
	first := (r*src.Cols + c) * size
	last := ((r+dst.Rows-1)*src.Cols + c + dst.Cols) * size
	s.reads = append(s.reads, span{space: int(src.Loc), lo: src.Addr + first, hi: src.Addr + last})
}

// execConvert copies a whole tile, converting if the dtypes differ (TMOV, TCVT).
func execConvert(c *coreSim, _ *execCtx, in *Instr) error {
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
}

// execExtract copies the sub-tile at (row, col) of a Mat tile into a Left/Right tile.
func execExtract(c *coreSim, _ *execCtx, in *Instr) error {
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
