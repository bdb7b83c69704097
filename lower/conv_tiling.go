package lower

import (
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// convTiling is how a cube convolution (codegen_conv.go) is cut into cube work, the
// implicit GEMM's tiles: M over the output pixels, K over the channel groups with
// their kernel taps, N over the output channels. A tile is ra sub-blocks of rb output
// rows of one image (rb*OW pixels padded to 16: one L0A operand each) by tn output
// channels (one L0B operand). K advances in steps of gs channel groups (a step's K is
// gs*KH*KW*C0, what one TIMG2COL expands; gs > 1 only for a 1x1 kernel); a step's L0B
// operand serves every sub-block of the tile, so the weight's L1 -> L0B move is paid
// once per ra sub-blocks. The weight comes into L1 a step at a time, into a ring of sk
// steps' rows (each load sk-1 steps ahead of its use, into the slot of the step before:
// a load per step keeps the small loads of the input bands from queueing behind a
// large one at the core's port); sk
// of every step (or more) keeps the tile's weight columns resident in L1, loaded once
// per channel tile of a block. Its tile list is [rb, tn, gs, ra, sk].
type convTiling struct{ rb, tn, gs, ra, sk int }

func (t convTiling) tile() []int { return []int{t.rb, t.tn, t.gs, t.ra, t.sk} }

func convTilingOf(tile []int) convTiling {
	return convTiling{rb: tile[0], tn: tile[1], gs: tile[2], ra: tile[3], sk: tile[4]}
}

// steps is the K steps of a tile: the channel groups gs at a time.
func (t convTiling) steps(p convProblem) int { return ceilDiv(p.c1, t.gs) }

// ks is the K of one step.
func (t convTiling) ks(p convProblem) int { return t.gs * p.kc() }

// pix is the L0A rows of a sub-block: its pixels on fractal rows.
func (t convTiling) pix(p convProblem) int { return roundUp(t.rb*p.ow, cubeAlign) }

// resident reports whether the tile's weight columns stay in L1 (one stage of every
// step) rather than streaming in two stages.
func (t convTiling) resident(p convProblem) bool { return t.sk >= t.steps(p) }

// accSets is the accumulator sets an L0C of l0c bytes holds: two let a tile's stores
// overlap the next tile's first matmuls.
func (t convTiling) accSets(l0c int, p convProblem) int {
	if 2*t.ra*t.pix(p)*t.tn*4 <= l0c {
		return 2
	}
	return 1
}

// l1Bytes is the L1 the tile takes: the weight (resident, or a ring of sk steps), two
// input bands per sub-block (double-buffered by step) and the bias row.
func (t convTiling) l1Bytes(p convProblem, size int) int {
	w := t.sk * t.ks(p) * t.tn * size
	if t.resident(p) {
		w = t.steps(p) * t.ks(p) * t.tn * size
	}
	return w + 2*t.ra*p.inRows(t.rb)*p.w*t.gs*core.ConvC0*size + t.tn*4
}

// fits reports why t does not fit chip for operands of dt and an epilogue epi ("" if
// it does): two L0A and two L0B operands, the tile's accumulators in L0C, the bias
// table, L1 (l1Bytes) and, with an epilogue, a sub-block's share of a vector core's UB.
func (t convTiling) fits(chip *device.Chip, p convProblem, dt dtype.DType, epi convEpilogue) string {
	size := dt.Size()
	switch {
	case t.rb < 1 || t.tn < cubeAlign || t.gs < 1 || t.ra < 1 || t.sk < min(2, t.steps(p)):
		return fmt.Sprintf("tile %v has a part below its least (rb, gs, ra 1; sk 2, or every step; tn 16)", t.tile())
	case t.tn%cubeAlign != 0 || epi.colAlign > 0 && t.tn%epi.colAlign != 0:
		return fmt.Sprintf("%d output channels are not whole fractals (or the epilogue's %d-column steps)", t.tn, max(cubeAlign, epi.colAlign))
	case p.c1%t.gs != 0 || t.gs > 1 && p.kh*p.kw != 1:
		return fmt.Sprintf("%d channel groups a step do not divide the %d groups of a 1x1 kernel", t.gs, p.c1)
	case 2*t.pix(p)*t.ks(p)*size > chip.Capacity(isa.Left):
		return fmt.Sprintf("two operands of %d pixels by K %d exceed L0A (%d bytes)", t.pix(p), t.ks(p), chip.Capacity(isa.Left))
	case 2*t.ks(p)*t.tn*size > chip.Capacity(isa.Right):
		return fmt.Sprintf("two operands of K %d by %d channels exceed L0B (%d bytes)", t.ks(p), t.tn, chip.Capacity(isa.Right))
	case t.ra*t.pix(p)*t.tn*4 > chip.Capacity(isa.Acc):
		return fmt.Sprintf("%d accumulators of %dx%d exceed L0C (%d bytes)", t.ra, t.pix(p), t.tn, chip.Capacity(isa.Acc))
	case t.tn*4 > chip.Capacity(isa.Bias):
		return fmt.Sprintf("%d channels of bias exceed the bias table (%d bytes)", t.tn, chip.Capacity(isa.Bias))
	case t.l1Bytes(p, size) > chip.Capacity(isa.Mat):
		return fmt.Sprintf("the weight's stages and the input bands take %d bytes of L1 (%d)", t.l1Bytes(p, size), chip.Capacity(isa.Mat))
	case t.pix(p)*t.tn*epi.bytes > chip.Capacity(isa.Vec):
		return fmt.Sprintf("the epilogue's %d bytes an element of %dx%d exceed a vector core's UB (%d bytes)", epi.bytes, t.pix(p), t.tn, chip.Capacity(isa.Vec))
	}
	return ""
}

// convStepGroups are the channel groups a step may take: 1, and for a 1x1 kernel
// every divisor of C1 up to a K of maxConvStepK (its patches are its channels in
// order, so gs groups are one K of gs*16).
func convStepGroups(p convProblem) []int {
	gss := []int{1}
	if p.kh*p.kw == 1 {
		for d := 2; d <= p.c1 && d*core.ConvC0 <= maxConvStepK; d++ {
			if p.c1%d == 0 {
				gss = append(gss, d)
			}
		}
	}
	return gss
}

// maxConvSubBlocks bounds ra: a step's L0B operand serves at most four sub-blocks
// (assumed: beyond four the accumulators of 16-pixel rows no longer fit L0C).
const maxConvSubBlocks = 4

// convCandidates lists every tiling of a cube convolution that fits the chip: rb up to
// the pixels an L0A operand holds, ra up to maxConvSubBlocks and the image's rows, tn in
// fractal steps evened over the channel tiles, the step groups of convStepGroups, and
// weight rings of 2, 3 ... steps, or every step (resident). Each carries the device's
// bound for it.
func convCandidates(est *estimator, tg *TileGraph, op *TileOp) []candidate {
	chip := est.chip
	p := convProblemOf(op.Problem)
	dt := tg.Tensors[op.Inputs[0]].Type.DType
	epi := convEpilogueFor(op, tg.Tensors)
	outSize := tg.Tensors[op.Output].Type.DType.Size()
	var out []candidate
	seen := map[convTiling]bool{}
	for _, t := range convTilings(chip, p, dt, epi) {
		if seen[t] {
			continue
		}
		seen[t] = true
		w := convWork(chip, p, t, dt, outSize)
		out = append(out, candidate{tile: t.tile(), bound: chip.Bound(w), instrs: w.Instrs, shape: [3]int{t.ra * t.pix(p), t.tn, 0}})
	}
	return out
}

// convTilings lists the tilings of convCandidates (without bounds).
func convTilings(chip *device.Chip, p convProblem, dt dtype.DType, epi convEpilogue) []convTiling {
	var out []convTiling
	step := max(cubeAlign, epi.colAlign)
	for _, gs := range convStepGroups(p) {
		steps := ceilDiv(p.c1, gs)
		var sks []int
		for sk := 2; sk < steps; sk++ {
			sks = append(sks, sk)
		}
		sks = append(sks, steps)
		for rb := 1; rb <= p.oh; rb++ {
			if roundUp(rb*p.ow, cubeAlign) > maxConvPixels {
				break
			}
			for ra := 1; ra <= maxConvSubBlocks && (ra-1)*rb < p.oh; ra++ {
				for tn := step; tn <= roundUp(p.o, step); tn += step {
					even := roundUp(ceilDiv(p.o, ceilDiv(p.o, tn)), step)
					for _, sk := range sks {
						t := convTiling{rb: rb, tn: even, gs: gs, ra: ra, sk: sk}
						if t.fits(chip, p, dt, epi) == "" {
							out = append(out, t)
						}
					}
				}
			}
		}
	}
	return out
}

// convWork counts what the busiest cube core does under tiling t (the kernel of
// codegen_conv.go: per tile, per step a weight load and an L0B extract, a band load,
// a TIMG2COL and a matmul per sub-block, a store per sub-block), and what the task
// moves through HBM at least.
func convWork(chip *device.Chip, p convProblem, t convTiling, dt dtype.DType, outSize int) device.Work {
	size := int64(dt.Size())
	grid := convGrid(p, t.tile())
	tiles := grid[0] * grid[1] * grid[2]
	per := int64(ceilDiv(tiles, min(tiles, chip.Cores(isa.Cube))))
	steps, ks, pix := int64(t.steps(p)), int64(t.ks(p)), int64(t.pix(p))
	ra, tn := int64(t.ra), int64(t.tn)
	band := int64(p.inRows(t.rb)*p.w*t.gs*core.ConvC0) * size
	columns := steps * ks * tn * size // a tile's weight columns
	weight := per * columns           // streamed: every tile loads them
	if t.resident(p) {                // loaded once per channel tile a block meets
		weight = int64(ceilDiv(int(per), max(1, tiles/grid[0]))) * columns
	}
	return device.Work{
		DType:      dt,
		MACs:       per * ra * pix * tn * ks * steps,
		LoadBytes:  weight + per*steps*ra*band,
		StoreBytes: per * ra * pix * tn * 4,
		Starts:     map[isa.Pipe]int64{isa.PipeM: per * steps * ra, isa.PipeMTE1: per * steps * (ra + 1), isa.PipeFIX: per * ra},
		// TIMG2COL writes each sub-block's L0A operand, TEXTRACT a step's L0B operand.
		L0ABytes:      per * steps * ra * pix * ks * size,
		L0BBytes:      per * steps * ks * tn * size,
		L0FractalRows: per * steps * (ra*ceilDiv64(pix, 16) + ceilDiv64(ks, 16)),
		Instrs:        per * (steps*(2+3*ra) + ra),
		HBMBytes:      int64(p.n*p.c1*core.ConvC0*p.h*p.w)*size + int64(p.c1*p.kc()*p.o)*size + int64(p.n*p.oh*p.ow*p.o*outSize),
	}
}

// convTile gives the tiling the tile pass starts a convolution from (the search-tiles
// pass then times the candidates): among the tilings that fit, the one whose step
// does the most MACs per element the cube's operands move into L0 (ra*pix*tn over
// ra*pix + tn, the pixels' rows and the channels' columns of a step's operands),
// then the deeper weight ring, then the larger tile. It fails when not even one
// output row fits.
func convTile(chip *device.Chip, p convProblem, dt dtype.DType, epi convEpilogue) ([]int, string, error) {
	var best *convTiling
	bestScore := 0.0
	for _, t := range convTilings(chip, p, dt, epi) {
		useful := float64(min(t.ra*t.rb, p.oh)*p.ow) * float64(min(t.tn, p.o))
		score := useful / float64(t.ra*t.pix(p)+t.tn)
		if best == nil || score > bestScore || score == bestScore && (t.sk > best.sk || t.sk == best.sk && t.ra*t.tn > best.ra*best.tn) {
			t := t
			best, bestScore = &t, score
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("no tile of a convolution of %d channel groups, %d-pixel output rows and %d output channels fits chip %s (two operands of an output row by K %d in L0A, of K %d by 16 channels in L0B, their accumulator in L0C, two input bands and two weight stages in L1)",
			p.c1, p.ow, p.o, chip.Name, p.kc(), p.kc())
	}
	t := *best
	how := "streamed in stages of"
	if t.resident(p) {
		how = "resident in L1,"
	}
	reason := fmt.Sprintf("fixed rule: %d sub-blocks of %d output rows (%d pixels, K %d a step), %d of %d output channels, weight %s %d steps: the most MACs per element moved into L0",
		t.ra, t.rb, t.pix(p), t.ks(p), t.tn, p.o, how, min(t.sk, t.steps(p)))
	if epi.bytes > 0 {
		reason += fmt.Sprintf("; the epilogue's %d bytes an element fit a vector core's UB", epi.bytes)
	}
	return t.tile(), reason, nil
}

// maxConvStepK bounds the K of one step of a 1x1 convolution: the hand-tuned GEMM's
// base block K (baseK, docs/sources.md "gemm-table").
const maxConvStepK = 128

// maxConvPixels bounds the pixels of a sub-block: 128 rows of the accumulator are as
// many as the hand-tuned GEMM's base block has (baseM, docs/sources.md "gemm-table").
const maxConvPixels = 128

func ceilDiv64(a, b int64) int64 { return (a + b - 1) / b }

func convGrid(p convProblem, tile []int) []int {
	return []int{ceilDiv(p.o, tile[1]), p.n, ceilDiv(p.oh, tile[0]*tile[3])}
}
