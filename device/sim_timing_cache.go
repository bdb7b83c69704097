package device

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sync"
	"unsafe"

	"pypto/isa"
)

// The timing cache keeps what the timing loop of a task found (each core's cycles,
// busy times and counters, the L2's hits and misses, which core ran each block), so
// that a task run again exactly as before computes only its values.
//
// It applies where the timing loop runs apart from the values (runSharedTask): then
// the loop runs without values (RunOptions.NoValues) and its registers come from
// immediates and params alone (valuesApart excludes SLD and the queues), so what it
// finds is a function of its inputs: the chip's constants, the programs, the params'
// addresses, GM's size, the cores and the options that reach the timing. The cache's
// key is all of them (timingKey), compared in full, so an entry is reused only for
// the same inputs; the race checker's verdict is part of the same function (a run
// that failed keeps nothing). Programs are named by their pointer and the hash of
// their instructions the program cache checks at each task (program_cache.go), so a
// program changed in place is a new key; a program on its first run has no hash and
// its task keeps nothing (the task's next run does).
//
// checkTimingCache makes every hit run the loop anyway and compare: the tests run
// with it (TestMain, and PYPTO_CHECK_TIMING_CACHE=1 for the Python tests, which the
// C library reads as it loads), which would show a timing input the key misses.
var (
	timingCache = timingStore{entries: map[string]*timingRecord{}}
	// checkTimingCache re-simulates each hit and fails the task on a difference.
	checkTimingCache = os.Getenv("PYPTO_CHECK_TIMING_CACHE") == "1"
)

// CheckTimingCache(true) makes every hit of the timing cache run the timing loop
// anyway and fail the task if the times differ: for tests, which then show any
// timing input the cache's key would miss. Set it before running tasks.
func CheckTimingCache(on bool) { checkTimingCache = on }

// timingCacheEntries and timingCacheBytes bound the kept tasks; the oldest goes first.
// An entry is its key (a few dozen bytes a block) and about a hundred bytes a core, so
// the byte bound is the one that holds for tasks of thousands of blocks.
const (
	timingCacheEntries = 1024
	timingCacheBytes   = 64 << 20
)

// timingStore is the kept tasks, by key, their order of arrival and their size.
type timingStore struct {
	mu      sync.Mutex
	entries map[string]*timingRecord
	order   []string
	bytes   int
}

// timingRecord is what a timing loop leaves that the task's stats read.
type timingRecord struct {
	cores                   []coreTiming
	placed                  []int
	hits, misses, prefetchd int64
	hbmRead, hbmWritten     int64
	// l2 is the directory's lookups in a shared L2, replayed on a hit so that the
	// run's later tasks find the L2 as the loop left it.
	l2 []l2Op
}

// coreTiming is one core's share of a timingRecord.
type coreTiming struct {
	cycles                    int64
	busy                      [numPipes]int64
	gmRead, gmWritten, instrs int64
	icMisses, icStalls        int64
	startup, sharedWait       int64
}

// timingKey is the inputs of a task's timing loop, or ok false when it has none that
// can be kept: a program on its first run (no hash yet), a trace or a pause.
func timingKey(chip *Chip, kind isa.CoreKind, gmBytes int, blocks []Block, cores int, sims []*coreSim, opts RunOptions) (key string, ok bool) {
	if opts.Trace || opts.Pause != nil || len(sims) == 0 {
		return "", false
	}
	b := make([]byte, 0, 256+16*len(blocks))
	b = fmt.Appendf(b, "%+v|", *chip) // maps print in key order
	put := func(v int64) { b = binary.LittleEndian.AppendUint64(b, uint64(v)) }
	put(int64(kind))
	put(int64(gmBytes))
	put(int64(cores))
	put(int64(len(blocks)))
	put(opts.PrefetchBytes)
	put(opts.MaxInstructions)
	if s := opts.L2; s != nil { // the L2's contents, named by what ran before
		if !s.known {
			return "", false
		}
		put(int64(s.history))
	}
	if opts.BalanceBlocks {
		put(1)
	} else {
		put(0)
	}
	infos := sims[0].progs
	var last *MachineProgram
	for i := range blocks {
		blk := &blocks[i]
		if blk.Prog != last { // consecutive blocks mostly share a program
			last = blk.Prog
			h := infos.of(blk.Prog).hash
			if h == 0 {
				return "", false
			}
			put(int64(uintptr(unsafe.Pointer(blk.Prog))))
			put(int64(h))
		}
		put(int64(len(blk.ParamAddrs)))
		for _, a := range blk.ParamAddrs {
			put(int64(a))
		}
	}
	for _, c := range sims {
		put(c.start)
		put(c.prefetchLeft)
	}
	return string(b), true
}

// lookup returns the record kept under key, if any.
func (s *timingStore) lookup(key string) *timingRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[key]
}

// keep records what the timing loop of sims found under key.
func (s *timingStore) keep(key string, sims []*coreSim, placed []int) {
	rec := recordTiming(sims, placed)
	size := len(key) + rec.size()
	if size > timingCacheBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.entries[key]; ok {
		s.bytes += rec.size() - old.size()
		s.entries[key] = rec
		return
	}
	for len(s.order) > 0 && (len(s.order) >= timingCacheEntries || s.bytes+size > timingCacheBytes) {
		first := s.order[0]
		s.bytes -= len(first) + s.entries[first].size()
		delete(s.entries, first)
		s.order = s.order[1:]
	}
	s.entries[key] = rec
	s.order = append(s.order, key)
	s.bytes += size
}

// size is about the bytes the record holds.
func (rec *timingRecord) size() int {
	return len(rec.cores)*int(unsafe.Sizeof(coreTiming{})) + 8*len(rec.placed) + int(unsafe.Sizeof(l2Op{}))*len(rec.l2) + int(unsafe.Sizeof(*rec))
}

// clear empties the cache (tests).
func (s *timingStore) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries, s.order, s.bytes = map[string]*timingRecord{}, nil, 0
}

func recordTiming(sims []*coreSim, placed []int) *timingRecord {
	rec := &timingRecord{cores: make([]coreTiming, len(sims)), placed: append([]int(nil), placed...)}
	for i, c := range sims {
		rec.cores[i] = coreTiming{cycles: c.cycles, busy: c.busy, gmRead: c.gmRead, gmWritten: c.gmWritten,
			instrs: c.instrs, icMisses: c.icache.misses, icStalls: c.icache.stalls, startup: c.startupStall, sharedWait: c.sharedWait}
	}
	if m := sims[0].mem; m != nil {
		rec.hits, rec.misses, rec.prefetchd, rec.hbmRead, rec.hbmWritten = m.hits, m.misses, m.prefetched, m.hbmRead, m.hbmWritten
		rec.l2 = slices.Clone(m.log)
	}
	return rec
}

// apply puts the record into the task's cores, as their timing loop would have.
func (rec *timingRecord) apply(sims []*coreSim, placed []int) {
	for i, c := range sims {
		t := &rec.cores[i]
		c.cycles, c.busy, c.gmRead, c.gmWritten, c.instrs = t.cycles, t.busy, t.gmRead, t.gmWritten, t.instrs
		c.icache.misses, c.icache.stalls = t.icMisses, t.icStalls
		c.startupStall, c.sharedWait = t.startup, t.sharedWait
	}
	copy(placed, rec.placed)
	if m := sims[0].mem; m != nil {
		m.hits, m.misses, m.prefetched, m.hbmRead, m.hbmWritten = rec.hits, rec.misses, rec.prefetchd, rec.hbmRead, rec.hbmWritten
		m.l2.replay(rec.l2)
	}
}

// same reports the first difference between two records, "" when there is none.
func (rec *timingRecord) same(o *timingRecord) string {
	if len(rec.cores) != len(o.cores) {
		return fmt.Sprintf("%d cores against %d", len(rec.cores), len(o.cores))
	}
	for i := range rec.cores {
		if rec.cores[i] != o.cores[i] {
			return fmt.Sprintf("core %d: %+v against %+v", i, rec.cores[i], o.cores[i])
		}
	}
	for i := range rec.placed {
		if rec.placed[i] != o.placed[i] {
			return fmt.Sprintf("block %d on core %d against %d", i, rec.placed[i], o.placed[i])
		}
	}
	if rec.hits != o.hits || rec.misses != o.misses || rec.prefetchd != o.prefetchd || rec.hbmRead != o.hbmRead || rec.hbmWritten != o.hbmWritten {
		return fmt.Sprintf("L2 %d/%d/%d/%d/%d against %d/%d/%d/%d/%d", rec.hits, rec.misses, rec.prefetchd, rec.hbmRead, rec.hbmWritten, o.hits, o.misses, o.prefetchd, o.hbmRead, o.hbmWritten)
	}
	if !slices.Equal(rec.l2, o.l2) {
		return fmt.Sprintf("%d L2 lookups against %d", len(rec.l2), len(o.l2))
	}
	return ""
}
