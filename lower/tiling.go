package lower

import (
	"fmt"

	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// The vector kernels' tilings are fixed rules: start from a base tile that suits the
// unit and shrink it until double-buffered copies fit the chip's buffers. They are
// correct for every size; edge tiles carry partial windows. Matmul tiles are searched
// (tile_search.go); matmulTile is the fixed rule kept for Options.FixedTiles.

// cubeAlign is the granularity of Left/Right/Acc tile dimensions (the 16x16 fractal).
const cubeAlign = 16

// matmulTile is the fixed matmul rule: base [128, 256, 128 bytes of K] halved until two
// copies fit L1/L0A/L0B and one accumulator fits L0C, one base block per stage, K
// not split.
func matmulTile(chip *device.Chip, dt dtype.DType, m, n, k int) (matmulTiling, string, error) {
	size := dt.Size()
	ka, na := kAlign(dt), nAlign(dt)
	t := matmulTiling{
		tm: min(128, roundUp(max(m, 1), cubeAlign)), tn: min(256, roundUp(max(n, 1), na)),
		tk: min(128/size, roundUp(max(k, 1), ka)), stepK: 1, kc: max(k, 1),
	}
	for t.fits(chip, dt) != "" {
		switch {
		case t.tn >= t.tm && t.tn > na:
			t.tn = roundUp(t.tn/2, na)
		case t.tm > cubeAlign:
			t.tm = roundUp(t.tm/2, cubeAlign)
		case t.tk > ka:
			t.tk = roundUp(t.tk/2, ka)
		default:
			return t, "", fmt.Errorf("no matmul tile fits chip %s: even %v exceeds its buffers", chip.Name, t.tile())
		}
	}
	reason := fmt.Sprintf("fixed rule: base [128,256,%d] halved until two copies fit L1/L0A/L0B and one Acc fits L0C of %s", 128/size, chip.Name)
	return t, reason, nil
}

// elementwiseTile picks [tr, tc] for an output of rows x cols when liveTiles tiles of
// at most maxSize bytes per element are live per iteration.
func elementwiseTile(chip *device.Chip, minSize, maxSize, liveTiles, colAlign, rows, cols int) ([]int, string, error) {
	align := max(32/minSize, colAlign)                           // tile rows must be whole 32-byte blocks for every dtype involved
	budget := chip.Capacity(isa.Vec) / (2 * liveTiles) / maxSize // elements per tile, double-buffered
	budget = budget / align * align
	if budget < align {
		return nil, "", fmt.Errorf("no vector tile fits chip %s: %d live tiles do not fit its %d-byte UB", chip.Name, 2*liveTiles, chip.Capacity(isa.Vec))
	}
	tc := min(roundUp(max(cols, 1), align), budget)
	tr := max(1, min(max(rows, 1), budget/tc))
	reason := fmt.Sprintf("widest row up to %d elements, then as many rows as fit; %d tiles double-buffered in the %d-byte UB of %s",
		budget, liveTiles, chip.Capacity(isa.Vec), chip.Name)
	return []int{tr, tc}, reason, nil
}

// reduceTile picks [tr, tc] for a reduction of problem [outer, r, inner]: the loaded
// tile, its converted copy (double-buffered) and the small accumulators must fit the
// UB. Row reductions keep tr a multiple of 32 so the per-row results form whole 32-byte
// blocks in a column (DN) tile of any dtype.
func reduceTile(chip *device.Chip, red reduction, in, out dtype.DType, problem []int) ([]int, string, error) {
	acc := red.accumulateType(in, out)
	minSize := min(in.Size(), acc.Size(), out.Size())
	maxSize := max(in.Size(), acc.Size(), out.Size())
	outer, r, inner := problem[0], problem[1], problem[2]
	if inner == 1 {
		t, reason, err := elementwiseTile(chip, minSize, maxSize, 3, 0, outer, r)
		if err != nil {
			return nil, "", err
		}
		t[0] = roundUp(t[0], 32)
		for t[0]*t[1]*maxSize*2*3 > chip.Capacity(isa.Vec) && t[1] > 32/minSize { // rounding rows up may overflow the UB
			t[1] = roundUp(t[1]/2, 32/minSize)
		}
		return t, "row reduction: " + reason, nil
	}
	t, reason, err := elementwiseTile(chip, minSize, maxSize, 3, 0, r, inner)
	return t, "column reduction: " + reason, err
}

// scanTile picks [1, tc] for a running sum: each step keeps a loaded row, its
// converted copy, two accumulators and the converted result, double-buffered.
func scanTile(chip *device.Chip, in, out dtype.DType, problem []int) ([]int, string, error) {
	acc := scanAccumulator(in, out)
	minSize := min(in.Size(), acc.Size(), out.Size())
	maxSize := max(in.Size(), acc.Size(), out.Size())
	lanes := problem[2]
	if lanes == 1 {
		lanes = problem[0]
	}
	t, reason, err := elementwiseTile(chip, minSize, maxSize, 5, 0, 1, lanes)
	return t, "scan lanes: " + reason, err
}

// sortRunLength is the padded row length of an on-chip sort: TSORT32 sorts runs of 32
// and each TMRGSORT merges four runs, so rows are padded to 32*4^m >= n.
func sortRunLength(n int) int {
	l := 32
	for l < n {
		l *= 4
	}
	return l
}

// sortTile picks [tr, l]: every row of the tile is sorted on chip, and a row needs its
// loaded and padded copies, the index tiles, two (value, index) pair buffers of 2l and
// the extracted result, about l*(44 + the input size) bytes.
func sortTile(chip *device.Chip, in dtype.DType, problem []int) ([]int, string, error) {
	l := problem[2]
	perRow := sortBytesPerRow(in, l)
	tr := chip.Capacity(isa.Vec) / perRow
	if tr < 1 {
		return nil, "", fmt.Errorf("sorting rows of %d elements needs %d bytes of UB per row; chip %s has %d (at most %d elements per row)",
			problem[1], perRow, chip.Name, chip.Capacity(isa.Vec), maxSortLength(chip, in))
	}
	tr = min(tr, max(problem[0], 1))
	return []int{tr, l}, fmt.Sprintf("rows padded to %d (runs of 32 merged by 4); %d rows fit the %d-byte UB of %s", l, tr, chip.Capacity(isa.Vec), chip.Name), nil
}

// maxSortLength is the longest row an on-chip sort handles on chip.
func maxSortLength(chip *device.Chip, in dtype.DType) int {
	l := 32
	for sortBytesPerRow(in, 4*l) <= chip.Capacity(isa.Vec) {
		l *= 4
	}
	return l
}

// sortBytesPerRow is the UB one row of an on-chip sort of l (padded) elements uses:
// its loaded and padded copies, index tiles, two pair buffers of 2l and the result;
// int32 rows, sorted by two 16-bit digits, keep about twice as many tiles.
func sortBytesPerRow(in dtype.DType, l int) int {
	per := 44 + 2*in.Size()
	if in == dtype.Int32 {
		per = 100
	}
	return l*per + 256
}
