package lower

import (
	"fmt"
	"sync"

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

// matmulEstimate is the timing model's prediction for a tiling, in cycles.
type matmulEstimate struct {
	total      float64 // the whole op: launch, the busiest core, the split-K reduction
	stage      float64 // one L1 stage of a full tile in steady state
	tilesPer   int     // output tiles (K chunks included) of the busiest core
	bound      string  // the pipe that bounds a stage
	cubeCycles float64 // cube cycles of the whole op, summed over cores
}

// estimateMatmul predicts the time of the cube kernel the code generator emits for t
// from the chip's rates, the same costs the simulator charges (docs/device.md,
// "Timing model"): per stage, the cube, the L1 -> L0 extracts and the two loads run
// on separate pipes, overlapped by double buffering, so a stage takes the slowest of
// them; a tile adds the store of its accumulator, which the next tile's first matmul
// waits for; the first stage of a core is not overlapped; the task pays its launch.
// Loads on a chip with an L2 stream at the core's L2 port and the cold misses are
// bounded by the shared HBM rate. A split K adds the reduction task. Edge tiles are
// charged as full ones, which the cube does (their accumulator is the full tile).
func estimateMatmul(chip *device.Chip, p matmulProblem, t matmulTiling) matmulEstimate {
	size, acc := float64(p.dt.Size()), float64(accType(p.dt).Size())
	gm, gn, gk := ceilDiv(p.m, t.tm), ceilDiv(p.n, t.tn), kChunks(p.k, t.kc)
	tiles := p.batch * gm * gn * gk
	cores := chip.Cores(isa.Cube)
	if tiles == 0 {
		return matmulEstimate{bound: "no"} // an empty result: no task runs
	}
	perCore := ceilDiv(tiles, min(tiles, cores))

	startup := func(pipe isa.Pipe) float64 { return float64(chip.PipeStartup[pipe]) }
	matmul := startup(isa.PipeM) + float64(ceilDiv(t.tm, chip.CubeM)*ceilDiv(t.tk, chip.CubeKStep(p.dt))*ceilDiv(t.tn, chip.CubeN))
	extract := 2*startup(isa.PipeMTE1) + float64(t.tm*t.tk)*size/float64(chip.L1ToL0ABytesPerCycle) +
		float64(t.tk*t.tn)*size/float64(chip.L1ToL0BBytesPerCycle)
	kc := min(t.kc, max(p.k, 1))
	blocks := max(1, ceilDiv(kc, t.tk))
	stages := max(1, ceilDiv(kc, t.stageK()))
	rows := float64(min(t.tm, p.m) + min(t.tn, p.n)) // of A and B a tile loads per unit of K
	tileBytes := rows * float64(kc) * size
	latency, perByte := startup(isa.PipeMTE2), 1/float64(chip.GMReadBytesPerCycle)
	coldBytes := 0.0
	if chip.L2Bytes > 0 {
		// The first read of each line misses and streams at the core's share of HBM
		// (split among the cores missing at the time, about the miss ratio of them);
		// every later read hits at the core's L2 port. A miss costs the bytes the
		// window wanted from the line, so windows whose rows are narrower than a line
		// miss on that part of it only and leave the rest to hit for the neighbours.
		line := float64(chip.L2LineBytes)
		rowA, rowB := min(t.stageK(), kc), min(t.tn, p.n) // the contiguous axis of each window
		if p.transA {
			rowA = min(t.tm, p.m)
		}
		if p.transB {
			rowB = min(t.stageK(), kc)
		}
		coldBytes = size * (float64(p.aMatrices*p.m*p.k)*min(1, float64(rowA)*size/line) + float64(p.bMatrix*p.k*p.n)*min(1, float64(rowB)*size/line))
		miss := min(1, coldBytes/(float64(tiles)*tileBytes))
		port := float64(chip.L2ReadBytesPerCycle)
		share := min(port, float64(chip.HBMBytesPerCycle)/max(1, miss*float64(min(tiles, cores))))
		latency = float64(chip.L2HitCycles)*(1-miss) + float64(chip.L2MissCycles)*miss
		perByte = (1-miss)/port + miss/share
	}
	// Per tile, each pipe's work: every stage pays two load latencies; issue is two
	// loads per stage and three instructions per base block, each with about one flag.
	pipes := []struct {
		name   string
		cycles float64
	}{
		{"cube", float64(blocks) * matmul},
		{"load", float64(stages)*2*latency + tileBytes*perByte},
		{"extract", float64(blocks) * extract},
		{"issue", float64(chip.IssueCycles) * 2 * float64(2*stages+3*blocks)},
	}
	e := matmulEstimate{tilesPer: perCore}
	busiest := 0.0
	for _, pp := range pipes {
		if pp.cycles > busiest {
			busiest, e.bound = pp.cycles, pp.name
		}
	}
	e.stage = busiest / float64(stages)
	store := startup(isa.PipeFIX) + float64(t.tm*t.tn)*acc/float64(chip.FixpipeBytesPerCycle)
	fill := 2*latency + rows*float64(min(t.stageK(), kc))*size*perByte + extract // the first stage, not overlapped
	core := fill + float64(perCore)*(busiest+store)
	if chip.L2Bytes > 0 {
		// All of it crosses HBM: the cold reads and, the L2 being write-through, the
		// stored tiles (fp32 partials when K is split).
		written := float64(p.batch*p.m*p.n) * float64(p.out.Size())
		if gk > 1 {
			written = float64(p.batch*p.m*p.n*gk) * acc
		}
		core = max(core, (coldBytes+written)/float64(chip.HBMBytesPerCycle))
	}
	e.total = float64(chip.LaunchCycles) + core
	e.cubeCycles = float64(tiles*blocks) * matmul
	if gk > 1 {
		e.total += estimateSplitKSum(chip, p, gk)
	}
	return e
}

// estimateSplitKSum is the time of the vector task that adds gk fp32 partial products
// and casts the sum: a launch, then the vector cores stream the partials in and the
// result out. The partials come from HBM (a task starts with a cold L2), shared by
// all vector cores.
func estimateSplitKSum(chip *device.Chip, p matmulProblem, gk int) float64 {
	elems := float64(p.batch * p.m * p.n)
	rate := float64(chip.GMReadBytesPerCycle)
	if chip.L2Bytes > 0 {
		rate = min(float64(chip.L2ReadBytesPerCycle), float64(chip.HBMBytesPerCycle)/float64(chip.VectorCores))
	}
	outRate := float64(chip.UBToGMBytesPerCycle)
	if chip.L2Bytes > 0 { // the result is written through to HBM, shared by all vector cores
		outRate = min(outRate, float64(chip.HBMBytesPerCycle)/float64(chip.VectorCores))
	}
	in := elems * 4 * float64(gk) / rate
	out := elems * float64(p.out.Size()) / outRate
	return float64(chip.LaunchCycles) + (in+out)/float64(chip.VectorCores) + float64(chip.PipeStartup[isa.PipeMTE2])
}

// matmulSearches caches tile searches by op signature and chip, so compiling the same
// shapes again (another graph, a recompilation) does not search again.
var matmulSearches = struct {
	sync.Mutex
	done map[string]matmulChoice
	runs int // searches run (not answered from the cache)
}{done: map[string]matmulChoice{}}

// maxCachedSearches bounds the cache; a search costs a few milliseconds.
const maxCachedSearches = 4096

type matmulChoice struct {
	tiling matmulTiling
	reason string
}

// fixedTiles reports whether matmul tiles come from the fixed rule: asked for, or at
// O0, which runs no optimisation.
func (o Options) fixedTiles() bool { return o.FixedTiles || o.OptLevel == O0 }

// chooseMatmulTiling picks the tiling of a matmul: the user's when given (checked
// against the chip), the fixed rule of matmulTile when fixed is set (no search), else
// the best of a search scored by estimateMatmul.
func chooseMatmulTiling(chip *device.Chip, p matmulProblem, fixed bool, user *matmulTiling) (matmulTiling, string, error) {
	switch {
	case user != nil:
		t := *user
		if t.kc == 0 {
			t.kc = max(p.k, 1)
		}
		if why := t.fits(chip, p.dt); why != "" {
			return t, "", fmt.Errorf("matmul tile %v does not fit chip %s: %s", t.tile(), chip.Name, why)
		}
		return t, fmt.Sprintf("given; estimated %.0f cycles on %s", estimateMatmul(chip, p, t).total, chip.Name), nil
	case fixed:
		return matmulTile(chip, p.dt, p.m, p.n, p.k)
	}
	key := fmt.Sprintf("%+v|%+v", *chip, p)
	matmulSearches.Lock()
	c, ok := matmulSearches.done[key]
	matmulSearches.Unlock()
	if ok {
		return c.tiling, c.reason, nil
	}
	// Search unlocked, so that compilations on other threads do not wait; two that
	// search the same signature at once find the same answer.
	c, err := searchMatmulTiling(chip, p)
	if err != nil {
		return matmulTiling{}, "", err
	}
	matmulSearches.Lock()
	defer matmulSearches.Unlock()
	matmulSearches.runs++
	if len(matmulSearches.done) >= maxCachedSearches {
		clear(matmulSearches.done) // a process specialising endless shapes stays bounded
	}
	matmulSearches.done[key] = c
	return c.tiling, c.reason, nil
}

// searchMatmulTiling scores every tiling that fits the chip: tm and tn on fractal
// rows up to the output (and 512), tk in powers of two of the K fractal up to 256,
// one to eight base blocks per stage, and, when the output has fewer tiles than the
// chip has cube cores, K chunks that give every core work.
func searchMatmulTiling(chip *device.Chip, p matmulProblem) (matmulChoice, error) {
	ka, na := kAlign(p.dt), nAlign(p.dt)
	kMax := roundUp(max(p.k, 1), ka)
	accBytes := accType(p.dt).Size()
	cores := chip.Cores(isa.Cube)
	var best, second matmulTiling
	var bestE, secondE matmulEstimate
	n := 0
	consider := func(t matmulTiling) {
		if t.fits(chip, p.dt) != "" {
			return
		}
		n++
		e := estimateMatmul(chip, p, t)
		switch {
		case n == 1 || e.total < bestE.total:
			second, secondE = best, bestE
			best, bestE = t, e
		case n == 2 || e.total < secondE.total:
			second, secondE = t, e
		}
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
	if n == 0 {
		return matmulChoice{}, fmt.Errorf("no matmul tile fits chip %s: even [16,16,%d,1] exceeds its buffers", chip.Name, ka)
	}
	reason := fmt.Sprintf("best of %d tilings [tm,tn,tk,stepk,kc] by the timing model of %s: %v est %.0f cycles (%d tiles per core, %s-bound stage of %.0f)",
		n, chip.Name, best.tile(), bestE.total, bestE.tilesPer, bestE.bound, bestE.stage)
	if n > 1 {
		reason += fmt.Sprintf("; runner-up %v est %.0f", second.tile(), secondE.total)
	}
	return matmulChoice{tiling: best, reason: reason}, nil
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
