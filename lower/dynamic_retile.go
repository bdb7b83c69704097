package lower

import (
	"fmt"
)

// Tiles for a range of rows. A program compiled for a bucket's bound serves every size
// from the bucket's least (DynamicSizes.Least) to the bound, and a matmul that follows
// the run's rows deals its ceil(rows / tm) row tiles (times the column tiles) to the
// blocks the bound's tiles made, each block taking an equal share. The tile the search
// chose for the bound can deal other sizes badly: with 256-row tiles on 24 blocks, 705
// to 768 rows are one tile per block and 769 rows two, so a run of 769 takes twice
// the time of one of 768, where a program compiled for 769 would have chosen another
// tile.
//
// retileForRange re-chooses such a matmul's tile among the search's best candidates
// at the bound and at the least size. Each candidate's time at the bound comes from
// the device's timing model; at a smaller size it is that time scaled by the waves the
// size needs, the most tiles one block computes (a dynamic matmul's blocks each run
// their share of the valid tiles one after another). The choice is the candidate whose
// worst ratio to the fastest candidate, over every size of the range, is least (ties:
// the faster at the bound).

// rangeCandidates is how many of the best-ranked candidates at each end are timed:
// assumed, a few distinct tile shapes per end (rankCandidates puts one of each shape
// first), so that a re-choice costs about a dozen estimates, most of them cached.
const rangeCandidates = 6

// retileForRange re-chooses the tile of dynamic matmul op for runs from least rows to
// its problem's rows, on blocks of cores; keep says whether a tile leaves the op
// dynamic as it is.
func retileForRange(est *estimator, tg *TileGraph, op *TileOp, least, cores int, keep func(*TileOp) bool) error {
	if op.Kind != TileMatmul && op.Kind != TileMatmulEpilogue || least <= 0 || least >= op.Problem[1] || op.Problem[0] != 1 {
		return nil
	}
	if given, err := userTileShape(op); err != nil || given != nil {
		return nil
	}
	tiles := [][]int{op.Tile}
	seen := map[string]bool{fmt.Sprint(op.Tile): true}
	for _, at := range []*TileOp{op, rowsOf(op, least)} {
		n := 0
		for _, c := range rankCandidates(matmulCandidates(est, tg, at)) {
			if n == rangeCandidates {
				break
			}
			probe := *op
			probe.Tile, probe.Grid = c.tile, tileGrid(op.Kind, op.Problem, c.tile)
			if seen[fmt.Sprint(c.tile)] || probe.Grid[3] != 1 || !keep(&probe) {
				continue
			}
			seen[fmt.Sprint(c.tile)] = true
			tiles = append(tiles, c.tile)
			n++
		}
	}
	if len(tiles) == 1 {
		return nil
	}
	atBound := make([]int64, len(tiles))
	errs := make([]error, len(tiles))
	inParallel(len(tiles), func(i int) bool {
		atBound[i], errs[i] = candidateCycles(est, tg, op, tiles[i])
		return errs[i] == nil
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	bound := op.Problem[1]
	gn := make([]int, len(tiles))
	blocks := make([]int, len(tiles))
	for i, t := range tiles {
		gn[i] = ceilDiv(op.Problem[2], t[1])
		blocks[i] = min(ceilDiv(bound, t[0])*gn[i], cores)
	}
	waves := func(i, rows int) int { return ceilDiv(ceilDiv(rows, tiles[i][0])*gn[i], blocks[i]) }
	cost := func(i, rows int) float64 {
		return float64(atBound[i]) * float64(waves(i, rows)) / float64(waves(i, bound))
	}
	worst := make([]float64, len(tiles))
	for rows := least; rows <= bound; rows++ {
		best := cost(0, rows)
		for i := range tiles {
			best = min(best, cost(i, rows))
		}
		for i := range tiles {
			worst[i] = max(worst[i], cost(i, rows)/best)
		}
	}
	pick := 0
	for i := range tiles {
		if worst[i] < worst[pick] || worst[i] == worst[pick] && atBound[i] < atBound[pick] {
			pick = i
		}
	}
	if pick == 0 {
		return nil
	}
	op.Reason = fmt.Sprintf("for runs of %d to %d rows: %v, est %d cycles at %d rows and at most %.3fx the fastest of %d candidates at any size (the bound's choice %v: %d, %.3fx); %s",
		least, bound, tiles[pick], atBound[pick], bound, worst[pick], len(tiles), tiles[0], atBound[0], worst[0], op.Reason)
	op.Tile = tiles[pick]
	op.Grid = tileGrid(op.Kind, op.Problem, op.Tile)
	return nil
}
