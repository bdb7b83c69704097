package session

import (
	"container/list"
	"errors"
	"strings"
	"sync"

	"pypto/core"
	"pypto/internal/interrupt"
)

// DefaultDevice is the device preset a new session compiles for.
const DefaultDevice = "a2"

// Session holds what eager execution shares: the current device, the compile cache
// and the statistics of the last run.
type Session struct {
	compiler Compiler
	cache    *compileCache

	mu      sync.Mutex // guards device, last, hasLast, runs
	device  string
	last    Stats
	hasLast bool
	runs    uint64 // runs recorded as the latest so far (Stats.Run of the latest)
}

// New returns a session compiling with c for DefaultDevice.
func New(c Compiler) *Session {
	return &Session{compiler: c, cache: newCompileCache(defaultCacheEntries), device: DefaultDevice}
}

var defaultSession = sync.OnceValue(func() *Session { return New(defaultCompiler()) })

// Default is the process-wide session the C ABI uses.
func Default() *Session { return defaultSession() }

// SetDevice selects the device preset later compilations target.
func (s *Session) SetDevice(name string) error {
	canon, err := s.compiler.CheckDevice(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.device = canon
	s.mu.Unlock()
	return nil
}

// Device is the current device preset's name.
func (s *Session) Device() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.device
}

// LastStats returns the statistics of the most recent run in this session (eager or
// executor), and whether there was one.
func (s *Session) LastStats() (Stats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.hasLast
}

func (s *Session) recordStats(st Stats) {
	s.mu.Lock()
	s.runs++
	st.Run = s.runs
	s.last, s.hasLast = st, true
	s.mu.Unlock()
}

// CacheInfo reports on the compile cache.
func (s *Session) CacheInfo() CacheInfo { return s.cache.info() }

// ClearCache drops every compiled program (statistics are kept).
func (s *Session) ClearCache() { s.cache.clear() }

// Realize computes a pending tensor: it gathers the pending subgraph behind t, binds
// the concrete tensors it reaches as graph params, compiles the graph for the current
// device (or reuses the compiled program of an identical graph), runs it and stores
// the result in t, dropping t's inputs. Concurrent calls on the same tensor compute it
// once; concurrent calls on tensors sharing pending inputs are independent.
func (s *Session) Realize(t *Tensor) error {
	_, _, err := s.RealizeStats(t)
	return err
}

// RealizeStats is Realize that also returns the statistics of the run it made, and
// whether it made one (false when t was already computed): the caller learns what this
// realisation cost even while other threads run (LastStats is the process's latest).
func (s *Session) RealizeStats(t *Tensor) (Stats, bool, error) {
	stop := interrupt.Current() // Ctrl-C from now on, compilation included, stops the run
	if t == nil {
		return Stats{}, false, core.Errorf(core.ValueError, "nil tensor")
	}
	if k, _, _ := t.state(); k == concrete {
		return Stats{}, false, nil
	}
	t.realizing.Lock()
	defer t.realizing.Unlock()
	k, _, o := t.state()
	if o == nil {
		o = &op{}
	}
	if k != concrete && t.typ.IsSymbolic() {
		return Stats{}, false, core.Errorf(core.ValueError, "this value has the symbolic shape %s, so it has no data", t.typ.ShapeString()).WithLoc(o.loc).
			Because("symbolic dims (%s) get values only when a compiled executor runs", strings.Join(t.typ.Symbols(), ", ")).
			Suggest("compute it inside a function compiled with p.compile and run the executor on concrete inputs")
	}
	switch k {
	case concrete: // another thread finished it while we waited
		return Stats{}, false, nil
	case placeholder:
		_, err := (&graphBuild{vals: map[*Tensor]core.Value{}}).value(t)
		return Stats{}, false, err
	}
	gb, _ := newGraphBuild("eager", nil)
	v, err := gb.value(t)
	if err != nil {
		return Stats{}, false, err
	}
	gb.b.Output(v)
	g := gb.b.Graph()
	prog, err := s.compile(g)
	if err != nil {
		return Stats{}, false, withLoc(err, o.loc)
	}
	outs, st, err := runProgram(prog, gb.bound, stop)
	if err != nil {
		return Stats{}, false, withLoc(locateIn(err, g), o.loc)
	}
	if len(outs) != 1 || len(outs[0]) != t.typ.Bytes() {
		return Stats{}, false, core.Errorf(core.InternalError, "program returned %d outputs (first %d bytes) for one %v result", len(outs), firstLen(outs), t.typ).WithLoc(o.loc)
	}
	t.setData(outs[0], keepOf(outs[0], gb.keeps))
	s.recordStats(st)
	return st, true, nil
}

func firstLen(b [][]byte) int {
	if len(b) == 0 {
		return -1
	}
	return len(b[0])
}

// compile returns the cached program for g on the current device with the default
// options, compiling it once.
func (s *Session) compile(g *core.Graph) (Program, error) {
	return s.compileOn(g, s.Device(), Config{})
}

// Compile returns the program of g for the session's device, with the default
// options, through its compile cache: a graph structurally equal to one compiled
// before reuses that program.
func (s *Session) Compile(g *core.Graph) (Program, error) { return s.compile(g) }

// compileOn returns the cached program for g on device with cfg, compiling it once.
func (s *Session) compileOn(g *core.Graph, device string, cfg Config) (Program, error) {
	key := graphKey(g) + "\x00device=" + device + "\x00" + cfg.Key()
	return s.cache.get(key, func() (Program, error) { return compileNarrowed(s.compiler, g, device, cfg) })
}

// runProgram runs p; an error is a *core.Error, of kind Interrupted when Ctrl-C
// (internal/interrupt) stopped the call that took stop when it started, so that
// Python raises KeyboardInterrupt (a Ctrl-C while compiling stops the run before it
// starts).
func runProgram(p Program, inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, error) {
	return runProgramIn(p, nil, inputs, stop)
}

// runProgramIn is runProgram in device memory that pool lends, when the program has
// device memory (nil: its own).
func runProgramIn(p Program, pool *MemoryPool, inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, error) {
	if interrupt.Requested(stop) {
		return nil, Stats{}, core.Errorf(core.Interrupted, "interrupted before the run started")
	}
	outs, st, err := narrowedRun(p, inputs, func(p Program, inputs [][]byte) ([][]byte, Stats, error) {
		if pp, ok := p.(pooledProgram); ok && pool != nil {
			return pp.RunIn(pool, inputs, stop)
		}
		return p.Run(inputs, stop)
	})
	if err == nil {
		return outs, st, nil
	}
	if interrupt.Requested(stop) {
		return nil, st, core.Errorf(core.Interrupted, "the run was interrupted: %v", err)
	}
	return nil, st, AsError(core.DeviceError, err)
}

// AsError converts any error into a *core.Error, keeping one that already is.
func AsError(kind core.ErrorKind, err error) *core.Error {
	var ce *core.Error
	if errors.As(err, &ce) {
		return ce
	}
	return core.Errorf(kind, "%v", err)
}

func withLoc(err error, loc core.Location) error {
	return AsError(core.CompileError, err).WithLoc(loc)
}

// locateIn gives a run's error the location of its node in g, the graph run (the
// program may have been compiled from another graph of the same structure).
func locateIn(err error, g *core.Graph) error {
	if ce, ok := err.(*core.Error); ok {
		ce.LocateIn(g)
	}
	return err
}

// compileCache maps graph text + device to compiled programs, least recently used
// first out. Each key compiles once even when several threads ask at the same time.
type compileCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element // of *cacheEntry
	lru     *list.List               // front = most recently used
	stats   CacheInfo
}

type cacheEntry struct {
	key  string
	done chan struct{} // closed when prog/err are set
	prog Program
	err  error
}

// CacheInfo counts compile-cache activity.
type CacheInfo struct {
	Compiles int `json:"compiles"` // programs compiled (successfully or not)
	Hits     int `json:"hits"`     // requests served by an existing program
	Entries  int `json:"entries"`  // programs held now
	Capacity int `json:"capacity"`
}

const defaultCacheEntries = 256

func newCompileCache(max int) *compileCache {
	return &compileCache{max: max, entries: map[string]*list.Element{}, lru: list.New()}
}

func (c *compileCache) get(key string, build func() (Program, error)) (Program, error) {
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		c.stats.Hits++
		c.mu.Unlock()
		<-e.done
		if e.err != nil {
			return nil, e.err
		}
		return e.prog, nil
	}
	e := &cacheEntry{key: key, done: make(chan struct{})}
	c.entries[key] = c.lru.PushFront(e)
	c.stats.Compiles++
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*cacheEntry).key)
	}
	c.mu.Unlock()

	func() {
		defer close(e.done)
		defer func() {
			if r := recover(); r != nil {
				e.err = core.Errorf(core.InternalError, "compiler panic: %v", r)
			}
		}()
		e.prog, e.err = build()
	}()
	if e.err != nil {
		// Errors are not cached: they carry the location of the call that hit them.
		c.mu.Lock()
		if el, ok := c.entries[key]; ok && el.Value.(*cacheEntry) == e {
			c.lru.Remove(el)
			delete(c.entries, key)
		}
		c.mu.Unlock()
		return nil, e.err
	}
	return e.prog, nil
}

func (c *compileCache) info() CacheInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.stats
	i.Entries, i.Capacity = c.lru.Len(), c.max
	return i
}

func (c *compileCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = map[string]*list.Element{}
	c.lru.Init()
}
