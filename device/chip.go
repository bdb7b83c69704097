package device

import (
	"fmt"
	"maps"
	"slices"

	"pypto/dtype"
	"pypto/isa"
)

// Buffer describes one on-chip buffer of a core: its size and the alignment every tile
// placed in it must respect.
type Buffer struct {
	Bytes int
	Align int
}

// Chip is everything the backend and the simulator know about a target: core counts,
// buffers and the rates of the timing model. Every number is documented in presets.go
// and docs/device.md with its source, or marked "assumed". A Chip is plain data: copy a
// preset and change fields to explore a design; Validate says whether it is usable.
type Chip struct {
	Name        string
	CubeCores   int     // AIC count
	VectorCores int     // AIV count
	ClockHz     float64 // core clock; cycles / ClockHz = seconds
	// HBMBytes is the device memory (GM) a program's tensors live in; 0 means no limit.
	HBMBytes int

	// Buffers holds the per-core buffer of each location (one copy per core).
	Buffers map[isa.Location]Buffer
	// CoreLocations lists the buffers each kind of core has. On the split A2/A3
	// architecture the AIC has L1/L0A/L0B/L0C/BT and the AIV has only UB, so a program
	// that names a buffer its core lacks is rejected by Compile.
	CoreLocations map[isa.CoreKind][]isa.Location

	// Cube throughput: one CubeM x CubeK x CubeN block of MACs per cycle for fp16/bf16,
	// CubeM x CubeKInt8 x CubeN for int8 and CubeM x CubeKFloat32 x CubeN for fp32.
	CubeM, CubeK, CubeN     int
	CubeKInt8, CubeKFloat32 int

	VectorBytesPerCycle int // V pipe, per repeat of one vector instruction
	// SortBytesPerCycle is the rate of one compare-exchange pass of TSORT32 and
	// TMRGSORT over the (value, index) pairs they write.
	SortBytesPerCycle    int
	GMReadBytesPerCycle  int // MTE2, GM -> L1 / UB, per core
	L1ToL0ABytesPerCycle int // MTE1, L1 -> L0A
	L1ToL0BBytesPerCycle int // MTE1, L1 -> L0B
	// L1ToL0FractalRowCycles is what an L1 -> L0 move (MTE1) pays per row of
	// fractals of its destination (16 rows) besides its bytes at the rates above: the
	// move goes row of fractals by row, each a transfer of its own (0: the rates alone).
	L1ToL0FractalRowCycles int
	UBToGMBytesPerCycle    int // MTE3, UB -> GM
	FixpipeBytesPerCycle   int // FIX, bytes of L0C read per cycle (L0C -> GM / UB)
	// GatherElemsPerCycle is how many indexed UB elements (TGATHER, TGATHERB,
	// TSCATTER) the vector pipe moves per cycle: each is its own access.
	GatherElemsPerCycle int
	// ScalarLoadCycles is what an SLD (a GM read by the scalar unit) stalls issue for.
	ScalarLoadCycles int

	// PipeStartup is the fixed latency every instruction of a pipe pays before its
	// data-proportional part (queue dispatch, address generation, memory latency).
	PipeStartup map[isa.Pipe]int

	// The vector unit's instruction costs beyond one repeat per cycle
	// (ops_vector_cost.go; 0 on a chip without them: the plain repeat formulas).
	// A vector instruction occupies the pipe for its start-up and repeats; its result
	// is ready a latency later (VectorFloatLatencyCycles for float arithmetic,
	// VectorIntLatencyCycles for integer arithmetic, VectorScalarFormLatencyCycles for
	// a float tile-scalar form, none for logic, moves and fills), which an
	// instruction reading or overwriting it waits for; independent instructions
	// overlap it.
	VectorFloatLatencyCycles      int
	VectorIntLatencyCycles        int
	VectorScalarFormLatencyCycles int
	// VectorSFUCyclesPerRepeat is the cycles a repeat of a division or an exponential
	// or logarithm takes per source operand (the special-function path); 0 or 1: the
	// plain rate.
	VectorSFUCyclesPerRepeat int
	// VectorReduceRepeatCycles is what a row reduction pays per repeat of its source:
	// a whole-repeat reduction tree, not pipelined from one repeat to the next
	// (0: one cycle a repeat).
	VectorReduceRepeatCycles int
	// UBScalarReadCycles is what reading one UB element into a register costs: a
	// row broadcast (TROWEXPAND) reads each row's value, a select each row's mask.
	UBScalarReadCycles int
	// The DMA's cost of a strided window into UB (one column per burst, as a
	// column-major GM matrix read into a row-major tile is): StridedBurstCycles per
	// burst and StridedSectorCycles per 32-byte sector of it, when slower than the
	// port's rate.
	StridedBurstCycles  int
	StridedSectorCycles int
	// LoadSetupCycles is the part of a GM read's wait for its first data that MTE2
	// spends setting the transfer up (decoding it, generating its addresses) before
	// its requests go out; the rest is the memory's latency. L2HitCycles and
	// L2MissCycles count from the read's start, set-up included, so it moves no time:
	// it says what the trace's Latency leaves out and a measurement of the instruction
	// counts (sim_memsys.go, readWait; 0: the whole wait is the memory's).
	LoadSetupCycles int
	// IssueCycles is what the scalar pipe spends dispatching one instruction; it bounds
	// how fast short instructions can follow each other.
	IssueCycles int
	// IssueQueueDepth is how many issued instructions a pipe's queue holds before it
	// starts them; when the queue of the next instruction's pipe is full, the scalar
	// unit waits until its head starts. It bounds how far issue runs ahead of a slow
	// pipe.
	IssueQueueDepth int
	// FlagLatencyCycles is the time from a SET_FLAG completing on its pipe until a
	// WAIT_FLAG on the destination pipe can see it.
	FlagLatencyCycles int
	// Task start and end: a task takes StartCycles() before its cores' first
	// instructions, then the busiest core's kernel time, then EndCycles(). Each part is
	// its own constant (presets.go gives the source of each).
	DispatchCycles  int // the AI CPU hands the task's blocks to the cores
	CoreStartCycles int // a core, from its start signal to its program's first instruction
	PrologueCycles  int // the kernel's entry before its first tile instruction (reading its arguments)
	EpilogueCycles  int // after a core's last pipe finishes: the kernel's closing barrier
	FinalSyncCycles int // from the last core's end to the task's completion seen by the AI CPU
	// FlagEventIDs is the number of event ids per (source pipe, destination pipe).
	FlagEventIDs int

	// Memory system shared by the cores (sim_memsys.go). With L2Bytes == 0 there is
	// none: every core reads GM at GMReadBytesPerCycle whatever the others do.
	// Otherwise TLOADs go through an L2 of L2Bytes in L2LineBytes lines, L2Ways-way
	// set-associative (hashed set index, LRU within a set), shared by all cores of a
	// task: lines that hit stream at L2ReadBytesPerCycle per core, lines that miss at
	// the core's share of
	// HBMBytesPerCycle (the total HBM rate divided among the cores with a missing
	// load in flight, at most L2ReadBytesPerCycle, the core's port), after
	// L2HitCycles or, if any line misses, L2MissCycles of latency (these replace
	// MTE2's PipeStartup for TLOAD). Stores write their lines into L2
	// (write-allocate) at no extra cost.
	L2Bytes     int
	L2LineBytes int
	// L2TotalBytesPerCycle is what the L2 moves per cycle for all cores together
	// (hits, fills and writes); HBMBytesPerCycle likewise for the HBM behind it.
	L2TotalBytesPerCycle int
	// MemQueueDepth is how many GM transfers one pipe keeps in flight: a transfer
	// occupies its pipe while its data moves, and its latency overlaps the transfers
	// before it, up to this many.
	MemQueueDepth        int
	L2Ways               int
	L2HitCycles          int
	L2MissCycles         int
	L2ReadBytesPerCycle  int
	L2WriteBytesPerCycle int
	HBMBytesPerCycle     int

	// Address translation (sim_startup.go): each core translates GM addresses through
	// a TLB of TLBEntries pages of GMPageBytes (LRU); a transfer touching a page the
	// TLB lacks waits PageWalkCycles first (0 entries: no translation cost).
	GMPageBytes, TLBEntries, PageWalkCycles int
	// Cross-core flags (sim_startup.go): a queue entry pushed by one core is seen by
	// the popping core CrossCoreFlagCycles after the push ends (a freed slot likewise
	// by the pushing core), and every such notification of the task's cores goes
	// through the chip's cross-core flag unit, one each CrossCoreFlagIssueCycles in
	// the order they are sent. A mixed task sets its cores' flags up before they
	// start: CrossCoreSetupCycles more of start-up.
	CrossCoreFlagCycles, CrossCoreFlagIssueCycles, CrossCoreSetupCycles int

	// Instruction fetch (sim_icache.go): machine instructions of InstrBytes, fetched
	// through a per-core cache of ICacheBytes (0: fetch is free) in ICacheLineBytes
	// lines, ICacheWays-way; a miss stalls issue ICacheMissCycles, a line following
	// the last missed one streams in at ICacheFetchBytesPerCycle.
	InstrBytes               int
	ICacheBytes              int
	ICacheLineBytes          int
	ICacheWays               int
	ICacheMissCycles         int
	ICacheFetchBytesPerCycle int
}

// Cores is the number of cores of a kind (0 for an invalid kind).
func (c *Chip) Cores(kind isa.CoreKind) int {
	switch kind {
	case isa.Cube:
		return c.CubeCores
	case isa.Vector:
		return c.VectorCores
	}
	return 0
}

// Capacity is the size in bytes of one core's buffer at loc (0 if the chip has none).
func (c *Chip) Capacity(loc isa.Location) int { return c.Buffers[loc].Bytes }

// Alignment is the byte alignment of tile addresses at loc (1 if unspecified).
func (c *Chip) Alignment(loc isa.Location) int {
	if a := c.Buffers[loc].Align; a > 0 {
		return a
	}
	return 1
}

// HasLocation reports whether a core of the given kind has the buffer loc.
func (c *Chip) HasLocation(kind isa.CoreKind, loc isa.Location) bool {
	return slices.Contains(c.CoreLocations[kind], loc)
}

// corePipes are the pipes each kind of core has (docs/sources.md, "npu-facts").
var corePipes = map[isa.CoreKind][]isa.Pipe{
	isa.Cube:   {isa.PipeS, isa.PipeMTE2, isa.PipeMTE1, isa.PipeM, isa.PipeFIX},
	isa.Vector: {isa.PipeS, isa.PipeMTE2, isa.PipeV, isa.PipeMTE3},
}

// HasPipe reports whether a core of the given kind has pipe p.
func HasPipe(kind isa.CoreKind, p isa.Pipe) bool { return slices.Contains(corePipes[kind], p) }

// CubeKStep is the K depth the cube consumes per cycle for operands of dtype dt.
func (c *Chip) CubeKStep(dt dtype.DType) int {
	switch dt {
	case dtype.Int8:
		return c.CubeKInt8
	case dtype.Float32:
		return c.CubeKFloat32
	}
	return c.CubeK
}

// CubeMACsPerCycle is the cube's peak multiply-accumulates per cycle for dtype dt.
func (c *Chip) CubeMACsPerCycle(dt dtype.DType) int { return c.CubeM * c.CubeKStep(dt) * c.CubeN }

// StartCycles is a task's time before its cores run their first instruction:
// dispatch, core start and the kernel's prologue.
func (c *Chip) StartCycles() int { return c.DispatchCycles + c.CoreStartCycles + c.PrologueCycles }

// EndCycles is a task's time after its busiest core's last instruction: the kernel's
// epilogue and the final synchronisation.
func (c *Chip) EndCycles() int { return c.EpilogueCycles + c.FinalSyncCycles }

// TaskOverheadCycles is what a task costs beyond its cores' kernel time.
func (c *Chip) TaskOverheadCycles() int { return c.StartCycles() + c.EndCycles() }

// Seconds converts cycles of this chip to seconds.
func (c *Chip) Seconds(cycles int64) float64 { return float64(cycles) / c.ClockHz }

// Validate checks that every field the backend and simulator divide by or size
// buffers with is usable, so a hand-edited chip fails with a message, not a panic.
func (c *Chip) Validate() error {
	if c == nil {
		return fmt.Errorf("device: nil chip")
	}
	bad := func(what string, v any) error {
		return fmt.Errorf("device: chip %q: %s must be positive, got %v", c.Name, what, v)
	}
	positives := []struct {
		name string
		v    int
	}{
		{"CubeCores", c.CubeCores}, {"VectorCores", c.VectorCores},
		{"CubeM", c.CubeM}, {"CubeK", c.CubeK}, {"CubeN", c.CubeN}, {"CubeKInt8", c.CubeKInt8}, {"CubeKFloat32", c.CubeKFloat32},
		{"VectorBytesPerCycle", c.VectorBytesPerCycle}, {"SortBytesPerCycle", c.SortBytesPerCycle}, {"GMReadBytesPerCycle", c.GMReadBytesPerCycle},
		{"L1ToL0ABytesPerCycle", c.L1ToL0ABytesPerCycle}, {"L1ToL0BBytesPerCycle", c.L1ToL0BBytesPerCycle},
		{"UBToGMBytesPerCycle", c.UBToGMBytesPerCycle}, {"FixpipeBytesPerCycle", c.FixpipeBytesPerCycle},
		{"GatherElemsPerCycle", c.GatherElemsPerCycle}, {"IssueQueueDepth", c.IssueQueueDepth}, {"MemQueueDepth", c.MemQueueDepth},
		{"FlagEventIDs", c.FlagEventIDs},
	}
	for _, p := range positives {
		if p.v <= 0 {
			return bad(p.name, p.v)
		}
	}
	if !(c.ClockHz > 0) {
		return bad("ClockHz", c.ClockHz)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"IssueCycles", c.IssueCycles}, {"FlagLatencyCycles", c.FlagLatencyCycles}, {"ScalarLoadCycles", c.ScalarLoadCycles},
		{"DispatchCycles", c.DispatchCycles}, {"CoreStartCycles", c.CoreStartCycles}, {"PrologueCycles", c.PrologueCycles},
		{"EpilogueCycles", c.EpilogueCycles}, {"FinalSyncCycles", c.FinalSyncCycles}, {"L1ToL0FractalRowCycles", c.L1ToL0FractalRowCycles},
		{"VectorFloatLatencyCycles", c.VectorFloatLatencyCycles}, {"VectorIntLatencyCycles", c.VectorIntLatencyCycles},
		{"VectorScalarFormLatencyCycles", c.VectorScalarFormLatencyCycles}, {"VectorSFUCyclesPerRepeat", c.VectorSFUCyclesPerRepeat},
		{"VectorReduceRepeatCycles", c.VectorReduceRepeatCycles}, {"UBScalarReadCycles", c.UBScalarReadCycles},
		{"GMPageBytes", c.GMPageBytes}, {"TLBEntries", c.TLBEntries}, {"PageWalkCycles", c.PageWalkCycles},
		{"CrossCoreFlagCycles", c.CrossCoreFlagCycles}, {"CrossCoreFlagIssueCycles", c.CrossCoreFlagIssueCycles}, {"CrossCoreSetupCycles", c.CrossCoreSetupCycles},
		{"StridedBurstCycles", c.StridedBurstCycles}, {"StridedSectorCycles", c.StridedSectorCycles}, {"LoadSetupCycles", c.LoadSetupCycles}} {
		if n.v < 0 {
			return fmt.Errorf("device: chip %q: %s must not be negative, got %d", c.Name, n.name, n.v)
		}
	}
	if err := c.validateICache(); err != nil {
		return err
	}
	if c.TLBEntries > 0 && c.GMPageBytes <= 0 {
		return bad("GMPageBytes (with a TLB)", c.GMPageBytes)
	}
	if c.L2Bytes < 0 {
		return fmt.Errorf("device: chip %q: L2Bytes must not be negative, got %d", c.Name, c.L2Bytes)
	}
	if c.L2Bytes > 0 {
		for _, p := range []struct {
			name string
			v    int
		}{{"L2LineBytes", c.L2LineBytes}, {"L2Ways", c.L2Ways}, {"L2ReadBytesPerCycle", c.L2ReadBytesPerCycle}, {"L2WriteBytesPerCycle", c.L2WriteBytesPerCycle}, {"HBMBytesPerCycle", c.HBMBytesPerCycle}} {
			if p.v <= 0 {
				return bad(p.name+" (with an L2)", p.v)
			}
		}
		if c.L2Ways > maxL2Ways {
			return fmt.Errorf("device: chip %q: L2Ways is %d, more than the %d ways the simulator's L2 directory counts per set; use at most %d", c.Name, c.L2Ways, maxL2Ways, maxL2Ways)
		}
		if c.L2HitCycles < 0 || c.L2MissCycles < 0 {
			return fmt.Errorf("device: chip %q: L2 latencies must not be negative, got %d / %d", c.Name, c.L2HitCycles, c.L2MissCycles)
		}
	}
	for p, v := range c.PipeStartup {
		if v < 0 {
			return fmt.Errorf("device: chip %q: startup latency of pipe %s is negative (%d)", c.Name, p, v)
		}
	}
	for _, kind := range []isa.CoreKind{isa.Cube, isa.Vector} {
		for _, loc := range c.CoreLocations[kind] {
			b := c.Buffers[loc]
			if b.Bytes <= 0 {
				return fmt.Errorf("device: chip %q: %s cores have a %s buffer of %d bytes", c.Name, kind, loc, b.Bytes)
			}
			if b.Align < 0 || (b.Align > 0 && b.Align&(b.Align-1) != 0) {
				return fmt.Errorf("device: chip %q: %s alignment %d is not a power of two", c.Name, loc, b.Align)
			}
		}
	}
	return nil
}

// Clone is a deep copy of the chip: editing the copy's maps leaves c as it is.
func (c *Chip) Clone() *Chip {
	d := *c
	d.Buffers = maps.Clone(c.Buffers)
	d.PipeStartup = maps.Clone(c.PipeStartup)
	d.CoreLocations = make(map[isa.CoreKind][]isa.Location, len(c.CoreLocations))
	for k, v := range c.CoreLocations {
		d.CoreLocations[k] = slices.Clone(v)
	}
	return &d
}

// WithAICores is the chip as a kernel limited to n of its AI cores sees it (the
// vendor's block dimension): n cube cores and their vector cores, the rest of the
// chip (its L2, HBM, rates and buffers) as it is. Programs compiled for it run on it
// and on the whole chip alike (the same Name); runs on it place blocks on those n AI
// cores only. n must be in [1, CubeCores].
func (c *Chip) WithAICores(n int) (*Chip, error) {
	if n < 1 || n > c.CubeCores {
		return nil, fmt.Errorf("device: chip %q has %d AI cores (each a cube core and %d vector cores); a kernel may use 1 to %d of them, not %d",
			c.Name, c.CubeCores, c.VectorCores/max(1, c.CubeCores), c.CubeCores, n)
	}
	d := c.Clone()
	per := c.VectorCores / max(1, c.CubeCores)
	d.CubeCores, d.VectorCores = n, n*per
	return d, nil
}
