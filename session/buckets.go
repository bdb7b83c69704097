package session

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"pypto/core"
	"pypto/device"
	"pypto/lower"
)

// Bucketed programs. A symbolic executor whose graph can run padded (core.PlanPadding)
// on a device with a timing model does not compile a program per binding: each
// symbol's range is cut into buckets, one program serves a bucket, compiled for its
// upper bound, and a run pads its inputs to the bound, gives the program the masks that
// keep padded positions out of valid ones and the run's sizes, and cuts the results
// back. Kernels that follow the run's sizes (lower/dynamic_sizes.go) compute only the
// valid rows; the others compute the padded positions too, so a run costs between what
// its own size and what the bound costs: the buckets are as wide as the device's
// estimate allows.
//
// Bucket bounds are among bucketCandidates. From the low end of the range, a bucket
// takes the next candidate and every further one whose program the device estimates,
// for a run of the bucket's smallest size (where the bound costs most over the size),
// at most bucketTolerance slower than the cheapest program for that run estimated so
// far (the smallest size's own, and the candidates taken: estimates mostly grow with
// the size, but not always), and the next bucket starts after it; a bucket's bound is
// at most twice its low end (or 2*bucketTile), so that a program the device cannot
// estimate still pads little.
// A candidate's estimate is the device's estimate of the padded program's run
// (lower.Executable.EstimatedMsAt: every kernel's task estimated, one that follows the
// run's rows over those rows, placed on the timeline by the device's dispatcher as a
// run places them), from a compilation that stops before machine code
// (lower.Options.StopAfter). The symbols are bucketed in
// turn (bucket): each with the ones before it at their buckets' bounds and the ones
// after it at their run's values rounded up to powers of two, so that the buckets of
// one symbol are learnt once for a range of the others, and the tolerance holds for
// the padding of all symbols together.

// bucketTolerance is how much slower than the program of a bucket's low end its bound's
// program may be estimated: assumed, below the 10% a bucketed run may cost over a
// program for its exact size, to leave room for the estimate's error (it does not see
// the dynamic kernels' own loops, nor that the exact size's matmuls keep A resident in
// L1). Measured on the guide's block (a2, bench/dynamic.py --lows: every bucket's
// smallest size from 1 to 2048, the estimate placing the tasks as a run does): at 6.5%
// the causal attention case needs 16 programs, its worst run 8.0% over its exact
// size's program, and the softmax case 17 programs and 12.2% (seq_len 1281); at 6% the causal case
// needs 17 programs, at 7% 15 but the softmax case's worst is 10.6%, at 8% 14 and
// 8.0% (softmax 10.6%). (When the estimate summed the tasks alone, their start-up and
// end hid the padding's cost: 3% gave 25 programs and 14.0% on the causal case.)
const bucketTolerance = 0.065

// bucketTile is the step of the candidates past the powers of two: assumed, a multiple
// of the cube's 16 rows that keeps the padding of large sizes within a few per cent.
const bucketTile = 64

// nextCandidate is the candidate bound after c: the powers of two up to bucketTile,
// then its multiples.
func nextCandidate(c int) int {
	if c < bucketTile {
		return c * 2
	}
	return c + bucketTile
}

// bucketing holds an executor's padding plan and what it learnt of the bucket bounds.
type bucketing struct {
	plan    *core.PadPlan
	symbols []string
	// estimate is the device's estimate of the program of bound for a run of run.
	estimate func(bound, run core.Binding) (float64, error)

	mu     sync.Mutex
	off    string             // why the executor stopped using buckets ("": it uses them)
	est    map[string]float64 // binding key -> estimated ms
	bounds map[string][]int   // symbol and context -> bucket bounds found so far, ascending
	probes int                // estimates made
}

// newBucketing returns the bucketing of g, or nil when g cannot run padded or the
// device has no timing model to size buckets with.
func newBucketing(g *core.Graph, plan *core.PadPlan, estimate func(bound, run core.Binding) (float64, error)) *bucketing {
	return &bucketing{plan: plan, symbols: core.GraphSymbols(g), estimate: estimate,
		est: map[string]float64{}, bounds: map[string][]int{}}
}

// bucket returns the bounds of the bucket that holds b; nil, with no error, when the
// executor compiles per binding after all (see off).
//
// The symbols are bucketed one after another, each with the ones before it at their
// buckets' bounds (and, for the reference it is compared with, at their buckets' low
// ends) and the ones after it at their run values rounded up to powers of two: the
// padding of all symbols together is what a run pays, so the tolerance holds for the
// whole box of sizes a program serves, not for each symbol alone.
func (k *bucketing) bucket(b core.Binding) (core.Binding, error) {
	if k.disabled() != "" {
		return nil, nil
	}
	hi, lo := core.Binding{}, core.Binding{}
	for s, v := range b {
		hi[s] = 1
		for hi[s] < v {
			hi[s] *= 2
		}
		lo[s] = hi[s]
	}
	out := core.Binding{}
	for _, s := range k.symbols {
		u, low, err := k.boundFor(s, b[s], hi, lo)
		if err != nil {
			return nil, err
		}
		if u == 0 {
			return nil, nil
		}
		out[s] = u
		hi[s], lo[s] = u, low
	}
	return out, nil
}

// disabled says why the executor no longer uses buckets ("" while it does).
func (k *bucketing) disabled() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.off
}

// noEstimate is why buckets are given up when the program has no kernel whose tiles
// the device's estimate chose (elementwise kernels follow fixed rules): the widths
// would rest on the estimates of those alone.
const noEstimate = "the device estimates none of the program's kernels (elementwise ones have no estimate), so buckets could not be sized"

// boundFor is the upper bound of the bucket of symbol s that holds n and that bucket's
// low end, the other symbols at their values in hi for the bucket's programs and in lo
// for the reference they are compared with (its cheapest corner).
func (k *bucketing) boundFor(s string, n int, hi, lo core.Binding) (int, int, error) {
	at := func(ctx core.Binding, v int) core.Binding {
		c := core.Binding{}
		for name, x := range ctx {
			c[name] = x
		}
		c[s] = v
		return c
	}
	others := func(ctx core.Binding) core.Binding {
		o := core.Binding{}
		for name, x := range ctx {
			if name != s {
				o[name] = x
			}
		}
		return o
	}
	ctxKey := s
	if oh, ol := others(hi), others(lo); len(oh) > 0 {
		ctxKey += "|" + oh.Key()
		if ol.Key() != oh.Key() {
			ctxKey += "|from " + ol.Key()
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	bounds := k.bounds[ctxKey]
	lowEnd := func(i int) int { // the smallest size of bucket i
		if i == 0 {
			return 1
		}
		return bounds[i-1] + 1
	}
	if i := sort.SearchInts(bounds, n); i < len(bounds) {
		return bounds[i], lowEnd(i), nil
	}
	prev := 0 // the previous bound
	if len(bounds) > 0 {
		prev = bounds[len(bounds)-1]
	}
	for {
		u := 1 // the first candidate of the next bucket
		if prev > 0 {
			u = nextCandidate(prev)
		}
		run := at(lo, prev+1) // the bucket's smallest run, where its bound costs most
		ref, err := k.estimateLocked(run, run)
		if err != nil {
			k.off = "sizing buckets failed: " + err.Error()
			return 0, 0, nil
		}
		if ref <= 0 {
			k.off = noEstimate
			return 0, 0, nil
		}
		// The bucket holds u, and its bound's program may be slower than the cheapest
		// program seen in the bucket by the tolerance (the program of the bucket's
		// low end may be dearer than a larger one: a single row computes its
		// softmax with other kernels).
		first, err := k.estimateLocked(at(hi, u), run)
		if err != nil {
			k.off = "sizing buckets failed: " + err.Error()
			return 0, 0, nil
		}
		if first > 0 {
			ref = min(ref, first)
		}
		for nextCandidate(u) <= 2*max(prev, bucketTile) {
			e, err := k.estimateLocked(at(hi, nextCandidate(u)), run)
			if err != nil {
				k.off = "sizing buckets failed: " + err.Error()
				return 0, 0, nil
			}
			if e > ref*(1+bucketTolerance) {
				break
			}
			u = nextCandidate(u)
			if e > 0 {
				ref = min(ref, e)
			}
		}
		bounds = append(bounds, u)
		k.bounds[ctxKey] = bounds
		if u >= n {
			return u, lowEnd(len(bounds) - 1), nil
		}
		prev = u
	}
}

func (k *bucketing) estimateLocked(bound, run core.Binding) (float64, error) {
	key := bound.Key() + "@" + run.Key()
	if v, ok := k.est[key]; ok {
		return v, nil
	}
	v, err := k.estimate(bound, run)
	if err != nil {
		return 0, err
	}
	k.est[key] = v
	k.probes++
	return v, nil
}

// estimateProgram is the device's estimate of g's program in ms: its kernels' tasks
// estimated and placed on the timeline as a run places them (lower.Executable.
// EstimatedMsAt), from a compilation that stops after the execution graph; 0 for a
// program none of whose kernels the tile search estimates.
func estimateProgram(g *core.Graph, device_ string, cfg Config, run []int) (float64, error) {
	chip, err := device.Preset(device_)
	if err != nil {
		return 0, core.Errorf(core.ValueError, "unknown device %q", device_)
	}
	opts := cfg.options()
	opts.Chip = chip
	opts.StopAfter = "plan-exec"
	if core.HasInt64(g) {
		if g, _, err = core.NarrowInt64(g); err != nil {
			return 0, err
		}
	}
	exe, err := lower.Compile(g, opts)
	if err != nil {
		return 0, AsError(core.CompileError, err)
	}
	ms, searched := exe.EstimatedMsAt(run)
	if !searched {
		return 0, nil // buckets are sized by the kernels the tile search estimates
	}
	return ms, nil
}

// padInput copies data of type from (concrete) into a zero buffer of type to, which has
// the same rank and no smaller axes.
func padInput(data []byte, from, to core.TensorType) []byte { return leadingBox(data, from, to) }

// cutOutput copies the leading box of shape to out of data of shape from.
func cutOutput(data []byte, from, to core.TensorType) []byte { return leadingBox(data, from, to) }

// leadingBox is a buffer of type to holding the part of data (of type from, the same
// rank and dtype) that both shapes hold, the leading box, and zeros elsewhere.
func leadingBox(data []byte, from, to core.TensorType) []byte {
	if from.Shape.Equal(to.Shape) {
		return data
	}
	out := make([]byte, to.Bytes())
	box := make(core.Shape, len(to.Shape))
	for i := range box {
		box[i] = min(from.Shape[i], to.Shape[i])
	}
	if box.NumElements() == 0 {
		return out
	}
	size := from.DType.Size()
	if len(box) == 0 {
		copy(out, data[:size])
		return out
	}
	fs, ts := from.Shape.Strides(), to.Shape.Strides()
	r := len(box)
	row := box[r-1] * size
	idx := make([]int, r-1)
	for {
		src, dst := 0, 0
		for i, x := range idx {
			src += x * fs[i]
			dst += x * ts[i]
		}
		copy(out[dst*size:dst*size+row], data[src*size:src*size+row])
		i := r - 2
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < box[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out
		}
	}
}

// padParams are the plan's extra params for a run binding b on the program of bound
// u: the masks (true at the run's valid positions), and the run's sizes.
func padParams(plan *core.PadPlan, b, u core.Binding) [][]byte {
	var out [][]byte
	for _, m := range append(slices.Clone(plan.Masks), plan.Keeps...) {
		buf := make([]byte, m.Type().Substitute(u).Bytes())
		for i := 0; i < b[m.Symbol]; i++ {
			buf[i] = 1
		}
		out = append(out, buf)
	}
	return append(out, plan.Sizes(b))
}

// dynamicSizes tells the compiler which sizes of the plan's padded programs are the
// run's (lower.DynamicSizes).
func dynamicSizes(plan *core.PadPlan) *lower.DynamicSizes {
	var masks []int // the plan's masks come after the graph's params
	for i := range len(plan.Masks) + len(plan.Keeps) {
		masks = append(masks, plan.SizesParam()-len(plan.Masks)-len(plan.Keeps)+i)
	}
	return &lower.DynamicSizes{Param: plan.SizesParam(), Symbols: plan.Symbols(), Extents: plan.Extents(), Masks: masks}
}

// bucketName names the program of bound u in reports: "seq_len<=128".
func bucketName(u core.Binding) string {
	names := make([]string, 0, len(u))
	for n := range u {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%s<=%d", n, u[n])
	}
	return s
}

// BucketInfo is what an executor learnt of its buckets: the bounds of each symbol's
// buckets, keyed "symbol|context" (the others' values rounded up to powers of two),
// and how many programs were estimated to find them.
type BucketInfo struct {
	Bounds map[string][]int `json:"bounds"`
	Probes int              `json:"probes"`
}

func (k *bucketing) info() *BucketInfo {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := &BucketInfo{Bounds: map[string][]int{}, Probes: k.probes}
	for key, b := range k.bounds {
		out.Bounds[key] = append([]int(nil), b...)
	}
	return out
}

// Buckets describes the executor's buckets; nil when it has none.
func (e *Executor) Buckets() *BucketInfo {
	if e.buckets == nil || e.buckets.disabled() != "" {
		return nil
	}
	return e.buckets.info()
}

// NoBuckets says why a symbolic executor compiles a program per binding ("" when it
// has buckets or is not symbolic).
func (e *Executor) NoBuckets() string {
	if e.buckets != nil {
		return e.buckets.disabled()
	}
	return e.noBuckets
}
