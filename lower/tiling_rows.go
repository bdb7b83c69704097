package lower

import (
	"fmt"

	"pypto/device"
	"pypto/isa"
)

// rowsTile picks [tr, tc] for a row kernel: tc is the row length rounded up to whole
// 32-byte blocks (and to the bit masks' 256 columns when a step packs them), tr the
// most rows whose tiles, counted by generating one tile's code, fit the UB, but no
// more than spread the rows over every vector core.
func rowsTile(chip *device.Chip, p *rowsPlan) ([]int, string, error) {
	align := 1
	for i, n := range p.body.Nodes {
		align = max(align, 32/max(1, n.Type.DType.Size()))
		if l, ok := lowerings[n.Op]; ok && p.kind[i] == kindFull {
			align = max(align, l.colAlign)
		}
	}
	tc := roundUp(p.cols, align)
	capacity := chip.Capacity(isa.Vec)
	one, two := rowsKernelBytes(p, 1, tc), rowsKernelBytes(p, 2, tc)
	if one > capacity {
		return nil, "", fmt.Errorf("one row of %d elements needs %d bytes of UB for this row kernel, chip %s has %d", p.cols, one, chip.Name, capacity)
	}
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
	reason := fmt.Sprintf("whole rows of %d (%d columns); %d rows fit the %d-byte UB of %s, %d per tile to spread %d rows over the vector cores",
		p.cols, tc, fit, capacity, chip.Name, tr, p.rows)
	return []int{tr, tc}, reason, nil
}

// rowsKernelBytes is the UB a row kernel with tiles of tr rows declares.
func rowsKernelBytes(p *rowsPlan, tr, tc int) int {
	e := newEmitter("probe", isa.Vector)
	params := make([]int, len(p.body.Params))
	for i := range params {
		params[i] = i
	}
	newRowsKernel(e, p, tr, tc, params, len(params)).emitTile(0, 0, tr)
	bytes := 0
	for _, t := range e.prog.Tiles {
		bytes += roundUp(t.Rows*t.Cols*t.DType.Size(), 32)
	}
	return bytes
}
