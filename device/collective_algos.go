package device

import "math/bits"

// The flat collective algorithms over one set of ranks joined by one tier. Each works on
// the element range [lo, hi) of the set's buffers (bufs[k] is the buffer of the rank at
// position k of the set; nil buffers compute the steps only) and returns the steps it
// took. The values are computed in the order the steps move them, so the result is what
// that algorithm gives on hardware that reduces in arrival order of its schedule.

// A step is one round in which every rank of the set sends at most linkBytes over one
// link (or, in the mesh algorithms, linkBytes over each of its links at once) and then
// reduces reduceBytes. Its time is alpha + linkBytes*beta + reduceBytes*gamma.
type step struct{ linkBytes, reduceBytes int64 }

// algoSet is the context of one flat algorithm: the buffers of the set, the element
// size and the reduction.
type algoSet struct {
	bufs []([]byte)
	es   int
	red  reducer
}

func (a *algoSet) size() int { return len(a.bufs) }

// values reports whether the set carries data (false: timing only).
func (a *algoSet) values() bool { return a.bufs != nil && a.bufs[0] != nil }

// chunk is the element range of chunk j of q over [lo, hi).
func chunk(lo, hi, j, q int) (int, int) {
	n := hi - lo
	return lo + n*j/q, lo + n*(j+1)/q
}

// maxChunkBytes is the largest chunk of [lo, hi) split in q, in bytes.
func (a *algoSet) maxChunkBytes(lo, hi, q int) int64 {
	return int64((hi-lo+q-1)/q) * int64(a.es)
}

func (a *algoSet) span(k, lo, hi int) []byte { return a.bufs[k][lo*a.es : hi*a.es] }

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// log2Ceil is ceil(log2 n) for n >= 1.
func log2Ceil(n int) int { return bits.Len(uint(n - 1)) }

// --- reduce-scatter: position k ends with chunk k of [lo, hi) reduced over the set ---

// Mesh: every rank sends chunk k to rank k over its own link in one step; rank k reduces
// the q values in position order.
func (a *algoSet) reduceScatterMesh(lo, hi int) []step {
	q := a.size()
	if a.values() {
		for k := range q {
			c0, c1 := chunk(lo, hi, k, q)
			acc := append([]byte(nil), a.span(0, c0, c1)...)
			for j := 1; j < q; j++ {
				a.red(acc, a.span(j, c0, c1))
			}
			copy(a.span(k, c0, c1), acc)
		}
	}
	c := a.maxChunkBytes(lo, hi, q)
	return []step{{c, int64(q-1) * c}}
}

// Ring: in step s rank i sends its partial of chunk (i-s-1) mod q to rank i+1, which adds
// its own; chunk c starts at rank c+1 and ends, complete, at rank c.
func (a *algoSet) reduceScatterRing(lo, hi int) []step {
	q := a.size()
	if a.values() {
		for c := range q {
			c0, c1 := chunk(lo, hi, c, q)
			acc := append([]byte(nil), a.span((c+1)%q, c0, c1)...)
			for s := 2; s <= q; s++ {
				a.red(acc, a.span((c+s)%q, c0, c1))
			}
			copy(a.span(c, c0, c1), acc)
		}
	}
	c := a.maxChunkBytes(lo, hi, q)
	steps := make([]step, q-1)
	for i := range steps {
		steps[i] = step{c, c}
	}
	return steps
}

// Halving-doubling (q a power of two): at distance d = q/2, q/4, ..., 1 rank i and rank
// i^d split the chunks they share; the one without bit d keeps the lower half, adds the
// partner's copy of it to its own, and the partner does the same for the upper half.
func (a *algoSet) reduceScatterHD(lo, hi int) []step {
	q := a.size()
	var steps []step
	first, last := make([]int, q), make([]int, q) // each rank's chunk range [first, last)
	for i := range q {
		first[i], last[i] = 0, q
	}
	for d := q / 2; d >= 1; d /= 2 {
		var moved int64
		next := make([][2]int, q)
		for i := range q {
			f, l := first[i], last[i]
			mid := (f + l) / 2
			if i&d == 0 {
				next[i] = [2]int{f, mid}
			} else {
				next[i] = [2]int{mid, l}
			}
			e0, _ := chunk(lo, hi, next[i][0], q)
			_, e1 := chunk(lo, hi, next[i][1]-1, q)
			moved = max(moved, int64(e1-e0)*int64(a.es))
		}
		if a.values() {
			for i := range q {
				e0, _ := chunk(lo, hi, next[i][0], q)
				_, e1 := chunk(lo, hi, next[i][1]-1, q)
				// The pair writes disjoint halves, each from the other's unchanged half.
				a.red(a.span(i, e0, e1), a.span(i^d, e0, e1))
			}
		}
		for i := range q {
			first[i], last[i] = next[i][0], next[i][1]
		}
		steps = append(steps, step{moved, moved})
	}
	return steps
}

// --- all-gather: position k holds chunk k of [lo, hi); every position ends with all ---

func (a *algoSet) gatherCopy(lo, hi int) {
	if !a.values() {
		return
	}
	q := a.size()
	for k := range q {
		c0, c1 := chunk(lo, hi, k, q)
		for j := range q {
			if j != k {
				copy(a.span(j, c0, c1), a.span(k, c0, c1))
			}
		}
	}
}

func (a *algoSet) allGatherMesh(lo, hi int) []step {
	a.gatherCopy(lo, hi)
	return []step{{a.maxChunkBytes(lo, hi, a.size()), 0}}
}

func (a *algoSet) allGatherRing(lo, hi int) []step {
	a.gatherCopy(lo, hi)
	steps := make([]step, a.size()-1)
	for i := range steps {
		steps[i] = step{a.maxChunkBytes(lo, hi, a.size()), 0}
	}
	return steps
}

// Recursive doubling (q a power of two): the block a rank holds doubles each step.
func (a *algoSet) allGatherHD(lo, hi int) []step {
	a.gatherCopy(lo, hi)
	q := a.size()
	var steps []step
	for d := 1; d < q; d *= 2 {
		steps = append(steps, step{int64(d) * a.maxChunkBytes(lo, hi, q), 0})
	}
	return steps
}

// --- broadcast of [lo, hi) from position root ---

func (a *algoSet) broadcastCopy(lo, hi, root int) {
	if !a.values() {
		return
	}
	for j := range a.size() {
		if j != root {
			copy(a.span(j, lo, hi), a.span(root, lo, hi))
		}
	}
}

// Mesh: the root scatters one chunk to each peer over its links, then a mesh all-gather.
func (a *algoSet) broadcastMesh(lo, hi, root int) []step {
	a.broadcastCopy(lo, hi, root)
	c := a.maxChunkBytes(lo, hi, a.size())
	return []step{{c, 0}, {c, 0}}
}

// Ring: the whole message passed along the ring, one hop a step.
func (a *algoSet) broadcastRing(lo, hi, root int) []step {
	a.broadcastCopy(lo, hi, root)
	steps := make([]step, a.size()-1)
	for i := range steps {
		steps[i] = step{int64(hi-lo) * int64(a.es), 0}
	}
	return steps
}

// Binomial tree: the ranks holding the message double each step.
func (a *algoSet) broadcastTree(lo, hi, root int) []step {
	a.broadcastCopy(lo, hi, root)
	steps := make([]step, log2Ceil(a.size()))
	for i := range steps {
		steps[i] = step{int64(hi-lo) * int64(a.es), 0}
	}
	return steps
}

// --- the halving-doubling fold for a set whose size is not a power of two ---

// foldIn merges the first 2r positions pairwise (2j += 2j+1) so that 2^k positions remain
// (r = q - 2^floor(log2 q)); it returns the remaining positions and the step.
func (a *algoSet) foldIn(lo, hi int) ([]int, step) {
	q := a.size()
	r := q - 1<<(bits.Len(uint(q))-1)
	if a.values() {
		for j := range r {
			a.red(a.span(2*j, lo, hi), a.span(2*j+1, lo, hi))
		}
	}
	keep := make([]int, 0, q-r)
	for j := range r {
		keep = append(keep, 2*j)
	}
	for k := 2 * r; k < q; k++ {
		keep = append(keep, k)
	}
	n := int64(hi-lo) * int64(a.es)
	return keep, step{n, n}
}

// foldOut sends the result back to the positions foldIn merged away. It moves the
// message and reduces nothing.
func (a *algoSet) foldOut(lo, hi int) step {
	q := a.size()
	r := q - 1<<(bits.Len(uint(q))-1)
	if a.values() {
		for j := range r {
			copy(a.span(2*j+1, lo, hi), a.span(2*j, lo, hi))
		}
	}
	return step{int64(hi-lo) * int64(a.es), 0}
}

// subset is the algorithm context of some of the set's positions.
func (a *algoSet) subset(pos []int) *algoSet {
	s := &algoSet{es: a.es, red: a.red, bufs: make([][]byte, len(pos))}
	if a.values() {
		for i, k := range pos {
			s.bufs[i] = a.bufs[k]
		}
	}
	return s
}
