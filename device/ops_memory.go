package device

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// GM <-> buffer transfers: TLOAD on MTE2, TSTORE on MTE3 (from UB) or FIX (from L0C),
// TSTORE_FP through the fixpipe, the indexed MGATHER / MSCATTER, TPREFETCH, and the
// scalar unit's SLD.

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.TLOAD:     {exec: execLoad, work: workLoad},
		isa.TSTORE:    {route: routeStore, exec: execStore, work: workStore},
		isa.TSTORE_FP: {exec: execStoreFP, work: workStore},
		// A hint: the L2 model does not act on it yet, so it changes neither
		// values nor time; the window is still checked.
		isa.TPREFETCH: {access: noAccess, exec: execPrefetch},
		isa.MGATHER:   {exec: execMGather, work: workIndexedGM},
		isa.MSCATTER:  {exec: execMScatter, work: workIndexedGM},
		isa.SLD:       {access: sldAccess, exec: execSLD, work: func(chip *Chip, _ *Instr) int64 { return int64(chip.ScalarLoadCycles) }},
	})
}

// sldAccess: SLD reads its GM window (operand 0 is a register).
func sldAccess(in *Instr, s *accessSet) { s.add(in.Args[1], false) }

// workIndexedGM: each element of an indexed GM access is its own 32-byte transfer.
func workIndexedGM(chip *Chip, in *Instr) int64 {
	o := in.Args[0]
	if in.Op == isa.MSCATTER {
		o = in.Args[1]
	}
	rate := chip.GMReadBytesPerCycle
	if in.Op == isa.MSCATTER {
		rate = chip.UBToGMBytesPerCycle
	}
	return ceilDiv(int64(o.ValidRows*o.ValidCols)*32, rate)
}

// routeStore: UB is written out by MTE3, L0C by the fixpipe.
func routeStore(ck *checkCtx, in isa.Instr) (isa.Pipe, string) {
	if ck.tile(in, 1).Loc == isa.Acc {
		return isa.PipeFIX, ""
	}
	return isa.PipeMTE3, ""
}

// workLoad: MTE2 moves the window's bytes at the per-core GM read rate; a strided
// window into UB moves by bursts (stridedBursts).
func workLoad(chip *Chip, in *Instr) int64 {
	return max(stridedBursts(chip, in), ceilDiv(viewBytes(in.Args[1]), chip.GMReadBytesPerCycle))
}

// stridedBursts is the time a TLOAD's DMA needs for a window whose columns are its
// contiguous runs (a column-major matrix: RowStride 1) loaded into UB: a burst per
// column, Chip.StridedBurstCycles each and Chip.StridedSectorCycles per 32-byte
// sector of it (0 without them, or for any other window). Into L1 the DMA converts
// the layout as it moves (the cube's ND / DN to NZ path) and pays the port's rate.
func stridedBursts(chip *Chip, in *Instr) int64 {
	dst, v := in.Args[0], in.Args[1].GM
	if dst.Loc != isa.Vec || chip.StridedBurstCycles+chip.StridedSectorCycles == 0 || v.Rows <= 1 || v.Cols <= 1 || v.ColStride == 1 || v.RowStride != 1 {
		return 0
	}
	sectors := ceilDiv(int64(v.Rows*in.Args[1].DType.Size()), dmaSectorBytes)
	return int64(v.Cols) * (int64(chip.StridedBurstCycles) + sectors*int64(chip.StridedSectorCycles))
}

// dmaSectorBytes is the DMA's transfer granule in GM (the 32-byte block of UB and of
// GM alignment, npu-facts).
const dmaSectorBytes = 32

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
	if in.Mode == isa.AtomicAdd {
		t := elems{o: src, b: s}
		c.storeEach(dst, base, func(r, col int, old float64) float64 {
			if dd.IsInt() {
				return float64(int64(old) + t.atInt(r, col)) // exact; the store wraps
			}
			return old + t.at(r, col)
		})
		c.gmRead += int64(v.Rows * v.Cols * ds)
		c.gmWritten += int64(v.Rows * v.Cols * ds)
		return nil
	}
	if in.Mode == isa.StoreRelu {
		t := elems{o: src, b: s}
		c.storeEach(dst, base, func(r, col int, _ float64) float64 {
			if x := t.at(r, col); !(x <= 0) {
				return x // positive or NaN
			}
			return 0
		})
		c.gmWritten += int64(v.Rows * v.Cols * ds)
		return nil
	}
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

// storeEach writes every element of a store's GM window with f(r, c, old value),
// rounded to the GM dtype as dtype.Store rounds (integers wrap).
func (c *coreSim) storeEach(dst Operand, base int, f func(r, c int, old float64) float64) {
	v := dst.GM
	size := dst.DType.Size()
	for r := 0; r < v.Rows; r++ {
		for col := 0; col < v.Cols; col++ {
			i := base + (v.Offset+r*v.RowStride+col*v.ColStride)*size
			elem := c.gm[i : i+size]
			dtype.Store(dst.DType, elem, 0, f(r, col, dtype.Load(dst.DType, elem, 0)))
		}
	}
}

// execStoreFP stores an Acc tile through the fixpipe with a per-column scale:
// integers saturate, floats round to nearest even.
func execStoreFP(c *coreSim, x *execCtx, in *Instr) error {
	dst := in.Args[0]
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	src, fp := vs[1], vs[2]
	base, err := c.gmBase(x, dst)
	if err != nil {
		return err
	}
	if v := dst.GM; v.Rows > src.o.Rows || v.Cols > src.o.Cols || v.Cols > fp.o.Cols {
		return fmt.Errorf("GM window %dx%d is larger than the tile (%dx%d) or its scales (%d)", v.Rows, v.Cols, src.o.Rows, src.o.Cols, fp.o.Cols)
	}
	c.storeEach(dst, base, func(r, col int, _ float64) float64 {
		return quantise(dst.DType, src.at(r, col)*fp.at(0, col))
	})
	c.gmWritten += int64(dst.GM.Rows * dst.GM.Cols * dst.DType.Size())
	return nil
}

// execPrefetch only checks that the window lies inside its param.
func execPrefetch(c *coreSim, x *execCtx, in *Instr) error {
	_, err := c.gmBase(x, in.Args[0])
	return err
}

// gmIndex resolves an MGATHER / MSCATTER index against its window: flat index i
// names window element (i / cols, i % cols). It returns the GM byte address.
func gmIndex(v isa.GMView, base, size, i, r, col int) (int, error) {
	if i < 0 || i >= v.Rows*v.Cols {
		return 0, fmt.Errorf("index %d at (%d, %d) is outside the %dx%d window", i, r, col, v.Rows, v.Cols)
	}
	return base + (v.Offset+(i/v.Cols)*v.RowStride+(i%v.Cols)*v.ColStride)*size, nil
}

// execMGather: dst[r, c] = window.flat[idx[r, c]] over dst's valid region.
func execMGather(c *coreSim, x *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, idx, g := vs[0], vs[2], in.Args[1]
	base, err := c.gmBase(x, g)
	if err != nil {
		return err
	}
	size := g.DType.Size()
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			a, err := gmIndex(g.GM, base, size, int(idx.atInt(r, col)), r, col)
			if err != nil {
				return err
			}
			dst.set(r, col, dtype.Load(g.DType, c.gm[a:a+size], 0))
		}
	}
	c.gmRead += int64(dst.rows * dst.cols * size)
	return nil
}

// execMScatter: window.flat[idx[r, c]] = src[r, c] over src's valid region in
// row-major order (a later duplicate wins); .add adds each element into GM instead,
// one after another, so duplicates sum in that order.
func execMScatter(c *coreSim, x *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	src, idx, g := vs[1], vs[2], in.Args[0]
	base, err := c.gmBase(x, g)
	if err != nil {
		return err
	}
	size := g.DType.Size()
	for r := 0; r < src.rows; r++ {
		for col := 0; col < src.cols; col++ {
			a, err := gmIndex(g.GM, base, size, int(idx.atInt(r, col)), r, col)
			if err != nil {
				return err
			}
			elem := c.gm[a : a+size]
			switch {
			case in.Mode != isa.AtomicAdd:
				dtype.Store(g.DType, elem, 0, src.at(r, col))
			case g.DType.IsInt(): // exact; the store wraps
				dtype.Store(g.DType, elem, 0, float64(int64(dtype.Load(g.DType, elem, 0))+src.atInt(r, col)))
			default:
				dtype.Store(g.DType, elem, 0, dtype.Load(g.DType, elem, 0)+src.at(r, col))
			}
		}
	}
	n := int64(src.rows * src.cols * size)
	c.gmWritten += n
	if in.Mode == isa.AtomicAdd {
		c.gmRead += n
	}
	return nil
}

// execSLD reads the integer in a 1x1 GM window into a register.
func execSLD(c *coreSim, x *execCtx, in *Instr) error {
	g := in.Args[1]
	base, err := c.gmBase(x, g)
	if err != nil {
		return err
	}
	if g.GM.Rows != 1 || g.GM.Cols != 1 || g.DType.IsFloat() {
		return fmt.Errorf("sld reads one integer, not a %dx%d %s window", g.GM.Rows, g.GM.Cols, g.DType)
	}
	size := g.DType.Size()
	a := base + g.GM.Offset*size
	v := int64(dtype.Load(g.DType, c.gm[a:a+size], 0))
	reg := in.Args[0].Reg
	if reg < 0 || reg >= len(x.run.sc.regs) {
		return fmt.Errorf("sld writes register %d; the program has %d", reg, len(x.run.sc.regs))
	}
	x.run.sc.regs[reg] = v
	c.gmRead += int64(size)
	return nil
}
