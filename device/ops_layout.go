package device

import (
	"fmt"

	"pypto/isa"
)

// Data movement and layout beyond TMOV / TEXTRACT: TINSERT, TTRANS, TFILLPAD,
// TRESHAPE, TIMG2COL, TASSIGN and TMOV_FP.

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.TINSERT:  {route: routeInsert, access: insertAccess, exec: execInsert, work: workInsert},
		isa.TTRANS:   {exec: execTrans, work: workVector},
		isa.TFILLPAD: {exec: execFillPad, work: workVector},
		// A reinterpretation: on the hardware no data moves, the scalar unit only
		// rebinds the address. The simulator copies the bytes (tiles have their own
		// addresses here), at no pipe cost.
		isa.TRESHAPE: {exec: execReshape},
		isa.TIMG2COL: {exec: execImg2col, work: workMove},
		// Placement is the backend's (backend_alloc.go pins the tile); at run time
		// there is nothing left to do.
		isa.TASSIGN: {access: noAccess},
		isa.TMOV_FP: {exec: execMovFP, work: workMove},
	})
}

// routeInsert: L0C -> L1 through the fixpipe, UB -> UB on the vector pipe.
func routeInsert(ck *checkCtx, in isa.Instr) (isa.Pipe, string) {
	if ck.tile(in, 1).Loc == isa.Acc {
		return isa.PipeFIX, ""
	}
	return isa.PipeV, ""
}

// insertAccess: TINSERT writes only the rows of dst the window covers (from its first
// element to its last, row-major) and reads src.
func insertAccess(in *Instr, s *accessSet) {
	dst, src := in.Args[0], in.Args[1]
	r, c := int(in.Args[2].Imm), int(in.Args[3].Imm)
	size := dst.DType.Size()
	first := (r*dst.Cols + c) * size
	last := ((r+src.Rows-1)*dst.Cols + c + src.Cols) * size
	s.writes = append(s.writes, span{space: int(dst.Loc), lo: dst.Addr + first, hi: dst.Addr + last})
	s.add(src, false)
}

func workInsert(chip *Chip, in *Instr) int64 {
	src := in.Args[1]
	if in.Pipe == isa.PipeFIX {
		return ceilDiv(int64(src.Bytes()), chip.FixpipeBytesPerCycle)
	}
	return vectorRepeats(chip, src.Rows, src.Cols, src.Cols, max(src.DType.Size(), in.Args[0].DType.Size()))
}

// execInsert writes the whole of src into the window of dst at (row, col),
// converting as the fixpipe does; the rest of dst is unchanged.
func execInsert(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src := vs[0], c.snap(vs[1], 1)
	r0, c0 := int(in.Args[2].Imm), int(in.Args[3].Imm)
	if !dst.within(r0, c0) || !dst.within(r0+src.o.Rows-1, c0+src.o.Cols-1) {
		return fmt.Errorf("window %dx%d at (%d, %d) leaves the %dx%d destination", src.o.Rows, src.o.Cols, r0, c0, dst.o.Rows, dst.o.Cols)
	}
	for r := 0; r < src.o.Rows; r++ {
		for col := 0; col < src.o.Cols; col++ {
			dst.set(r0+r, c0+col, src.at(r, col))
		}
	}
	return nil
}

// execTrans: dst[r, c] = src[c, r] over dst's valid region.
func execTrans(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src := vs[0], c.snap(vs[1], 1)
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			if !src.within(col, r) {
				return fmt.Errorf("(%d, %d) of the transpose lies outside the %dx%d source", r, col, src.o.Rows, src.o.Cols)
			}
			dst.set(r, col, src.at(col, r))
		}
	}
	return nil
}

// execFillPad writes the whole of dst: src inside src's valid region, the pad value
// (rounded once to dst's dtype) everywhere else.
func execFillPad(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src := vs[0], c.snap(vs[1], 1)
	for r := 0; r < dst.o.Rows; r++ {
		for col := 0; col < dst.o.Cols; col++ {
			if r < src.rows && col < src.cols {
				dst.set(r, col, src.at(r, col))
			} else {
				dst.set(r, col, in.Args[2].Imm)
			}
		}
	}
	return nil
}

// execReshape copies src's bytes into dst (equal sizes; both row-major).
func execReshape(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	if len(vs[0].b) != len(vs[1].b) {
		return fmt.Errorf("treshape between tiles of %d and %d bytes", len(vs[0].b), len(vs[1].b))
	}
	copy(vs[0].b, vs[1].b)
	return nil
}

// img2col is the geometry of a TIMG2COL: an h x w image of c channels per pixel
// stored pixel-major, a kh x kw kernel, stride s, p columns of padding left and right,
// pt rows above, and the oh x ow output positions.
type img2col struct{ h, w, c, kh, kw, s, pl, pr, pt, oh, ow int }

func img2colGeometry(in *Instr) (img2col, error) {
	var v [8]int
	for i := range v {
		x := in.Args[2+i].Imm
		if x != float64(int(x)) || x < 0 || (i < 4 || i == 7) && x < 1 || x > 1<<20 {
			return img2col{}, fmt.Errorf("img2col parameter %g is not a valid integer", x)
		}
		v[i] = int(x)
	}
	src := in.Args[1]
	g := img2col{w: v[0], c: src.Cols, kh: v[1], kw: v[2], s: v[3], pl: v[4], pr: v[5], pt: v[6], oh: v[7]}
	if src.Rows%g.w != 0 {
		return g, fmt.Errorf("%d rows are not whole image rows of %d pixels", src.Rows, g.w)
	}
	g.h = src.Rows / g.w
	if g.w+g.pl+g.pr < g.kw {
		return g, fmt.Errorf("a %d-wide kernel does not fit the padded %d-pixel rows", g.kw, g.w+g.pl+g.pr)
	}
	g.ow = (g.w+g.pl+g.pr-g.kw)/g.s + 1
	return g, nil
}

// execImg2col writes the whole of dst: one row per output position, one column per
// (kernel row, kernel col, channel), zero outside the image and beyond the patches.
func execImg2col(c *coreSim, _ *execCtx, in *Instr) error {
	g, err := img2colGeometry(in)
	if err != nil {
		return err
	}
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src := vs[0], c.snap(vs[1], 1)
	if g.oh*g.ow > dst.o.Rows || g.kh*g.kw*g.c > dst.o.Cols {
		return fmt.Errorf("%d patches of %d values do not fit the %dx%d destination", g.oh*g.ow, g.kh*g.kw*g.c, dst.o.Rows, dst.o.Cols)
	}
	clear(dst.b)
	for oh := 0; oh < g.oh; oh++ {
		for ow := 0; ow < g.ow; ow++ {
			for i := 0; i < g.kh; i++ {
				for j := 0; j < g.kw; j++ {
					y, x := oh*g.s-g.pt+i, ow*g.s-g.pl+j
					if y < 0 || y >= g.h || x < 0 || x >= g.w {
						continue
					}
					for ch := 0; ch < g.c; ch++ {
						dst.set(oh*g.ow+ow, (i*g.kw+j)*g.c+ch, src.at(y*g.w+x, ch))
					}
				}
			}
		}
	}
	return nil
}

// execMovFP moves the whole of an Acc tile to Vec through the fixpipe with a
// per-column scale: integers saturate, floats round to nearest even.
func execMovFP(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src, fp := vs[0], vs[1], vs[2]
	for r := 0; r < dst.o.Rows; r++ {
		for col := 0; col < dst.o.Cols; col++ {
			dst.set(r, col, quantise(dst.o.DType, src.at(r, col)*fp.at(0, col)))
		}
	}
	return nil
}
