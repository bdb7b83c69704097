package device

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"pypto/dtype"
	"pypto/internal/checked"
)

// A Collective is one collective operation of a group of mesh ranks.
//
// Count is the elements of each rank's input: the whole message for all_reduce,
// reduce_scatter (which leaves each rank Count/p), broadcast and all_to_all (Count/p to
// each peer); one rank's share for all_gather (each rank ends with p*Count). For send,
// the group is [source, destination] in that order and Count the message.
type Collective struct {
	Kind      string // all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send, barrier
	Op        string // reduction for all_reduce / reduce_scatter: sum, prod, max, min
	Algorithm string // auto, mesh, ring, hd (halving-doubling / binomial tree)
	Root      int    // broadcast: the root's index in the group
	DType     dtype.DType
	Count     int
	Ranks     []int // the group's mesh ranks
}

// CollectiveKinds lists the collectives.
var CollectiveKinds = []string{"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "send", "barrier"}

// Algorithms lists the algorithm names a collective may force.
var Algorithms = []string{"auto", "mesh", "ring", "hd"}

// A CollectivePhase is the part of a collective that runs on one tier.
type CollectivePhase struct {
	Kind      string  `json:"kind"`
	Tier      string  `json:"tier"`
	Algorithm string  `json:"algorithm"`
	Ranks     int     `json:"ranks"` // ranks of each set this phase runs on
	Bytes     int64   `json:"bytes"` // the message of each set (its region of the buffer)
	Steps     int     `json:"steps"`
	Seconds   float64 `json:"seconds"`
}

// CollectiveTiming is what a collective costs: the launch, then its phases one after
// another (the sets of one phase run at once on separate links).
type CollectiveTiming struct {
	LaunchSeconds    float64           `json:"launch_seconds"`
	AlgorithmSeconds float64           `json:"algorithm_seconds"`
	Seconds          float64           `json:"seconds"`
	Phases           []CollectivePhase `json:"phases"`
}

// reduceGamma is the seconds per byte of reducing one byte into another on a chip.
// assumed: a reduction reads both operands from HBM and writes the result (3 bytes of
// HBM traffic per reduced byte) at the chip's HBM bandwidth; its vector units are far
// faster than that.
func reduceGamma(c *Chip) float64 { return 3 / (float64(c.HBMBytesPerCycle) * c.ClockHz) }

// ReduceGamma is the seconds per reduced byte on the mesh's chips (0 if the chip
// preset is unknown, which MeshPreset never builds).
func (m *Mesh) ReduceGamma() float64 {
	c, err := Preset(m.Chip)
	if err != nil {
		return 0
	}
	return reduceGamma(c)
}

// RunCollective performs c over the group's buffers (inputs[i] is rank c.Ranks[i]'s
// input, or nil for all of them to compute the timing only) and returns each rank's
// output in the same order.
func (m *Mesh) RunCollective(c Collective, inputs [][]byte) ([][]byte, CollectiveTiming, error) {
	if err := m.checkCollective(&c, inputs); err != nil {
		return nil, CollectiveTiming{}, err
	}
	chip, err := Preset(m.Chip)
	if err != nil {
		return nil, CollectiveTiming{}, err
	}
	if c.Kind == "send" {
		return m.runSend(c, inputs, chip)
	}
	g, err := m.shapeOf(c.Ranks)
	if err != nil {
		return nil, CollectiveTiming{}, err
	}
	// The group's buffers in group order (ascending rank): c.Ranks may list them in any
	// order, and results go back in the caller's.
	order := make([]int, len(c.Ranks)) // group index -> caller index
	for i, r := range c.Ranks {
		order[slices.Index(g.ranks, r)] = i
	}
	p := len(g.ranks)
	n := c.Count
	if c.Kind == "all_gather" {
		var ok bool
		if n, ok = checked.Mul(c.Count, p); !ok {
			return nil, CollectiveTiming{}, fmt.Errorf("all_gather of %d elements over %d ranks overflows", c.Count, p)
		}
	}
	es := c.DType.Size()
	bufs := make([][]byte, p)
	if inputs != nil {
		for gi := range p {
			in := inputs[order[gi]]
			b, err := hostBuffer(n*es, "collective buffer")
			if err != nil {
				return nil, CollectiveTiming{}, err
			}
			if c.Kind == "all_gather" {
				copy(b[gi*c.Count*es:], in)
			} else {
				copy(b, in)
			}
			bufs[gi] = b
		}
	}
	run := &groupRun{mesh: m, g: g, bufs: bufs, es: es, gamma: reduceGamma(chip), algo: c.Algorithm}
	if c.Kind == "all_reduce" || c.Kind == "reduce_scatter" {
		if run.red, err = newReducer(c.DType, c.Op); err != nil {
			return nil, CollectiveTiming{}, err
		}
	}
	root := c.Root
	switch c.Kind {
	case "all_reduce":
		err = run.allReduce(0, n)
	case "reduce_scatter":
		err = run.reduceScatter(len(g.dims)-1, 0, n)
	case "all_gather":
		err = run.allGather(0, 0, n)
	case "broadcast":
		err = run.broadcast(len(g.dims)-1, 0, n, g.coords[root])
	case "all_to_all":
		err = run.allToAll(n)
	case "barrier":
		// A barrier is an all-reduce of nothing: every step's latency, no bytes.
		run.bufs = make([][]byte, p)
		err = run.allReduce(0, 0)
	}
	if err != nil {
		return nil, CollectiveTiming{}, err
	}
	t := CollectiveTiming{LaunchSeconds: m.LaunchSeconds, Phases: run.phases}
	if p == 1 {
		t.LaunchSeconds = 0 // a group of one rank moves nothing and launches nothing
	}
	for _, ph := range run.phases {
		t.AlgorithmSeconds += ph.Seconds
	}
	t.Seconds = t.LaunchSeconds + t.AlgorithmSeconds
	if inputs == nil {
		return nil, t, nil
	}
	if c.Kind == "barrier" {
		return make([][]byte, p), t, nil
	}
	outs := make([][]byte, p)
	for gi := range p {
		b := bufs[gi]
		if c.Kind == "reduce_scatter" {
			lo, hi := chunk(0, n, gi, p)
			b = b[lo*es : hi*es]
		}
		outs[order[gi]] = b
	}
	return outs, t, nil
}

func (m *Mesh) checkCollective(c *Collective, inputs [][]byte) error {
	if !slices.Contains(CollectiveKinds, c.Kind) {
		return fmt.Errorf("unknown collective %q (known: %s)", c.Kind, strings.Join(CollectiveKinds, ", "))
	}
	if c.Algorithm == "" {
		c.Algorithm = "auto"
	}
	if !slices.Contains(Algorithms, c.Algorithm) {
		return fmt.Errorf("unknown collective algorithm %q (known: %s)", c.Algorithm, strings.Join(Algorithms, ", "))
	}
	if !c.DType.Valid() {
		return fmt.Errorf("%s: invalid dtype", c.Kind)
	}
	if c.Count < 0 {
		return fmt.Errorf("%s: negative element count %d", c.Kind, c.Count)
	}
	p := len(c.Ranks)
	if c.Kind == "send" && p != 2 {
		return fmt.Errorf("send: the group must be [source, destination], got %d ranks", p)
	}
	if c.Kind == "reduce_scatter" && p > 0 && c.Count%p != 0 {
		return fmt.Errorf("reduce_scatter: %d elements do not split evenly over %d ranks; give each rank a multiple of %d elements", c.Count, p, p)
	}
	if c.Kind == "all_to_all" && c.Algorithm == "hd" {
		// HCCL's all-to-all is one step on a full mesh or pairwise; there is no
		// halving-doubling one, and running pairwise under that name would mislabel it.
		return fmt.Errorf("all_to_all has no halving-doubling algorithm; use mesh (full-mesh tiers), ring (pairwise) or auto")
	}
	if c.Kind == "all_to_all" && p > 0 && c.Count%p != 0 {
		return fmt.Errorf("all_to_all: %d elements do not split evenly over %d ranks; give each rank a multiple of %d elements", c.Count, p, p)
	}
	if c.Kind == "broadcast" && (c.Root < 0 || c.Root >= p) {
		return fmt.Errorf("broadcast: root %d is not an index into the group of %d ranks", c.Root, p)
	}
	if inputs != nil {
		if len(inputs) != p {
			return fmt.Errorf("%s: %d input buffers for %d ranks", c.Kind, len(inputs), p)
		}
		want := c.Count * c.DType.Size()
		for i, in := range inputs {
			if len(in) != want {
				return fmt.Errorf("%s: rank %d's buffer holds %d bytes, expected %d (%d %s elements)", c.Kind, c.Ranks[i], len(in), want, c.Count, c.DType.LongName())
			}
		}
	}
	return nil
}

// groupRun carries a hierarchical collective through the tiers of its group.
type groupRun struct {
	mesh   *Mesh
	g      *groupShape
	bufs   [][]byte
	es     int
	gamma  float64
	red    reducer
	algo   string
	phases []CollectivePhase
}

// sets partitions the group into the sets that differ only along grid axis t: each is a
// list of group indices ordered by their coordinate on t.
func (r *groupRun) sets(t int) [][]int {
	byRest := map[string][]int{}
	var keys []string
	for gi, co := range r.g.coords {
		key := fmt.Sprint(co[:t], co[t+1:])
		if _, ok := byRest[key]; !ok {
			keys = append(keys, key)
			byRest[key] = make([]int, r.g.dims[t])
		}
		byRest[key][co[t]] = gi
	}
	out := make([][]int, len(keys))
	for i, k := range keys {
		out[i] = byRest[k]
	}
	return out
}

// flat runs one flat algorithm on every set along axis t, each over the region its
// first member's coordinates give, and records the phase.
func (r *groupRun) flat(kind string, t int, region func(co []int) (int, int), f func(a *algoSet, lo, hi int, algo string) ([]step, error)) error {
	tier := r.g.tiers[t]
	algo := r.algo
	if algo == "auto" {
		algo = r.choose(kind, t, region)
	}
	if algo == "mesh" && !tier.FullMesh {
		return fmt.Errorf("%s: the mesh algorithm needs a full mesh, and tier %s of mesh %s is switched (use ring or hd)", kind, tier.Name, r.mesh.Name)
	}
	if algo == "hd" && !isPow2(r.g.dims[t]) && kind != "all_reduce" && kind != "broadcast" {
		return fmt.Errorf("%s: halving-doubling needs a power-of-two number of ranks, tier %s has %d (use ring)", kind, tier.Name, r.g.dims[t])
	}
	sets := r.sets(t)
	stepsOf := make([][]step, len(sets))
	errs := make([]error, len(sets))
	var wg sync.WaitGroup
	for si, set := range sets {
		a := &algoSet{es: r.es, red: r.red, bufs: make([][]byte, len(set))}
		for k, gi := range set {
			a.bufs[k] = r.bufs[gi]
		}
		lo, hi := region(r.g.coords[set[0]])
		// The sets of a phase are disjoint ranks on disjoint links: they run at once.
		wg.Go(func() { stepsOf[si], errs[si] = f(a, lo, hi, algo) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	lo, hi := region(r.g.coords[sets[0][0]])
	r.phases = append(r.phases, CollectivePhase{Kind: kind, Tier: tier.Name, Algorithm: algo, Ranks: r.g.dims[t],
		Bytes: int64(hi-lo) * int64(r.es), Steps: len(stepsOf[0]), Seconds: r.seconds(t, stepsOf[0])})
	return nil
}

// seconds is the time of a list of steps on axis t's links.
func (r *groupRun) seconds(t int, steps []step) float64 {
	l := r.g.tiers[t].Link
	s := 0.0
	for _, st := range steps {
		s += l.LatencySeconds + float64(st.linkBytes)*l.Beta() + float64(st.reduceBytes)*r.gamma
	}
	return s
}

// choose picks an algorithm for a phase: the one-step mesh algorithm on a full mesh;
// on a switched tier, whichever of ring and halving-doubling the alpha-beta model
// says is faster for this size (HCCL's rule of thumb: halving-doubling for small
// messages at power-of-two sizes, ring for large).
func (r *groupRun) choose(kind string, t int, region func(co []int) (int, int)) string {
	if r.g.tiers[t].FullMesh {
		return "mesh"
	}
	q := r.g.dims[t]
	if !isPow2(q) && kind != "all_reduce" && kind != "broadcast" {
		return "ring"
	}
	lo, hi := region(r.g.coords[0])
	a := &algoSet{es: r.es, bufs: make([][]byte, q)}
	ring, _ := runFlat(kind, a, lo, hi, "ring", 0)
	hd, _ := runFlat(kind, a, lo, hi, "hd", 0)
	if r.seconds(t, hd) < r.seconds(t, ring) {
		return "hd"
	}
	return "ring"
}

// runFlat dispatches a flat algorithm by kind and name.
func runFlat(kind string, a *algoSet, lo, hi int, algo string, root int) ([]step, error) {
	switch kind + "/" + algo {
	case "reduce_scatter/mesh":
		return a.reduceScatterMesh(lo, hi), nil
	case "reduce_scatter/ring":
		return a.reduceScatterRing(lo, hi), nil
	case "reduce_scatter/hd":
		return a.reduceScatterHD(lo, hi), nil
	case "all_gather/mesh":
		return a.allGatherMesh(lo, hi), nil
	case "all_gather/ring":
		return a.allGatherRing(lo, hi), nil
	case "all_gather/hd":
		return a.allGatherHD(lo, hi), nil
	case "broadcast/mesh":
		return a.broadcastMesh(lo, hi, root), nil
	case "broadcast/ring":
		return a.broadcastRing(lo, hi, root), nil
	case "broadcast/hd":
		return a.broadcastTree(lo, hi, root), nil
	case "all_reduce/mesh", "all_reduce/ring":
		rs, _ := runFlat("reduce_scatter", a, lo, hi, algo, 0)
		ag, _ := runFlat("all_gather", a, lo, hi, algo, 0)
		return append(rs, ag...), nil
	case "all_reduce/hd":
		if isPow2(a.size()) {
			return append(a.reduceScatterHD(lo, hi), a.allGatherHD(lo, hi)...), nil
		}
		keep, in := a.foldIn(lo, hi)
		s := a.subset(keep)
		steps := append([]step{in}, s.reduceScatterHD(lo, hi)...)
		steps = append(steps, s.allGatherHD(lo, hi)...)
		return append(steps, a.foldOut(lo, hi)), nil
	}
	return nil, fmt.Errorf("no %s algorithm for %s", algo, kind)
}

// whole is the region of the whole buffer.
func whole(lo, hi int) func([]int) (int, int) { return func([]int) (int, int) { return lo, hi } }

// allReduce on [lo, hi): HCCL's hierarchy, reduce-scatter inside the innermost tier,
// all-reduce of each rank's chunk across the outer tiers, all-gather inside.
func (r *groupRun) allReduce(lo, hi int) error {
	if len(r.g.dims) == 0 {
		return nil // a group of one rank
	}
	return r.allReduceAcross(0, whole(lo, hi))
}

// allReduceAcross is allReduce over axes t.. where each rank's region depends on its
// coordinates below t.
func (r *groupRun) allReduceAcross(t int, region func(co []int) (int, int)) error {
	nd := len(r.g.dims)
	if t == nd-1 {
		return r.flat("all_reduce", t, region, flatOf("all_reduce"))
	}
	inner := func(co []int) (int, int) {
		lo, hi := region(co)
		return chunk(lo, hi, co[t], r.g.dims[t])
	}
	if err := r.flat("reduce_scatter", t, region, flatOf("reduce_scatter")); err != nil {
		return err
	}
	if err := r.allReduceAcross(t+1, inner); err != nil {
		return err
	}
	return r.flat("all_gather", t, region, flatOf("all_gather"))
}

func flatOf(kind string) func(a *algoSet, lo, hi int, algo string) ([]step, error) {
	return func(a *algoSet, lo, hi int, algo string) ([]step, error) { return runFlat(kind, a, lo, hi, algo, 0) }
}

// reduceScatter from the outermost axis t down to 0 (across, then inside): the rank at
// grid index gi ends with chunk gi of [lo, hi), group order being innermost-fastest.
func (r *groupRun) reduceScatter(t, lo, hi int) error {
	if len(r.g.dims) == 0 {
		return nil
	}
	// regionAt(t) of a rank: [lo, hi) narrowed by its coordinates on the axes above t.
	regionAt := func(t int) func(co []int) (int, int) {
		return func(co []int) (int, int) {
			l, h := lo, hi
			for u := len(r.g.dims) - 1; u > t; u-- {
				l, h = chunk(l, h, co[u], r.g.dims[u])
			}
			return l, h
		}
	}
	for ; t >= 0; t-- {
		if err := r.flat("reduce_scatter", t, regionAt(t), flatOf("reduce_scatter")); err != nil {
			return err
		}
	}
	return nil
}

// allGather from axis 0 up (inside, then across), the inverse of reduceScatter.
func (r *groupRun) allGather(t, lo, hi int) error {
	nd := len(r.g.dims)
	regionAt := func(t int) func(co []int) (int, int) {
		return func(co []int) (int, int) {
			l, h := lo, hi
			for u := nd - 1; u > t; u-- {
				l, h = chunk(l, h, co[u], r.g.dims[u])
			}
			return l, h
		}
	}
	for ; t < nd; t++ {
		if err := r.flat("all_gather", t, regionAt(t), flatOf("all_gather")); err != nil {
			return err
		}
	}
	return nil
}

// broadcast from the rank at grid coordinates root: across the outer tiers first (the
// ranks sharing the root's inner coordinates), then inside each.
func (r *groupRun) broadcast(t, lo, hi int, root []int) error {
	for ; t >= 0; t-- {
		tt := t
		err := r.flatSome("broadcast", tt, lo, hi, func(co []int) bool {
			// Sets that hold the message at this phase: inner coordinates equal the root's.
			return slices.Equal(co[:tt], root[:tt])
		}, root[tt])
		if err != nil {
			return err
		}
	}
	return nil
}

// flatSome is flat for a broadcast phase: only the sets whose members satisfy member run,
// from position root.
func (r *groupRun) flatSome(kind string, t, lo, hi int, member func(co []int) bool, root int) error {
	tier := r.g.tiers[t]
	algo := r.algo
	if algo == "auto" {
		algo = r.choose(kind, t, whole(lo, hi))
	}
	if algo == "mesh" && !tier.FullMesh {
		return fmt.Errorf("%s: the mesh algorithm needs a full mesh, and tier %s of mesh %s is switched (use ring or hd)", kind, tier.Name, r.mesh.Name)
	}
	var steps []step
	for _, set := range r.sets(t) {
		if !member(r.g.coords[set[0]]) {
			continue
		}
		a := &algoSet{es: r.es, bufs: make([][]byte, len(set))}
		for k, gi := range set {
			a.bufs[k] = r.bufs[gi]
		}
		var err error
		if steps, err = runFlat(kind, a, lo, hi, algo, root); err != nil {
			return err
		}
	}
	r.phases = append(r.phases, CollectivePhase{Kind: kind, Tier: tier.Name, Algorithm: algo, Ranks: r.g.dims[t],
		Bytes: int64(hi-lo) * int64(r.es), Steps: len(steps), Seconds: r.seconds(t, steps)})
	return nil
}

// allToAll sends chunk j of each rank's buffer to rank j (which stores it as chunk i,
// the sender's index). Time: on each tier, the peers first separated by that tier; a full
// mesh sends to all of them in one step, a switched tier one peer a step (pairwise).
func (r *groupRun) allToAll(n int) error {
	p := len(r.g.ranks)
	if r.bufs[0] != nil {
		out := make([][]byte, p)
		for i := range p {
			o, err := hostBuffer(n*r.es, "all_to_all buffer")
			if err != nil {
				return err
			}
			for j := range p {
				// Chunk j of rank i's output is chunk i of rank j's input.
				i0, i1 := chunk(0, n, i, p)
				j0, j1 := chunk(0, n, j, p)
				copy(o[j0*r.es:j1*r.es], r.bufs[j][i0*r.es:i1*r.es])
			}
			out[i] = o
		}
		copy(r.bufs, out)
	}
	c := int64((n+p-1)/p) * int64(r.es)
	below := 1
	for t, q := range r.g.dims {
		peers := (q - 1) * below
		below *= q
		algo := r.algo
		if algo == "auto" {
			algo = "ring"
			if r.g.tiers[t].FullMesh {
				algo = "mesh"
			}
		}
		if algo == "mesh" && !r.g.tiers[t].FullMesh {
			return fmt.Errorf("all_to_all: the mesh algorithm needs a full mesh, and tier %s of mesh %s is switched (use ring)", r.g.tiers[t].Name, r.mesh.Name)
		}
		var steps []step
		if algo == "mesh" {
			// peers/(q-1) chunks per link: one per peer sharing it.
			steps = []step{{c * int64(below/q), 0}}
		} else {
			for range peers {
				steps = append(steps, step{c, 0})
			}
			algo = "pairwise"
		}
		r.phases = append(r.phases, CollectivePhase{Kind: "all_to_all", Tier: r.g.tiers[t].Name, Algorithm: algo, Ranks: q,
			Bytes: int64(n) * int64(r.es), Steps: len(steps), Seconds: r.seconds(t, steps)})
	}
	return nil
}

// runSend moves rank Ranks[0]'s buffer to Ranks[1] over the outermost tier that
// separates them.
func (m *Mesh) runSend(c Collective, inputs [][]byte, chip *Chip) ([][]byte, CollectiveTiming, error) {
	src, dst := c.Ranks[0], c.Ranks[1]
	for _, r := range c.Ranks {
		if r < 0 || r >= m.Size() {
			return nil, CollectiveTiming{}, fmt.Errorf("send: rank %d is outside mesh %s of %d chips", r, m.Name, m.Size())
		}
	}
	if src == dst {
		return nil, CollectiveTiming{}, fmt.Errorf("send: rank %d sends to itself", src)
	}
	tier, span := m.Tiers[0], 1
	for _, t := range m.Tiers {
		if src/span != dst/span {
			tier = t
		}
		span *= t.GroupSize
	}
	bytes := int64(c.Count) * int64(c.DType.Size())
	s := tier.Link.LatencySeconds + float64(bytes)*tier.Link.Beta()
	t := CollectiveTiming{LaunchSeconds: m.LaunchSeconds, AlgorithmSeconds: s, Seconds: m.LaunchSeconds + s,
		Phases: []CollectivePhase{{Kind: "send", Tier: tier.Name, Algorithm: "direct", Ranks: 2, Bytes: bytes, Steps: 1, Seconds: s}}}
	if inputs == nil {
		return nil, t, nil
	}
	return [][]byte{inputs[0], append([]byte(nil), inputs[0]...)}, t, nil
}
