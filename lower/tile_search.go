package lower

import (
	"fmt"
	"runtime"
	"slices"
	"sort"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// matmulTiling is how a matmul is cut into cube work: output tiles of tm x tn, K
// consumed in base blocks of tk (one L0A / L0B operand pair per block), stepK base
// blocks per load into L1 (a stage), and K chunks of kc per grid point. kc < k splits
// K over blocks: each computes a partial product into an fp32 workspace and a vector
// reduction adds them (split_k.go). Its tile list is [tm, tn, tk, stepK, kc].
type matmulTiling struct {
	tm, tn, tk, stepK, kc int
}

func (t matmulTiling) tile() []int { return []int{t.tm, t.tn, t.tk, t.stepK, t.kc} }

func matmulTilingOf(tile []int) matmulTiling {
	return matmulTiling{tm: tile[0], tn: tile[1], tk: tile[2], stepK: tile[3], kc: tile[4]}
}

// stageK is the K depth of one L1 load.
func (t matmulTiling) stageK() int { return t.tk * t.stepK }

// matmulProblem is what the tiling of a matmul depends on.
type matmulProblem struct {
	dt                 dtype.DType // operand dtype
	out                dtype.DType // result dtype
	batch, m, n, k     int
	aMatrices, bMatrix int  // distinct A and B matrices (batch broadcasting), for the cold traffic
	transA, transB     bool // operands read through transposed views
	// wholeK forbids splitting K: an epilogue applies to the whole sum, so a fused
	// matmul keeps each output tile's K on one core.
	wholeK bool
}

func kChunks(k, kc int) int { return max(1, ceilDiv(k, kc)) }

// accType is the accumulator dtype of L0C: fp32, int32 for int8 operands.
func accType(dt dtype.DType) dtype.DType {
	if dt == dtype.Int8 {
		return dtype.Int32
	}
	return dtype.Float32
}

// kAlign is the granularity of K and nAlign of N: L0A / L0B / L0C tiles are whole
// 16x16 fractals and every L1 row (of A's stage, K long; of B's, N long) whole 32-byte
// blocks, so int8 goes by 32. M goes by 16 (cubeAlign).
func kAlign(dt dtype.DType) int { return max(cubeAlign, 32/dt.Size()) }

func nAlign(dt dtype.DType) int { return kAlign(dt) }

// fits reports why t does not fit chip's buffers for operands of dt ("" if it does):
// two L0A and two L0B operands (double-buffered), one accumulator in L0C, and two L1
// stages of A and B (double-buffered), all on fractal boundaries.
func (t matmulTiling) fits(chip *device.Chip, dt dtype.DType) string {
	if t.fitsChip(chip, dt) {
		return ""
	}
	size, ka, na := dt.Size(), kAlign(dt), nAlign(dt)
	switch {
	case t.tm <= 0 || t.tn <= 0 || t.tk <= 0 || t.stepK <= 0 || t.kc <= 0:
		return fmt.Sprintf("tile %v has a non-positive number", t.tile())
	case t.tm%cubeAlign != 0 || t.tn%na != 0 || t.tk%ka != 0:
		return fmt.Sprintf("tile %v is not on fractal boundaries (tm a multiple of %d, tn of %d, tk of %d)", t.tile(), cubeAlign, na, ka)
	case 2*t.tm*t.tk*size > chip.Capacity(isa.Left):
		return fmt.Sprintf("two %dx%d %s operands exceed L0A (%d bytes)", t.tm, t.tk, dt, chip.Capacity(isa.Left))
	case 2*t.tk*t.tn*size > chip.Capacity(isa.Right):
		return fmt.Sprintf("two %dx%d %s operands exceed L0B (%d bytes)", t.tk, t.tn, dt, chip.Capacity(isa.Right))
	case t.tm*t.tn*accType(dt).Size() > chip.Capacity(isa.Acc):
		return fmt.Sprintf("a %dx%d accumulator exceeds L0C (%d bytes)", t.tm, t.tn, chip.Capacity(isa.Acc))
	case 2*(t.tm+t.tn)*t.stageK()*size > chip.Capacity(isa.Mat):
		return fmt.Sprintf("two stages of %d K exceed L1 (%d bytes)", t.stageK(), chip.Capacity(isa.Mat))
	}
	return ""
}

// fitsChip is fits without the message, for the search's many candidates.
func (t matmulTiling) fitsChip(chip *device.Chip, dt dtype.DType) bool {
	size, ka, na := dt.Size(), kAlign(dt), nAlign(dt)
	return t.tm > 0 && t.tn > 0 && t.tk > 0 && t.stepK > 0 && t.kc > 0 &&
		t.tm%cubeAlign == 0 && t.tn%na == 0 && t.tk%ka == 0 &&
		2*t.tm*t.tk*size <= chip.Capacity(isa.Left) && 2*t.tk*t.tn*size <= chip.Capacity(isa.Right) &&
		t.tm*t.tn*accType(dt).Size() <= chip.Capacity(isa.Acc) && 2*(t.tm+t.tn)*t.stageK()*size <= chip.Capacity(isa.Mat)
}

// chooseMatmulTiling gives the tiling the tile pass starts a matmul from: the user's
// when given (checked against the chip), else the fixed rule of matmulTile. The
// search-tiles pass then replaces the fixed rule's by the best the device's timing
// model finds.
func chooseMatmulTiling(chip *device.Chip, p matmulProblem, user *matmulTiling) (matmulTiling, string, error) {
	if user == nil {
		return matmulTile(chip, p.dt, p.m, p.n, p.k)
	}
	t := *user
	if t.kc == 0 {
		t.kc = max(p.k, 1)
	}
	if why := t.fits(chip, p.dt); why != "" {
		return t, "", fmt.Errorf("matmul tile %v does not fit chip %s: %s", t.tile(), chip.Name, why)
	}
	return t, fmt.Sprintf("given; fits chip %s", chip.Name), nil
}

// runSearchTiles is the search-tiles pass: every matmul, attention, row and convolution kernel whose
// tile the program did not give gets the tiling the device's timing model times
// fastest among the candidates that fit (tiling_estimate.go says how they are timed).
// Without the pass (O0, disable_passes, Options.FixedTiles) the tile pass's fixed
// rules stand. A matmul whose best tiling splits K gains the reduction task after it.
func runSearchTiles(c *compilation) error {
	est := newEstimator(c.chip)
	est.wholeK = c.opts.Deterministic // split K changes the bits (see splitKSum)
	tg := c.tile
	ops := make([]*TileOp, 0, len(tg.Ops))
	for _, op := range tg.Ops {
		ops = append(ops, op)
		given, err := userTileShape(op)
		if err != nil || given != nil {
			continue
		}
		var cands func(*estimator, *TileGraph, *TileOp) []candidate
		switch op.Kind {
		case TileMatmul, TileMatmulEpilogue:
			cands = matmulCandidates
		case TileAttention:
			cands = attentionCandidates
		case TileRows:
			cands = rowsCandidates
		case TileConv, TileConvEpilogue:
			cands = convCandidates
		default:
			continue
		}
		ch, err := searchTiling(est, tg, op, cands)
		if err != nil {
			return core.Errorf(core.CompileError, "%s: tile search: %v", op.Op, err).WithLoc(op.Loc)
		}
		op.Tile, op.Reason = ch.tile, ch.reason
		op.Grid = tileGrid(op.Kind, op.Problem, op.Tile)
		sum, err := splitKSum(tg, op, c.chip)
		if err != nil {
			return core.Errorf(core.CompileError, "%s: %v", op.Op, err).WithLoc(op.Loc)
		}
		if sum != nil {
			ops = append(ops, sum)
		}
	}
	tg.Ops = ops
	return nil
}

// candidate is one tiling a search considers: its tile, the lower bound the device
// gives for it (device.Chip.Bound) and what it is, for the reason.
type candidate struct {
	tile  []int
	bound int64
	// instrs is the instructions of the busiest block, which orders candidates of equal
	// bound: fewer pay fewer fixed costs.
	instrs int64
	// shape is what sets the blocks and waves (matmul: tm, tn and kc; attention: the
	// rows per tile; rows: the rows per tile). The first candidates timed differ in it.
	shape [3]int
}

// maxTimed is the most candidates a search simulates: assumed, so that a search
// costs tens of milliseconds at most.
const maxTimed = 3

// tileChoice is what a search picked and why.
type tileChoice struct {
	tile   []int
	reason string
	// weighed are the tilings the search timed or ruled out by their bounds.
	weighed [][]int
}

// searches caches searches by chip and op signature (everything but the tiling), so
// that the repeated layers of a model, another graph with the same shapes or a
// recompilation do not search again.
var searches = newCache[tileChoice](4096)

// searchTiling times up to maxTimed candidates in the order rankCandidates gives,
// skipping those whose bound is no lower than the best time found (they cannot win);
// the fastest is the choice.
func searchTiling(est *estimator, tg *TileGraph, op *TileOp, candidates func(*estimator, *TileGraph, *TileOp) []candidate) (tileChoice, error) {
	probe := *op
	probe.Tile, probe.Grid = nil, nil
	key := fmt.Sprintf("%s%s|wholeK=%v", chipKey(est.chip), estimateKey(tg, &probe), est.wholeK)
	if c, ok := searches.get(key); ok {
		return c, nil
	}
	cands := candidates(est, tg, op)
	if len(cands) == 0 {
		return tileChoice{}, fmt.Errorf("no %s tiling fits chip %s", op.Kind, est.chip.Name)
	}
	cands = rankCandidates(cands)
	type timed struct {
		tile   []int
		cycles int64
	}
	var best, second *timed
	var weighed [][]int // timed, or bounded out
	n, i := 0, 0
	// Rounds of as many candidates as there are threads, timed in parallel; a candidate
	// whose bound is no lower than the best time found cannot win and is not timed.
	for round := max(1, runtime.GOMAXPROCS(0)); n < maxTimed && i < len(cands); {
		var batch []candidate
		for ; i < len(cands) && len(batch) < min(round, maxTimed-n); i++ {
			if best != nil && cands[i].bound >= best.cycles {
				weighed = append(weighed, cands[i].tile)
				continue
			}
			batch = append(batch, cands[i])
		}
		cycles := make([]int64, len(batch))
		errs := make([]error, len(batch))
		inParallel(len(batch), func(i int) bool {
			cycles[i], errs[i] = candidateCycles(est, tg, op, batch[i].tile)
			return errs[i] == nil
		})
		for i, cand := range batch {
			if errs[i] != nil {
				return tileChoice{}, errs[i]
			}
			weighed = append(weighed, cand.tile)
			t := &timed{cand.tile, cycles[i]}
			switch {
			case best == nil || t.cycles < best.cycles:
				best, second = t, best
			case second == nil || t.cycles < second.cycles:
				second = t
			}
		}
		n += len(batch)
	}
	for ; i < len(cands); i++ {
		if cands[i].bound >= best.cycles {
			weighed = append(weighed, cands[i].tile)
		}
	}
	how := fmt.Sprintf("%d timed, %d bounded out", n, len(weighed)-n)
	if untimed := len(cands) - len(weighed); untimed > 0 {
		how += fmt.Sprintf(", %d of higher bounds untimed", untimed)
	}
	reason := fmt.Sprintf("fastest of %d %s tilings by the timing model of %s (%s): %v est %d cycles", len(cands), tilingName(op.Kind), est.chip.Name, how, best.tile, best.cycles)
	if second != nil {
		reason += fmt.Sprintf("; runner-up %v est %d", second.tile, second.cycles)
	}
	c := tileChoice{tile: best.tile, reason: reason, weighed: weighed}
	searches.put(key, c)
	return c, nil
}

// rankCandidates orders candidates by bound, then instructions, then the larger tile
// first, and puts first the best of each shape, so that the few a search times spread over the ways of dealing
// the work to the cores rather than over variants of one.
func rankCandidates(cands []candidate) []candidate {
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		switch {
		case a.bound != b.bound:
			return a.bound < b.bound
		case a.instrs != b.instrs:
			return a.instrs < b.instrs
		case a.shape[0]*max(a.shape[1], 1) != b.shape[0]*max(b.shape[1], 1):
			return a.shape[0]*max(a.shape[1], 1) > b.shape[0]*max(b.shape[1], 1) // fewer, larger tiles
		}
		return a.shape[0] > b.shape[0]
	})
	seen := map[[3]int]bool{}
	var first, rest []candidate
	for _, c := range cands {
		if seen[c.shape] {
			rest = append(rest, c)
			continue
		}
		seen[c.shape] = true
		first = append(first, c)
	}
	return append(first, rest...)
}

// tilingName names the tile list of a kind, for reasons.
func tilingName(k TileKind) string {
	switch k {
	case TileMatmul, TileMatmulEpilogue:
		return "[tm,tn,tk,stepk,kc]"
	case TileAttention:
		return "[br,hr,bc,copies]"
	case TileConv, TileConvEpilogue:
		return "[rb,tn,gs,ra,sk]"
	}
	return "[rows,cols,slots]"
}

// candidateCycles is the device's estimate of op with the given tile: its task, and a
// split K's reduction task after it (timed on a copy of the tile graph that holds the
// workspace).
func candidateCycles(est *estimator, tg *TileGraph, op *TileOp, tile []int) (int64, error) {
	probe := *op
	probe.Tile = tile
	probe.Grid = tileGrid(op.Kind, op.Problem, tile)
	scratch := tg
	var sum *TileOp
	if probe.Kind == TileMatmul && probe.Grid[3] > 1 {
		scratch = &TileGraph{Tensors: slices.Clone(tg.Tensors)}
		var err error
		if sum, err = splitKSum(scratch, &probe, est.chip); err != nil {
			return 0, err
		}
	}
	cycles, err := est.cycles(scratch, &probe)
	if err != nil || sum == nil {
		return cycles, err
	}
	add, err := est.cycles(scratch, sum)
	return cycles + add, err
}

// matmulCandidates lists every tiling of a matmul that fits the chip: tm and tn on
// fractal rows up to the output (and 512; N in 32s for int8, whose L1 rows must be
// 32-byte blocks), tk in powers of two of the K fractal up to 256, one to eight base
// blocks per stage, and, when the output has fewer tiles than the chip has cube cores,
// K chunks that give every core work (unless K must stay whole). A fused matmul's output tile is cut to what its
// epilogue's vector tiles allow. Each carries the device's bound for it.
func matmulCandidates(est *estimator, tg *TileGraph, op *TileOp) []candidate {
	chip := est.chip
	p := matmulProblemOf(op, tg.Tensors)
	p.wholeK = p.wholeK || est.wholeK
	ka, na := kAlign(p.dt), nAlign(p.dt)
	kMax := roundUp(max(p.k, 1), ka)
	accBytes := accType(p.dt).Size()
	cores := chip.Cores(isa.Cube)
	seen := map[matmulTiling]bool{}
	var out []candidate
	cut := map[[2]int][2]int{} // an epilogue's cut of tm x tn ({0, 0}: none fits)
	consider := func(t matmulTiling) {
		if op.Kind == TileMatmulEpilogue {
			c, ok := cut[[2]int{t.tm, t.tn}]
			if !ok {
				probe := *op
				probe.Tile = t.tile()
				if _, err := fitEpilogue(chip, &probe, tg.Tensors); err == nil {
					c = [2]int{probe.Tile[0], probe.Tile[1]}
				}
				cut[[2]int{t.tm, t.tn}] = c
			}
			t.tm, t.tn = c[0], c[1]
		}
		if t.tm == 0 || seen[t] || !t.fitsChip(chip, p.dt) {
			return
		}
		seen[t] = true
		w := matmulWork(chip, p, t)
		out = append(out, candidate{tile: t.tile(), bound: matmulBound(chip, p, t), instrs: w.Instrs, shape: [3]int{t.tm, t.tn, t.kc}})
	}
	for tm := cubeAlign; tm <= min(roundUp(max(p.m, 1), cubeAlign), 512); tm += cubeAlign {
		for tn := na; tn <= min(roundUp(max(p.n, 1), na), 512) && tm*tn*accBytes <= chip.Capacity(isa.Acc); tn += na {
			outTiles := p.batch * ceilDiv(p.m, tm) * ceilDiv(p.n, tn)
			for tk := ka; tk <= min(kMax, 256); tk *= 2 {
				for stepK := 1; stepK <= 8 && tk*(stepK-1) < kMax; stepK++ {
					t := matmulTiling{tm: tm, tn: tn, tk: tk, stepK: stepK, kc: max(p.k, 1)}
					consider(t)
					for _, kc := range splitKChunks(p, t.stageK(), outTiles, cores) {
						t.kc = kc
						consider(t)
					}
				}
			}
		}
	}
	return out
}

// matmulBound is the device's bound for tiling t: that of the matmul's task and, with K
// split, that of the vector task summing the partial products (one pass over them).
func matmulBound(chip *device.Chip, p matmulProblem, t matmulTiling) int64 {
	bound := chip.Bound(matmulWork(chip, p, t))
	if gk := kChunks(p.k, t.kc); gk > 1 {
		partials := int64(p.batch*p.m*p.n*gk) * int64(accType(p.dt).Size())
		result := int64(p.batch*p.m*p.n) * int64(p.out.Size())
		v := int64(chip.VectorCores)
		bound += chip.Bound(device.Work{LoadBytes: partials / v, StoreBytes: result / v, HBMBytes: partials + result})
	}
	return bound
}

// matmulWork counts what the busiest cube core does under tiling t (the kernel of
// codegen_matmul.go: per tile, two loads per stage, two extracts and a matmul per base
// block, one store), and what the task moves through HBM at least.
func matmulWork(chip *device.Chip, p matmulProblem, t matmulTiling) device.Work {
	size := int64(p.dt.Size())
	gk := kChunks(p.k, t.kc)
	tiles := p.batch * ceilDiv(p.m, t.tm) * ceilDiv(p.n, t.tn) * gk
	if tiles == 0 {
		return device.Work{DType: p.dt}
	}
	per := int64(ceilDiv(tiles, min(tiles, chip.Cores(isa.Cube))))
	kc := min(t.kc, max(p.k, 1))
	blocks, stages := int64(ceilDiv(kc, t.tk)), int64(ceilDiv(kc, t.stageK()))
	outSize := int64(p.out.Size())
	if gk > 1 {
		outSize = int64(accType(p.dt).Size())
	}
	written := int64(p.batch*p.m*p.n) * outSize * int64(gk)
	w := device.Work{
		DType:      p.dt,
		MACs:       per * int64(t.tm*t.tn) * blocks * int64(t.tk),
		LoadBytes:  per * int64(min(t.tm, p.m)+min(t.tn, p.n)) * int64(kc) * size,
		StoreBytes: per * int64(t.tm*t.tn) * outSize,
		Starts:     map[isa.Pipe]int64{isa.PipeM: per * blocks, isa.PipeMTE1: 2 * per * blocks, isa.PipeFIX: per},
		Instrs:     per * (2*stages + 3*blocks + 1),
		HBMBytes:   (int64(p.aMatrices*p.m*p.k)+int64(p.bMatrix*p.k*p.n))*size + written,
	}
	return w
}

// splitKChunks lists the K chunks (multiples of the stage depth) worth trying when
// outTiles output tiles leave cube cores idle: 2 up to cores / outTiles chunks.
func splitKChunks(p matmulProblem, stageK, outTiles, cores int) []int {
	if p.wholeK {
		return nil
	}
	var kcs []int
	last, k := 0, p.k
	for parts := 2; parts*outTiles <= cores && parts*stageK <= k; parts++ {
		kc := roundUp(ceilDiv(k, parts), stageK)
		if g := kChunks(k, kc); g > 1 && g != last {
			kcs = append(kcs, kc)
			last = g
		}
	}
	return kcs
}
