package lower

import (
	"fmt"

	"pypto/device"
	"pypto/isa"
)

// rowsTile picks [tr, tc, slots] for a row kernel. tc is the row length rounded up to
// whole 32-byte blocks (and to the bit masks' 256 columns when a step packs them).
// Tiles that loads and stores touch rotate through two or three slots, and tr is the
// most rows whose tiles, counted by generating one tile's code, fit the UB, but no more
// than spread the rows over every vector core. When not even one row fits, tc is the
// widest chunk of the row that divides it and fits, and the kernel runs in passes over
// the chunks (rows_chunked.go) with two slots; with no such chunk the group is no row
// kernel.
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
	if one := rowsKernelBytes(p, 1, tc, 2); one > capacity {
		w := widestChunk(p, align, capacity)
		if w == 0 {
			return nil, "", fmt.Errorf("one row of %d elements needs %d bytes of UB for this row kernel, and no chunk of it that is a multiple of %d fits; chip %s has %d",
				p.cols, one, align, chip.Name, capacity)
		}
		tr := min(fitRows(p, w, 2, capacity), ceilDiv(p.rows, chip.Cores(isa.Vector)))
		tr = periodRows(p, tr)
		return []int{tr, w, 2}, fmt.Sprintf("rows of %d in %d passes over chunks of %d columns, %d rows per tile in the %d-byte UB of %s",
			p.cols, p.passes, w, tr, capacity, chip.Name), nil
	}
	// Bigger tiles first: each load pays the memory latency while it holds its share of
	// the GM bandwidth, so fewer, larger loads move the same bytes sooner. A third slot
	// lets a tile's load start before the tile two back is stored.
	best := []int{0, tc, 2}
	for _, slots := range []int{2, 3} {
		tr := periodRows(p, min(fitRows(p, tc, slots, capacity), ceilDiv(p.rows, chip.Cores(isa.Vector))))
		if tr >= best[0] {
			best = []int{tr, tc, slots}
		}
	}
	reason := fmt.Sprintf("whole rows of %d (%d columns), %d per tile (the most that fit the %d-byte UB of %s, spread over its vector cores) in %d slots",
		p.cols, tc, best[0], capacity, chip.Name, best[2])
	return best, reason, nil
}

// fitRows is the most rows (at least one, at most all) whose tiles fit capacity.
func fitRows(p *rowsPlan, tc, slots, capacity int) int {
	one, two := rowsKernelBytes(p, 1, tc, slots), rowsKernelBytes(p, 2, tc, slots)
	perRow := max(1, two-one)
	tr := max(1, min((capacity-(one-perRow))/perRow, p.rows))
	for tr > 1 && rowsKernelBytes(p, tr, tc, slots) > capacity {
		tr--
	}
	return tr
}

// periodRows is the most rows up to tr that divide the period of every repeating
// input, so that a tile reads one stretch of each.
func periodRows(p *rowsPlan, tr int) int {
	for _, period := range p.period {
		for period > 0 && period%tr != 0 {
			tr--
		}
	}
	return tr
}

// widestChunk is the widest proper divisor of the row length that is a multiple of
// align and whose chunked kernel fits capacity with one row per tile, or 0.
func widestChunk(p *rowsPlan, align, capacity int) int {
	for parts := 2; parts*align <= p.cols; parts++ {
		if w := p.cols / parts; p.cols%parts == 0 && w%align == 0 && rowsKernelBytes(p, 1, w, 2) <= capacity {
			return w
		}
	}
	return 0
}

// rowsKernelBytes is the UB a row kernel with tiles of tr rows (of tc columns, a chunk
// when fewer than C) in slots slots declares.
func rowsKernelBytes(p *rowsPlan, tr, tc, slots int) int {
	e := newEmitter("probe", isa.Vector)
	params := make([]int, len(p.body.Params))
	for i := range params {
		params[i] = i
	}
	k := newRowsKernel(e, p, tr, tc, slots, params, len(params))
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

// rowsCandidates lists the row kernel tilings the tile search weighs: whole rows, in
// two or three slots, the most rows that fit the UB and fewer, so that the tiles make
// one to four waves over the vector cores. A row kernel in passes over chunks keeps
// the rule's tile. Each carries the device's bound for it.
func rowsCandidates(est *estimator, tg *TileGraph, op *TileOp) []candidate {
	chip := est.chip
	p, err := rowsPlanOf(op.Attrs)
	if err != nil {
		return nil
	}
	work := func(tile []int) int64 {
		bytes := int64(0)
		for _, t := range append(append([]int(nil), op.Inputs...), op.Output) {
			bytes += int64(tg.Tensors[t].Type.Bytes())
		}
		tiles := ceilDiv(max(p.rows, 1), tile[0])
		per := int64(ceilDiv(tiles, min(tiles, chip.Cores(isa.Vector))) * tile[0])
		return chip.Bound(device.Work{LoadBytes: bytes * per / int64(max(p.rows, 1)), HBMBytes: bytes})
	}
	tc := op.Tile[1]
	if tc < p.cols { // chunks of rows: the rule's tile only
		return []candidate{{tile: op.Tile, bound: work(op.Tile)}}
	}
	seen := map[[2]int]bool{}
	var out []candidate
	cores := chip.Cores(isa.Vector)
	for _, slots := range []int{2, 3} {
		most := fitRows(p, tc, slots, chip.Capacity(isa.Vec))
		if slots > 2 && rowsKernelBytes(p, most, tc, slots) > chip.Capacity(isa.Vec) {
			continue // not even one row in three slots
		}
		for waves := 0; waves <= 4; waves++ {
			tr := most
			if waves > 0 {
				tr = min(most, ceilDiv(max(p.rows, 1), waves*cores))
			}
			tr = periodRows(p, max(tr, 1))
			if seen[[2]int{tr, slots}] {
				continue
			}
			seen[[2]int{tr, slots}] = true
			tile := []int{tr, tc, slots}
			out = append(out, candidate{tile: tile, bound: work(tile), shape: [3]int{tr}})
		}
	}
	return out
}
