package device

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"pypto/isa"
)

// Gather / scatter, sorting, generators, quantisation and debug output.

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.TGATHER:  {exec: execGather, work: workGather},
		isa.TGATHERB: {exec: execGather, work: workGather},
		isa.TSCATTER: {exec: execScatter, work: workGather},
		isa.TSORT32:  {exec: execSort32, work: workSort32},
		isa.TMRGSORT: {exec: execMrgSort, work: workMrgSort},
		// The ISA's reference routing puts TCI on the scalar unit; the device runs it
		// on the vector unit's index generator (VCI), which writes UB at the vector
		// rate and needs no scalar <-> vector flags around it.
		isa.TCI:      {route: func(*checkCtx, isa.Instr) (isa.Pipe, string) { return isa.PipeV, "" }, exec: execCI, work: workVector},
		isa.TTRI:     {exec: execTri, work: workVector},
		isa.TQUANT:   {exec: execQuant, work: workVector},
		isa.TDEQUANT: {exec: execDequant, work: workVector},
		// Debug output, read by the scalar unit as it issues; not timed beyond issue.
		isa.TPRINT: {access: readsOperand0, exec: execPrint},
	})
}

// readsOperand0: the instruction only reads its first operand.
func readsOperand0(in *Instr, s *accessSet) { s.add(in.Args[0], false) }

// workGather: indexed UB accesses proceed GatherElemsPerCycle elements per cycle (each
// element is its own access; the banks serve a few at once).
func workGather(chip *Chip, in *Instr) int64 {
	o := in.Args[0]
	if in.Op == isa.TSCATTER {
		o = in.Args[1]
	}
	return ceilDiv(int64(o.ValidRows*o.ValidCols), chip.GatherElemsPerCycle)
}

// workSort32: a bitonic network sorts 32 elements in 5*6/2 = 15 compare-exchange
// stages, each a pass over the (value, index) pairs it writes at the sort rate.
func workSort32(chip *Chip, in *Instr) int64 {
	return 15 * sortPass(chip, in)
}

// workMrgSort: a 4-way merge picks each output through a 2-level compare tree, two
// passes over the pairs it writes at the sort rate.
func workMrgSort(chip *Chip, in *Instr) int64 {
	return 2 * sortPass(chip, in)
}

// sortPass is one compare-exchange pass of the sort instructions over their whole
// destination, at Chip.SortBytesPerCycle (the compare, select and index move of a
// pass do not run at the plain vector rate).
func sortPass(chip *Chip, in *Instr) int64 {
	dst := in.Args[0]
	return ceilDiv(int64(dst.Rows*dst.Cols*dst.DType.Size()), chip.SortBytesPerCycle)
}

// execGather: dst[r, c] = src.flat[idx[r, c]] (TGATHER) or the element at byte offset
// idx[r, c] (TGATHERB), over dst's valid region.
func execGather(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src, idx := vs[0], c.snap(vs[1], 1), c.snap(vs[2], 2)
	n, size := src.o.Rows*src.o.Cols, src.o.DType.Size()
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			i := int(idx.atInt(r, col))
			if in.Op == isa.TGATHERB {
				if i%size != 0 {
					return fmt.Errorf("byte offset %d at (%d, %d) is not a multiple of the %d-byte %s element", i, r, col, size, src.o.DType)
				}
				i /= size
			}
			if i < 0 || i >= n {
				return fmt.Errorf("index %d at (%d, %d) is outside the source's %d elements", i, r, col, n)
			}
			dst.set(r, col, src.at(i/src.o.Cols, i%src.o.Cols))
		}
	}
	return nil
}

// execScatter: dst.flat[idx[r, c]] = src[r, c] over src's valid region in row-major
// order (a later duplicate wins).
func execScatter(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src, idx := vs[0], c.snap(vs[1], 1), c.snap(vs[2], 2)
	n := dst.o.Rows * dst.o.Cols
	for r := 0; r < src.rows; r++ {
		for col := 0; col < src.cols; col++ {
			i := int(idx.atInt(r, col))
			if i < 0 || i >= n {
				return fmt.Errorf("index %d at (%d, %d) is outside the destination's %d elements", i, r, col, n)
			}
			dst.set(i/dst.o.Cols, i%dst.o.Cols, src.at(r, col))
		}
	}
	return nil
}

// sortPair is a (value, index) element of the sort instructions.
type sortPair struct{ v, i float64 }

// descending orders pairs by value, largest first, NaN above every number; callers
// sort stably, so ties keep their order.
func descending(a, b sortPair) int {
	an, bn := math.IsNaN(a.v), math.IsNaN(b.v)
	switch {
	case an || bn:
		return cmp.Compare(b2i(bn), b2i(an))
	case a.v > b.v:
		return -1
	case a.v < b.v:
		return 1
	}
	return 0
}

// execSort32 sorts each block of 32 (value, index) pairs of every row, descending and
// stable, and writes them interleaved: dst[r, 2j] value, dst[r, 2j+1] index.
func execSort32(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src, idx := vs[0], c.snap(vs[1], 1), c.snap(vs[2], 2)
	if src.o.Cols%32 != 0 || dst.o.Cols < 2*src.o.Cols || dst.o.Rows < src.o.Rows {
		return fmt.Errorf("tsort32 of a %dx%d source into a %dx%d destination", src.o.Rows, src.o.Cols, dst.o.Rows, dst.o.Cols)
	}
	ps := make([]sortPair, 32)
	for r := 0; r < src.o.Rows; r++ {
		for b := 0; b < src.o.Cols; b += 32 {
			for i := range ps {
				ps[i] = sortPair{src.at(r, b+i), float64(idx.atInt(r, b+i))}
			}
			slices.SortStableFunc(ps, descending)
			for i, p := range ps {
				dst.set(r, 2*(b+i), p.v)
				dst.set(r, 2*(b+i)+1, p.i)
			}
		}
	}
	return nil
}

// execMrgSort merges each group of 4 consecutive runs of n pairs of a row into one
// descending run; a stable sort of the group is that merge, earlier runs first on
// ties.
func execMrgSort(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src := vs[0], c.snap(vs[1], 1)
	n := int(in.Args[2].Imm)
	pairs := src.o.Cols / 2
	if n < 1 || dst.o.Rows != src.o.Rows || dst.o.Cols != src.o.Cols {
		return fmt.Errorf("tmrgsort of runs of %d in a %dx%d source into a %dx%d destination", n, src.o.Rows, src.o.Cols, dst.o.Rows, dst.o.Cols)
	}
	out := make([]sortPair, pairs)
	for r := 0; r < src.o.Rows; r++ {
		for i := range out {
			out[i] = sortPair{src.at(r, 2*i), src.at(r, 2*i+1)}
		}
		for g := 0; g < pairs; g += 4 * n {
			slices.SortStableFunc(out[g:min(g+4*n, pairs)], descending)
		}
		for i, p := range out {
			dst.set(r, 2*i, p.v)
			dst.set(r, 2*i+1, p.i)
		}
	}
	return nil
}

// execCI: dst[r, c] = start + flat(r, c) * step over dst's valid region.
func execCI(c *coreSim, _ *execCtx, in *Instr) error {
	dst, err := c.tileView(in.Args[0])
	if err != nil {
		return err
	}
	start, step := in.Args[1].Imm, in.Args[2].Imm
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			dst.set(r, col, start+float64(r*dst.o.Cols+col)*step)
		}
	}
	return nil
}

// execTri: 1 on and below the diagonal offset d (above it with .upper), 0 elsewhere.
func execTri(c *coreSim, _ *execCtx, in *Instr) error {
	dst, err := c.tileView(in.Args[0])
	if err != nil {
		return err
	}
	d := int(in.Args[1].Imm)
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			on := col-r <= d
			if in.Mode == isa.TriUpper {
				on = col-r >= d
			}
			dst.set(r, col, float64(b2i(on)))
		}
	}
	return nil
}

// execQuant: dst = saturate(rint(src * scale[r, 0] + offset[r, 0])).
func execQuant(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src, scale, off := vs[0], c.snap(vs[1], 1), vs[2], vs[3]
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			dst.set(r, col, saturate(dst.o.DType, src.at(r, col)*scale.at(r, 0)+off.at(r, 0)))
		}
	}
	return nil
}

// execDequant: dst = (src - offset[r, 0]) * scale[r, 0], rounded once.
func execDequant(c *coreSim, _ *execCtx, in *Instr) error {
	vs, err := c.views(in)
	if err != nil {
		return err
	}
	dst, src, scale, off := vs[0], c.snap(vs[1], 1), vs[2], vs[3]
	for r := 0; r < dst.rows; r++ {
		for col := 0; col < dst.cols; col++ {
			dst.set(r, col, (src.at(r, col)-off.at(r, 0))*scale.at(r, 0))
		}
	}
	return nil
}

// execPrint records the tile's valid region in the run's output, in the reference
// interpreter's format: a header line, then one line of values per valid row.
func execPrint(c *coreSim, x *execCtx, in *Instr) error {
	t, err := c.tileView(in.Args[0])
	if err != nil {
		return err
	}
	name := "?"
	if o := in.Args[0]; o.Tile >= 0 && o.Tile < len(x.m.Tiles) {
		name = x.m.Tiles[o.Tile].Decl.Name
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%%%s %s[%dx%d] valid %dx%d:\n", quoteIfNeeded(name), t.o.DType, t.o.Rows, t.o.Cols, t.rows, t.cols)
	for r := 0; r < t.rows; r++ {
		for col := 0; col < t.cols; col++ {
			if col > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatFloat(t.at(r, col), 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	c.prints = append(c.prints, PrintRecord{Kind: c.kind, Core: c.index, Block: x.run.bi, PC: x.run.sc.pc, Cycle: x.run.t0 + x.now, Text: b.String()})
	return nil
}

// quoteIfNeeded prints a name as the ISA's text does: bare when it is an identifier.
func quoteIfNeeded(s string) string {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		letter := ch == '_' || 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z'
		if !(letter || i > 0 && ('0' <= ch && ch <= '9' || ch == '.')) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return strconv.Quote(s)
	}
	return s
}
