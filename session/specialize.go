package session

import (
	"container/list"
	"sync"

	"pypto/core"
)

// maxSpecializations bounds how many bindings one symbolic executor keeps compiled;
// the least recently used goes first (the session's compile cache may still hold it).
const maxSpecializations = 64

// specialization is a symbolic executor's program for one binding of its symbols.
type specialization struct {
	binding core.Binding
	key     string
	once    sync.Once // compiles prog (or sets err) once, however many runs ask at once
	prog    Program
	err     error
	ready   bool // prog is compiled; guarded by specializations.mu
}

// specializations is a symbolic executor's cache of programs, one per binding.
type specializations struct {
	mu     sync.Mutex
	max    int
	byKey  map[string]*list.Element // of *specialization
	lru    *list.List               // front: most recently used
	recent *specialization          // the last one a run used
}

func newSpecializations(max int) *specializations {
	return &specializations{max: max, byKey: map[string]*list.Element{}, lru: list.New()}
}

// get returns the entry of b, adding an uncompiled one if there is none.
func (c *specializations) get(b core.Binding) *specialization {
	key := b.Key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*specialization)
	}
	sp := &specialization{binding: b, key: key}
	c.byKey[key] = c.lru.PushFront(sp)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.byKey, old.Value.(*specialization).key)
	}
	return sp
}

func (c *specializations) drop(sp *specialization) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[sp.key]; ok && el.Value.(*specialization) == sp {
		c.lru.Remove(el)
		delete(c.byKey, sp.key)
	}
}

func (c *specializations) markLatest(sp *specialization) {
	c.mu.Lock()
	c.recent, sp.ready = sp, true
	c.mu.Unlock()
}

func (c *specializations) latest() *specialization {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recent
}

// len counts the compiled programs held.
func (c *specializations) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if el.Value.(*specialization).ready {
			n++
		}
	}
	return n
}
