package lower

import (
	"fmt"

	"pypto/device"
	"pypto/isa"
)

// rowsTile picks [tr, tc] for a row kernel. tc is the row length rounded up to whole
// 32-byte blocks (and to the bit masks' 256 columns when a step packs them), tr the most
// rows whose tiles, counted by generating one tile's code, fit the UB, but no more than
// spread the rows over every vector core. When not even one row fits, tc is the widest
// chunk of the row that divides it and fits, and the kernel runs in passes over the
// chunks (rows_chunked.go); with no such chunk the group is no row kernel.
func rowsTile(chip *device.Chip, p *rowsPlan) ([]int, string, error) {
	align := 1
	for i, n := range p.body.Nodes {
		align = max(align, 32/max(1, n.Type.DType.Size()))
		if l, ok := lowerings[n.Op]; ok && p.kind[i] == kindFull {
			align = max(align, l.colAlign)
		}
	}
	capacity := chip.Capacity(isa.Vec)
	tc := roundUp(p.cols, align)
	how := fmt.Sprintf("whole rows of %d (%d columns)", p.cols, tc)
	if one := rowsKernelBytes(p, 1, tc); one > capacity {
		tc = widestChunk(p, align, capacity)
		if tc == 0 {
			return nil, "", fmt.Errorf("one row of %d elements needs %d bytes of UB for this row kernel, and no chunk of it that is a multiple of %d fits; chip %s has %d",
				p.cols, one, align, chip.Name, capacity)
		}
		how = fmt.Sprintf("rows of %d in %d passes over chunks of %d columns", p.cols, p.passes, tc)
	}
	one, two := rowsKernelBytes(p, 1, tc), rowsKernelBytes(p, 2, tc)
	perRow := max(1, two-one)
	tr := max(1, min((capacity-(one-perRow))/perRow, p.rows))
	for tr > 1 && rowsKernelBytes(p, tr, tc) > capacity {
		tr--
	}
	fit := tr
	tr = min(tr, ceilDiv(p.rows, chip.Cores(isa.Vector)))
	for _, period := range p.period {
		for period > 0 && period%tr != 0 { // a tile reads one stretch of a repeating input
			tr--
		}
	}
	reason := fmt.Sprintf("%s; %d rows fit the %d-byte UB of %s, %d per tile to spread %d rows over the vector cores",
		how, fit, capacity, chip.Name, tr, p.rows)
	return []int{tr, tc}, reason, nil
}

// widestChunk is the widest proper divisor of the row length that is a multiple of
// align and whose chunked kernel fits capacity with one row per tile, or 0.
func widestChunk(p *rowsPlan, align, capacity int) int {
	for parts := 2; parts*align <= p.cols; parts++ {
		if w := p.cols / parts; p.cols%parts == 0 && w%align == 0 && rowsKernelBytes(p, 1, w) <= capacity {
			return w
		}
	}
	return 0
}

// rowsKernelBytes is the UB a row kernel with tiles of tr rows (of tc columns, a chunk
// when fewer than C) declares.
func rowsKernelBytes(p *rowsPlan, tr, tc int) int {
	e := newEmitter("probe", isa.Vector)
	params := make([]int, len(p.body.Params))
	for i := range params {
		params[i] = i
	}
	k := newRowsKernel(e, p, tr, tc, params, len(params))
	if k.chunked {
		k.emitChunkedTile(0, tr)
	} else {
		k.emitTile(0, 0, tr)
	}
	bytes := 0
	for _, t := range e.prog.Tiles {
		bytes += roundUp(t.Rows*t.Cols*t.DType.Size(), 32)
	}
	return bytes
}
