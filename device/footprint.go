package device

import "slices"

// footprint is the number of distinct GM bytes the blocks of a task read and wrote:
// the union of the byte runs of every window (per block, static ones and those moved
// by registers, as they ran), reads and writes apart. It is what the task moves
// between HBM and an L2 that holds its data, whatever the tiling re-reads from L2, so
// the compiler's fusion and tiling can be judged against the compulsory bytes of a
// program (bench/kernels.py).
func footprint(windows [][]gmInterval) (read, written int64) {
	var rd, wr []gmInterval
	for _, ivs := range windows {
		for _, iv := range ivs {
			if iv.write {
				wr = append(wr, iv)
			} else {
				rd = append(rd, iv)
			}
		}
	}
	return unionBytes(rd), unionBytes(wr)
}

// unionBytes is the size of the union of the intervals' byte ranges.
func unionBytes(ivs []gmInterval) int64 {
	slices.SortFunc(ivs, func(a, b gmInterval) int { return a.lo - b.lo })
	var total int64
	end := -1 << 62
	for _, iv := range ivs {
		lo := max(iv.lo, end)
		if iv.hi > lo {
			total += int64(iv.hi - lo)
		}
		end = max(end, iv.hi)
	}
	return total
}
