package lower

import (
	"hash/maphash"
	"sync"
)

// weightCache keeps the prepared weights of an executable's runs (prepare_weights.go):
// for each set of weight bytes seen, the bytes of every prepared tensor, so that a
// later run with the same weights copies them in and skips the weight-prep tasks.
// Runs are keyed by a hash of the weights the preparation reads, taken each run, so a
// caller that changes a weight's bytes gets them prepared again, never stale results.
type weightCache struct {
	once sync.Once
	seed maphash.Seed
	// sources are the positions, among a run's inputs (constants included), of the
	// weights that weight-prep ops read; prepared are the tensors they leave for the
	// other tasks; skip marks the weight-prep tasks.
	sources  []int
	prepared []int
	skip     []bool

	mu      sync.Mutex
	entries []weightEntry // the most recently used first
}

// weightCacheEntries is how many sets of weights an executable keeps prepared (several
// executors may share one program, each with weights of its own).
const weightCacheEntries = 4

type weightEntry struct {
	key uint64
	// valued is false for an entry from a run that computed no values
	// (RunOptions.NoValues): only such runs may use it.
	valued bool
	data   [][]byte // per prepared tensor
}

// init finds what the cache needs from e's execution graph, once.
func (c *weightCache) init(e *Executable) {
	c.once.Do(func() {
		c.seed = maphash.MakeSeed()
		tg := e.exec.Blocks.Tiles
		c.skip = make([]bool, len(e.exec.Tasks))
		prep := false
		for k, t := range e.exec.Tasks {
			c.skip[k] = e.exec.WeightPrep(t)
			prep = prep || c.skip[k]
		}
		if !prep {
			c.skip = nil
			return
		}
		c.prepared = preparedTensors(tg)
		param := map[int]int{}
		for i, t := range tg.Params {
			param[t] = i
		}
		seen := map[int]bool{}
		for _, op := range tg.Ops {
			if !op.WeightPrep {
				continue
			}
			for _, in := range op.Inputs {
				if i, ok := param[root(tg.Tensors, in)]; ok && !seen[i] {
					seen[i] = true
					c.sources = append(c.sources, i)
				}
			}
		}
	})
}

// key hashes the weights a run's preparation reads.
func (c *weightCache) key(inputs [][]byte) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	for _, i := range c.sources {
		maphash.WriteComparable(&h, len(inputs[i]))
		h.Write(inputs[i])
	}
	return h.Sum64()
}

// lookup returns the prepared bytes for key, usable by a run that computes values
// when valued is set.
func (c *weightCache) lookup(key uint64, valued bool) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, en := range c.entries {
		if en.key == key && (en.valued || !valued) {
			copy(c.entries[1:i+1], c.entries[:i])
			c.entries[0] = en
			return en.data
		}
	}
	return nil
}

// store keeps a run's prepared bytes for key.
func (c *weightCache) store(key uint64, valued bool, data [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, en := range c.entries {
		if en.key == key {
			if valued || !en.valued {
				c.entries[i] = weightEntry{key, valued, data}
			}
			return
		}
	}
	c.entries = append([]weightEntry{{key, valued, data}}, c.entries...)
	if len(c.entries) > weightCacheEntries {
		c.entries = c.entries[:weightCacheEntries]
	}
}

// prepare is a run's use of the cache once its inputs are in gm: with prepared bytes
// for these weights, it copies them in and returns the tasks to skip; otherwise it
// returns no skips and a function that keeps what the run prepared, to call once the
// run has succeeded.
func (e *Executable) prepare(gm []byte, inputs [][]byte, noValues bool) (skip []bool, keep func()) {
	c := &e.weights
	c.init(e)
	if c.skip == nil {
		return nil, func() {}
	}
	key := c.key(inputs)
	if data := c.lookup(key, !noValues); data != nil {
		for j, t := range c.prepared {
			copy(gm[e.exec.Buffers[t].Offset:], data[j])
		}
		return c.skip, func() {}
	}
	return nil, func() {
		tg := e.exec.Blocks.Tiles
		data := make([][]byte, len(c.prepared))
		for j, t := range c.prepared {
			off := e.exec.Buffers[t].Offset
			data[j] = append([]byte(nil), gm[off:off+tg.Tensors[t].Type.Bytes()]...)
		}
		c.store(key, !noValues, data)
	}
}
