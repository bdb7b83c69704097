package lower

import (
	"fmt"
	"sync"

	"pypto/core"
	"pypto/device"
)

// The tile search asks the device what a candidate costs: it emits the blocks the
// candidate's kernel would run (the same code generation as the compiled program),
// compiles them with the backend and times them with the device's timing-only
// simulator (device.EstimateTask). Nothing here models time; it only chooses what to
// simulate so that a search stays cheap:
//
//   - a task of at most exactBudget instructions on at most 2*sampleBlocks cores is
//     simulated whole, so the estimate is the time a run of that kernel reports;
//   - a larger one times the busiest block and the three dealt after it (which work
//     on neighbouring tiles at the same time, so they share the L2 as in the run) on
//     the chip as the other blocks leave it to them (device.Chip.Share: their share of
//     HBM), running each block's first two tiles, then its first four, and
//     extrapolating along the busiest block's work (tiles, or key blocks for causal
//     attention), which is how a block of like tiles grows once its pipeline is full.

// exactBudget is the most instructions (over all blocks) a whole-task estimate
// simulates, and sampleBlocks the blocks a larger one times: assumed, so that an
// estimate costs a few milliseconds of simulation.
const (
	exactBudget  = 4000
	sampleBlocks = 4
)

// convExactBudget is the most instructions a convolution's whole-task estimate
// simulates (assumed: about half a second of simulation). A convolution's blocks all
// read the same input rows, which a sample of four blocks fetches four ways instead of
// 24 (its estimate ran 12-32% slow on the bench's 3x3 convolutions), so a convolution
// is timed whole where that is affordable.
const convExactBudget = 200000

// estimator times candidates of ops of one tile graph on one chip.
type estimator struct {
	chip     *device.Chip
	compiler *device.Compiler
	// whole times every task whole, whatever its size, uncached (for tests that
	// measure what a search weighed).
	whole bool
	// wholeK keeps every matmul's K on one core (Options.Deterministic).
	wholeK bool
}

func newEstimator(chip *device.Chip) *estimator {
	return &estimator{chip: chip, compiler: device.NewCompiler(chip)}
}

// cache is a map guarded for concurrent compilations, cleared when it reaches its
// bound so that a process specialising endless shapes stays bounded.
type cache[V any] struct {
	sync.Mutex
	done  map[string]V
	bound int
	runs  int // values computed (not answered from the cache)
}

func newCache[V any](bound int) *cache[V] { return &cache[V]{done: map[string]V{}, bound: bound} }

func (c *cache[V]) get(key string) (V, bool) {
	c.Lock()
	defer c.Unlock()
	v, ok := c.done[key]
	return v, ok
}

func (c *cache[V]) put(key string, v V) {
	c.Lock()
	defer c.Unlock()
	c.runs++
	if len(c.done) >= c.bound {
		clear(c.done)
	}
	c.done[key] = v
}

// estimates caches estimates by chip, op and tiling (an estimate costs up to a few
// milliseconds): the layers of a model repeat the same kernels, and a recompilation
// asks again.
var estimates = newCache[int64](1 << 14)

// estimateKey identifies what an estimate depends on: the chip, the op with its
// attributes, its problem and tiling, and the types and views of its tensors.
func estimateKey(tg *TileGraph, op *TileOp) string {
	key := fmt.Sprintf("%s|%d|%v|%v|%v|%v", op.Op, op.Kind, op.Problem, op.Tile, op.Grid, op.Attrs)
	for _, t := range append(append([]int(nil), op.Inputs...), op.Output) {
		g := tg.Tensors[t]
		key += fmt.Sprintf("|%s", g.Type)
		if g.View != nil {
			key += fmt.Sprintf("%+v", *g.View)
		}
	}
	return key
}

// cycles is the device's estimate of op's task with the tiling op carries (Problem,
// Tile and Grid set), in cycles, launch included.
func (e *estimator) cycles(tg *TileGraph, op *TileOp) (int64, error) {
	if op.NumTiles() == 0 {
		return 0, nil // no task runs
	}
	if e.whole {
		return e.simulate(tg, op)
	}
	key := chipKey(e.chip) + estimateKey(tg, op)
	if c, ok := estimates.get(key); ok {
		return c, nil
	}
	c, err := e.simulate(tg, op)
	if err != nil {
		return 0, err
	}
	estimates.put(key, c)
	return c, nil
}

// chipKey names a chip by its parameters, so that an edited chip is another chip.
func chipKey(chip *device.Chip) string { return fmt.Sprintf("%+v", *chip) }

// simulate times op: whole when its task is small, else by samples of its blocks
// (see the top of this file).
func (e *estimator) simulate(tg *TileGraph, op *TileOp) (int64, error) {
	blocks := dealTiles(tg.Tensors, op, min(op.NumTiles(), e.chip.Cores(op.Core)))
	work := func(tiles []int) int {
		w := 0
		for _, t := range tiles {
			w += tileWork(op, t)
		}
		return w
	}
	b := 0
	for i := range blocks {
		if work(blocks[i]) > work(blocks[b]) {
			b = i
		}
	}
	busiest := blocks[b]
	first, err := e.emit(tg, op, [][]int{busiest[:1]})
	if err != nil {
		return 0, err
	}
	conv := op.Kind == TileConv || op.Kind == TileConvEpilogue
	if e.whole || (instructions(first)*op.NumTiles() <= exactBudget && len(blocks) <= 2*sampleBlocks) ||
		conv && instructions(first)*op.NumTiles() <= convExactBudget {
		all, err := e.emit(tg, op, blocks)
		if err != nil {
			return 0, err
		}
		return e.run(e.chip, tg, op, all)
	}
	// The busiest block and the blocks dealt after it, which work on neighbouring
	// tiles at the same time, on the HBM the other blocks leave them.
	sampled := make([][]int, min(len(blocks), sampleBlocks))
	for i := range sampled {
		sampled[i] = blocks[(b+i)%len(blocks)]
	}
	chip := e.chip.Share(hbmSharers(tg, op, blocks, sampled))
	// t(s) times every sampled block's first s tiles.
	t := func(s int) (int64, error) {
		heads := make([][]int, len(sampled))
		for i, b := range sampled {
			heads[i] = b[:min(s, len(b))]
		}
		em, err := e.emit(tg, op, heads)
		if err != nil {
			return 0, err
		}
		return e.run(chip, tg, op, em)
	}
	// The slope between two and four tiles: a block's first tiles fill its pipeline
	// and its slots, so the first tile alone does not show the steady state. A
	// convolution's block meets each image's rows once per channel tile, the first time
	// cold: its slope is taken after one such period.
	s1, s2 := min(len(busiest), 2), min(len(busiest), 4)
	if conv {
		period := op.Grid[1] * op.Grid[2]
		s1, s2 = min(len(busiest), max(2, period)), min(len(busiest), max(4, 2*period))
	}
	t2, err := t(s2)
	if err != nil || s2 == len(busiest) {
		return t2, err
	}
	t1, err := t(s1)
	if err != nil {
		return 0, err
	}
	w1, w2 := work(busiest[:s1]), work(busiest[:s2])
	return t2 + (t2-t1)*int64(work(busiest)-w2)/int64(max(1, w2-w1)), nil
}

// hbmSharers is how many times the traffic of the sampled blocks all blocks make at
// once, for the HBM share of the sampled ones: the distinct input bytes of every
// block's first tile over those of the sampled blocks' first tiles (blocks reading the
// same data, such as the keys and values of one head, fetch it once into the shared
// L2), between 1 and the blocks per sampled block.
func hbmSharers(tg *TileGraph, op *TileOp, blocks, sampled [][]int) int {
	bytes := func(bs [][]int) int {
		union := map[[4]int]int{}
		for _, b := range bs {
			for k, n := range tileReads(tg, op, b[0]) {
				union[k] = n
			}
		}
		total := 0
		for _, n := range union {
			total += n
		}
		return total
	}
	all, own := bytes(blocks), bytes(sampled)
	return min(ceilDiv(len(blocks), len(sampled)), max(1, (all+own/2)/max(own, 1)))
}

// tileReads names the pieces of input tile t reads, with their bytes: a matmul's
// panel of A rows and of B columns, a convolution's input rows (of every channel) and
// weight columns, an attention's query rows and its head's keys and values, a row
// kernel's rows.
func tileReads(tg *TileGraph, op *TileOp, t int) map[[4]int]int {
	in := func(i int) int { return tg.Tensors[op.Inputs[i]].Type.DType.Size() }
	switch op.Kind {
	case TileMatmul, TileMatmulEpilogue:
		p := matmulProblemOf(op, tg.Tensors)
		gm, gn, gk := op.Grid[1], op.Grid[2], op.Grid[3]
		ki, ni, mi, b := t%gk, t/gk%gn, t/(gk*gn)%gm, t/(gk*gn*gm)
		ba, bb := b%max(p.aMatrices, 1), b%max(p.bMatrix, 1)
		kc := min(op.Tile[4], p.k-ki*op.Tile[4])
		return map[[4]int]int{
			{0, ba, mi, ki}: min(op.Tile[0], p.m-mi*op.Tile[0]) * kc * in(0),
			{1, bb, ni, ki}: min(op.Tile[1], p.n-ni*op.Tile[1]) * kc * in(1),
		}
	case TileConv, TileConvEpilogue:
		p := convProblemOf(op.Problem)
		b, r0, j0, vr, vc := convTileAt(p, op, t)
		lo, hi, _ := p.band(r0, vr)
		return map[[4]int]int{
			{0, b, r0}:           (hi - lo) * p.w * p.c1 * core.ConvC0 * in(0),
			{1, j0 / op.Tile[1]}: p.c1 * p.kc() * vc * in(1),
		}
	case TileAttention:
		b, qi := attentionTileOf(op, t)
		l, s, e, ev := op.Problem[1], op.Problem[2], op.Problem[3], op.Problem[4]
		return map[[4]int]int{
			{0, b, qi}: min(op.Tile[0], l-qi*op.Tile[0]) * e * in(0),
			{1, b}:     s * (e*in(1) + ev*in(2)),
		}
	}
	bytes := 0
	for i := range op.Inputs {
		bytes += tg.Tensors[op.Inputs[i]].Type.Bytes()
	}
	return map[[4]int]int{{0, t}: bytes / max(1, op.NumTiles())}
}

// tileWork is the work of tile t in the units a block's time grows by: one per tile,
// key blocks for causal attention (whose tiles differ).
func tileWork(op *TileOp, t int) int {
	if op.Kind == TileAttention {
		return attentionTileCost(op, t)
	}
	return 1
}

// emitted is the compiled programs of some blocks of a task.
type emitted [][]*device.MachineProgram

func instructions(blocks emitted) int {
	n := 0
	for _, b := range blocks {
		for _, m := range b {
			n += len(m.Instrs)
		}
	}
	return n
}

// emit generates and compiles the programs of the given blocks of op.
func (e *estimator) emit(tg *TileGraph, op *TileOp, blocks [][]int) (emitted, error) {
	vectors := 0
	if groupEmitters[op.Kind] != nil {
		vectors = e.chip.VectorCores / e.chip.CubeCores
	}
	out := make(emitted, len(blocks))
	for i, tiles := range blocks {
		progs, err := emitBlock(tg, op, tiles, blockAt{}, fmt.Sprintf("estimate_%s_b%d", op.Op, i), vectors, nil, limitsOf(e.chip))
		if err != nil {
			return nil, err
		}
		for _, p := range progs {
			m, err := e.compiler.Compile(p)
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], m)
		}
	}
	return out, nil
}

// run times blocks of op on chip with each param in a GM buffer of its own.
func (e *estimator) run(chip *device.Chip, tg *TileGraph, op *TileOp, blocks emitted) (int64, error) {
	var addrs []int
	gm := 0
	for _, t := range kernelArgs(tg, op) {
		addrs = append(addrs, gm)
		gm += roundUp(max(tg.Tensors[t].Type.Bytes(), 1), gmAlign)
	}
	if groupEmitters[op.Kind] == nil {
		bs := make([]device.Block, len(blocks))
		for i, b := range blocks {
			bs[i] = device.Block{Prog: b[0], ParamAddrs: addrs}
		}
		return device.EstimateTask(chip, op.Core, bs, gm)
	}
	groups := make([]device.Group, len(blocks))
	for i, b := range blocks {
		groups[i].Cube = &device.Block{Prog: b[0], ParamAddrs: addrs}
		for _, m := range b[1:] {
			groups[i].Vector = append(groups[i].Vector, device.Block{Prog: m, ParamAddrs: addrs})
		}
	}
	return device.EstimateGroupTask(chip, groups, gm)
}

// estimateOp is the device's estimate of op as tiled in tg, for reports
// (Executable.TileChoices); ops whose kind has no estimate give 0.
func estimateOp(chip *device.Chip, tg *TileGraph, op *TileOp) float64 {
	switch op.Kind {
	case TileMatmul, TileMatmulEpilogue, TileAttention, TileRows, TileConv, TileConvEpilogue:
	default:
		return 0
	}
	c, err := newEstimator(chip).cycles(tg, op)
	if err != nil {
		return 0
	}
	return float64(c)
}

// EstimatedMs is the device's estimate of the whole program in ms: every tile op's
// task, kernels of every kind (elementwise and reductions too, which the reports of
// TileChoices leave at 0 since their tiles follow fixed rules), placed on the chip's
// timeline by the device's dispatcher with the program's runtime features
// (device.ScheduleTasks), as a run places them: with the launch overlapped, a task of
// a short kernel costs its dispatch, one of a long kernel its kernel, and the
// start-up and end of most tasks hide behind their neighbours', so that programs of
// one graph at different sizes compare by what their runs cost. An op the estimator
// cannot time counts as a task that computes nothing. searched says whether the
// program has a kernel whose tiles the tile search chose by this estimate (a matmul,
// attention, row or convolution kernel).
func (e *Executable) EstimatedMs() (ms float64, searched bool) { return e.EstimatedMsAt(nil) }

// EstimatedMsAt is EstimatedMs for a run whose dynamic sizes (Options.Dynamic) have
// the values sizes, in the order of the symbols: each op with dynamic rows is
// estimated as the same op over the rows the run has (its tiles unchanged, the tiles
// the run needs dealt over the cores). nil sizes estimate every op whole.
func (e *Executable) EstimatedMsAt(sizes []int) (ms float64, searched bool) {
	tg := e.exec.Blocks.Tiles
	chip := e.chip
	est := newEstimator(chip)
	cycles := make([]int64, len(tg.Ops)) // each op's task alone, start-up and end included
	for i, op := range tg.Ops {
		switch op.Kind {
		case TileMatmul, TileMatmulEpilogue, TileAttention, TileRows, TileConv, TileConvEpilogue:
			searched = true
		}
		if d := op.Dynamic; d != nil && d.Index < len(sizes) {
			keys := 0
			if d.CutK && d.KIndex < len(sizes) {
				keys = sizes[d.KIndex]
			}
			op = rowsOf(op, sizes[d.Index], keys)
		}
		if c, err := est.cycles(tg, op); err == nil {
			cycles[i] = c
		}
	}
	ran := make([]int, len(e.exec.Tasks))
	for k := range ran {
		ran[k] = k
	}
	dts := dispatchView(chip, e.exec.Tasks, e.exec.Hazards(), ran, ran)
	rt := e.runtime
	// A task alone takes its dispatch, its cores' start, their own time and the final
	// sync (device.ScheduleTasks): its cores' time is what is left of its estimate.
	fixed := int64(chip.DispatchCycles + chip.CoreStartCycles + chip.FinalSyncCycles)
	sched, err := device.ScheduleTasks(chip, dts, device.DispatchOptions{Concurrent: rt.ConcurrentTasks(), OverlapLaunch: rt.OverlapLaunch(), EarlyStart: rt.EarlyStart()},
		func(k int, _ device.TaskSlot) (*device.TaskStats, error) {
			busy := max(0, cycles[e.exec.Blocks.Kernels[e.exec.Tasks[k].Kernel].Op]-fixed)
			cores := make([]int64, dts[k].Cores)
			for j := range cores {
				cores[j] = busy
			}
			return &device.TaskStats{CoreCycles: cores}, nil
		})
	if err != nil { // a program the dispatcher cannot place: its tasks one after another
		var sum int64
		for _, c := range cycles {
			sum += c
		}
		return float64(sum) / chip.ClockHz * 1e3, searched
	}
	return float64(sched.Cycles) / chip.ClockHz * 1e3, searched
}

// rowsOf is op over the first n rows of its output (at most all), and for an
// attention whose keys are cut over the first keys keys: a dynamic op as a run of n
// rows runs it.
func rowsOf(op *TileOp, n, keys int) *TileOp {
	c := *op
	c.Problem, c.Grid = append([]int(nil), op.Problem...), append([]int(nil), op.Grid...)
	switch op.Kind {
	case TileRows: // problem [rows, C], grid [rows/tr, 1]
		c.Problem[0] = max(1, min(n, op.Problem[0]))
		c.Grid[0] = ceilDiv(c.Problem[0], op.Tile[0])
	case TileAttention: // problem [batch, l, s, e, ev], grid [batch, l/br, 1]
		c.Problem[1] = max(1, min(n, op.Problem[1]))
		if op.Dynamic.CutK {
			c.Problem[2] = max(1, min(keys, op.Problem[2]))
		}
		c.Grid[1] = ceilDiv(c.Problem[1], op.Tile[0])
	default: // matmuls: problem [batch, m, n, k], grid [batch, m/tm, n/tn, k/kc]
		c.Problem[1] = max(1, min(n, op.Problem[1]))
		c.Grid[1] = ceilDiv(c.Problem[1], op.Tile[0])
	}
	c.Dynamic = nil
	return &c
}
