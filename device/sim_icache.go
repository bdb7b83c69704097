package device

import "fmt"

// Instruction fetch. The scalar unit fetches every instruction it issues through a
// per-core instruction cache, so code size costs time: a loop whose body fits the
// cache misses on its first iteration only, straight-line code misses on every line
// once (and a program larger than the cache on every line of every pass).
//
// The model: a program occupies InstrBytes per machine instruction (flags and
// scalar instructions included) from a code address of its own, the same for every
// block that runs it on the core; the cache holds ICacheBytes in lines of
// ICacheLineBytes, ICacheWays-way set-associative with LRU replacement, and keeps
// its contents across the blocks a core runs in one task (a task starts with it
// empty). A miss stalls issue for ICacheMissCycles, except that a line following the
// last missed one streams in at ICacheFetchBytesPerCycle (the fetch unit reads ahead
// along straight-line code). With ICacheBytes 0 fetch is free (tiny).

// The constants of a2 and a5 (all assumed: there is no public figure for the AI
// core's instruction fetch).
const (
	// assumed: a tile instruction issues with its operand set-up (addresses, strides,
	// repeat counts), about eight 4-byte scalar words.
	instrBytes = 32
	// assumed: 32 KB, 4-way, 128-byte lines, a common size for the instruction cache
	// of an in-order control core.
	icacheBytes     = 32 << 10
	icacheWays      = 4
	icacheLineBytes = 128
	// assumed: a line comes from the L2 at the hit latency this model assumes for
	// data (l2HitCycles), and later lines of straight-line code stream in over a
	// 16-byte fetch path, one word per cycle (two cycles per instruction, half the
	// issue cost: straight-line code issues at two thirds of a loop's rate).
	icacheMissCycles         = 200
	icacheFetchBytesPerCycle = 16
)

// withICache adds the instruction cache of a2 and a5.
func withICache(c *Chip) *Chip {
	c.InstrBytes = instrBytes
	c.ICacheBytes, c.ICacheWays, c.ICacheLineBytes = icacheBytes, icacheWays, icacheLineBytes
	c.ICacheMissCycles, c.ICacheFetchBytesPerCycle = icacheMissCycles, icacheFetchBytesPerCycle
	return c
}

// validateICache checks the instruction cache fields of a chip that has one.
func (c *Chip) validateICache() error {
	switch {
	case c.ICacheBytes == 0:
		return nil
	case c.ICacheBytes < 0 || c.ICacheMissCycles < 0:
		return fmt.Errorf("device: chip %q: ICacheBytes and ICacheMissCycles must not be negative, got %d / %d", c.Name, c.ICacheBytes, c.ICacheMissCycles)
	case min(c.InstrBytes, c.ICacheLineBytes, c.ICacheWays, c.ICacheFetchBytesPerCycle) <= 0:
		return fmt.Errorf("device: chip %q: with an instruction cache, InstrBytes, ICacheLineBytes, ICacheWays and ICacheFetchBytesPerCycle must be positive, got %d, %d, %d, %d",
			c.Name, c.InstrBytes, c.ICacheLineBytes, c.ICacheWays, c.ICacheFetchBytesPerCycle)
	case c.ICacheLineBytes%c.InstrBytes != 0:
		return fmt.Errorf("device: chip %q: ICacheLineBytes (%d) must be a multiple of InstrBytes (%d)", c.Name, c.ICacheLineBytes, c.InstrBytes)
	}
	return nil
}

// icache is one core's instruction cache.
type icache struct {
	sets     [][]int64                 // line addresses per set, most recently used first
	base     map[*MachineProgram]int64 // code address of each program the core ran
	next     int64                     // where the next program's code goes
	prog     *MachineProgram           // the program fetched from last
	progBase int64                     // its code address
	lastLine int64                     // the line fetched last, the first of its set (-1: none)
	// linePC and perLine are the pcs of prog in lastLine: linePC .. linePC+perLine-1.
	linePC, perLine int
	lastMiss        int64 // line address of the last miss (-2: none)
	misses          int64
	stalls          int64 // cycles issue waited for fetches
}

// fetch returns the cycles issue stalls to fetch instruction pc of m.
func (c *coreSim) fetch(m *MachineProgram, pc int) int64 {
	ch := c.chip
	if ch.ICacheBytes <= 0 {
		return 0
	}
	ic := &c.icache
	if m == ic.prog && uint(pc-ic.linePC) < uint(ic.perLine) {
		return 0 // in the line fetched last (as the line test below finds, without dividing)
	}
	if ic.sets == nil {
		ic.sets = make([][]int64, max(1, ch.ICacheBytes/(ch.ICacheLineBytes*ch.ICacheWays)))
		ic.base = map[*MachineProgram]int64{}
		ic.prog, ic.lastLine = nil, -1
	}
	if m != ic.prog {
		b, ok := ic.base[m]
		if !ok {
			b = ic.next
			ic.base[m] = b
			size := int64(len(m.Instrs) * ch.InstrBytes)
			line := int64(ch.ICacheLineBytes)
			ic.next += (size + line - 1) / line * line
		}
		ic.prog, ic.progBase, ic.lastMiss = m, b, -2 // another program: its first line does not stream
	}
	line := (ic.progBase + int64(pc*ch.InstrBytes)) / int64(ch.ICacheLineBytes)
	if line == ic.lastLine {
		return 0 // still the most recent line of its set
	}
	ic.lastLine = line
	ic.perLine = ch.ICacheLineBytes / ch.InstrBytes // a program starts on a line
	ic.linePC = int((line*int64(ch.ICacheLineBytes) - ic.progBase) / int64(ch.InstrBytes))
	set := &ic.sets[line%int64(len(ic.sets))]
	for i, l := range *set {
		if l == line {
			copy((*set)[1:i+1], (*set)[:i])
			(*set)[0] = line
			return 0
		}
	}
	if len(*set) < ch.ICacheWays {
		*set = append(*set, 0)
	}
	copy((*set)[1:], (*set)[:len(*set)-1])
	(*set)[0] = line
	ic.misses++
	cost := int64(ch.ICacheMissCycles)
	if line == ic.lastMiss+1 {
		cost = int64(ch.ICacheLineBytes / ch.ICacheFetchBytesPerCycle)
	}
	ic.lastMiss = line
	ic.stalls += cost
	if c.blocksDone == 0 {
		c.startupStall += cost // the first block's lines: the kernel starting
	}
	return cost
}
