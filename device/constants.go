package device

import "pypto/isa"

// Source says where a preset constant comes from.
type Source string

// The kinds of source of the preset constants.
const (
	Public  Source = "public"  // a published figure (docs/sources.md)
	Derived Source = "derived" // follows from public figures by a stated rule
	Assumed Source = "assumed" // no public figure: our estimate, with the reason
	Fitted  Source = "fitted"  // fitted to the calibration rows (device/calib)
)

// Constant is one timing constant of the presets: its name (the Chip field), where
// it comes from and how to read or change it on a chip (the calibration's sensitivity
// table scales the assumed ones).
type Constant struct {
	Name   string
	Source Source
	Note   string
	Get    func(*Chip) float64
	Set    func(*Chip, float64)
	// Overhead says the constant is part of a task's start or end (TaskStats'
	// StartCycles, EndCycles): it adds to the time without changing what the cores do.
	Overhead bool
}

func intConst(name string, src Source, note string, f func(*Chip) *int) Constant {
	return Constant{Name: name, Source: src, Note: note,
		Get: func(c *Chip) float64 { return float64(*f(c)) },
		Set: func(c *Chip, v float64) { *f(c) = max(0, int(v+0.5)) }}
}

func overhead(c Constant) Constant {
	c.Overhead = true
	return c
}

func startupConst(p isa.Pipe, src Source, note string) Constant {
	return Constant{Name: "PipeStartup[" + p.String() + "]", Source: src, Note: note,
		Get: func(c *Chip) float64 { return float64(c.PipeStartup[p]) },
		Set: func(c *Chip, v float64) { c.PipeStartup[p] = max(0, int(v+0.5)) }}
}

// TimingConstants lists the timing constants of the presets with their sources (the
// buffer sizes and core counts are in presets.go and docs/device.md's preset table).
func TimingConstants() []Constant {
	return []Constant{
		intConst("VectorBytesPerCycle", Public, "npu-facts: 256 B per cycle per vector core", func(c *Chip) *int { return &c.VectorBytesPerCycle }),
		intConst("SortBytesPerCycle", Fitted, "the top-k rows (presets_fitted.go)", func(c *Chip) *int { return &c.SortBytesPerCycle }),
		intConst("GMReadBytesPerCycle", Public, "npu-facts: GM (DDR/HBM path) 32 B per cycle per core", func(c *Chip) *int { return &c.GMReadBytesPerCycle }),
		intConst("L1ToL0ABytesPerCycle", Public, "npu-facts", func(c *Chip) *int { return &c.L1ToL0ABytesPerCycle }),
		intConst("L1ToL0BBytesPerCycle", Public, "npu-facts", func(c *Chip) *int { return &c.L1ToL0BBytesPerCycle }),
		intConst("L1ToL0FractalRowCycles", Fitted, "the GEMM rows' extract busy (presets_fitted.go)", func(c *Chip) *int { return &c.L1ToL0FractalRowCycles }),
		intConst("UBToGMBytesPerCycle", Public, "npu-facts", func(c *Chip) *int { return &c.UBToGMBytesPerCycle }),
		intConst("FixpipeBytesPerCycle", Assumed, "an fp16 result leaves at 64 B/cycle, the UB -> GM figure", func(c *Chip) *int { return &c.FixpipeBytesPerCycle }),
		intConst("GatherElemsPerCycle", Assumed, "each indexed element is its own UB access, 8 per cycle", func(c *Chip) *int { return &c.GatherElemsPerCycle }),
		intConst("ScalarLoadCycles", Assumed, "the GM latency of the memory pipes", func(c *Chip) *int { return &c.ScalarLoadCycles }),
		startupConst(isa.PipeMTE2, Assumed, "GM read latency (without an L2 model)"),
		startupConst(isa.PipeMTE3, Assumed, "GM write latency (posted)"),
		startupConst(isa.PipeFIX, Assumed, "fixpipe fill"),
		startupConst(isa.PipeMTE1, Assumed, "L1 read and format pipeline fill"),
		startupConst(isa.PipeM, Assumed, "cube pipeline fill"),
		startupConst(isa.PipeV, Fitted, "the single-instruction rows (instr-cycles; presets_fitted.go)"),
		intConst("VectorFloatLatencyCycles", Fitted, "the single-instruction rows of float arithmetic", func(c *Chip) *int { return &c.VectorFloatLatencyCycles }),
		intConst("VectorIntLatencyCycles", Fitted, "the int32 tadd, tmul and tadds rows", func(c *Chip) *int { return &c.VectorIntLatencyCycles }),
		intConst("VectorScalarFormLatencyCycles", Fitted, "the float tadds rows", func(c *Chip) *int { return &c.VectorScalarFormLatencyCycles }),
		intConst("VectorSFUCyclesPerRepeat", Fitted, "the tdiv, tdivs and texp rows", func(c *Chip) *int { return &c.VectorSFUCyclesPerRepeat }),
		intConst("VectorReduceRepeatCycles", Fitted, "the trowmax, trowsum and tcolmax rows", func(c *Chip) *int { return &c.VectorReduceRepeatCycles }),
		intConst("UBScalarReadCycles", Fitted, "the trowexpand and tsel rows", func(c *Chip) *int { return &c.UBScalarReadCycles }),
		intConst("StridedBurstCycles", Fitted, "the column-major tload rows", func(c *Chip) *int { return &c.StridedBurstCycles }),
		intConst("StridedSectorCycles", Fitted, "the column-major tload rows", func(c *Chip) *int { return &c.StridedSectorCycles }),
		intConst("LoadSetupCycles", Fitted, "the single-instruction load rows (tloadconv, tload)", func(c *Chip) *int { return &c.LoadSetupCycles }),
		intConst("IssueCycles", Assumed, "scalar cost of dispatching one tile instruction", func(c *Chip) *int { return &c.IssueCycles }),
		intConst("IssueQueueDepth", Assumed, "per-pipe instruction queue", func(c *Chip) *int { return &c.IssueQueueDepth }),
		intConst("FlagLatencyCycles", Assumed, "set_flag -> wait_flag visibility", func(c *Chip) *int { return &c.FlagLatencyCycles }),
		overhead(intConst("DispatchCycles", Fitted, "every calibration row (presets_fitted.go)", func(c *Chip) *int { return &c.DispatchCycles })),
		overhead(intConst("CoreStartCycles", Assumed, "start signal, PC and the first instruction line (an L2 miss)", func(c *Chip) *int { return &c.CoreStartCycles })),
		overhead(intConst("PrologueCycles", Assumed, "four scalar loads of the kernel's arguments", func(c *Chip) *int { return &c.PrologueCycles })),
		overhead(intConst("EpilogueCycles", Assumed, "closing barrier and scalar cache write-back, a GM write latency", func(c *Chip) *int { return &c.EpilogueCycles })),
		overhead(intConst("FinalSyncCycles", Assumed, "completion flags in GM polled by the AI CPU, about 1 us", func(c *Chip) *int { return &c.FinalSyncCycles })),
		intConst("L2LineBytes", Assumed, "the GM transfer granule MTE2 is tuned for", func(c *Chip) *int { return &c.L2LineBytes }),
		intConst("L2Ways", Assumed, "a common associativity", func(c *Chip) *int { return &c.L2Ways }),
		intConst("L2ReadBytesPerCycle", Public, "npu-facts: L2 read 110 B per cycle per core", func(c *Chip) *int { return &c.L2ReadBytesPerCycle }),
		intConst("L2WriteBytesPerCycle", Public, "npu-facts: L2 write 86 B per cycle per core", func(c *Chip) *int { return &c.L2WriteBytesPerCycle }),
		intConst("HBMBytesPerCycle", Derived, "1.6 TB/s (npu-facts) at 1.85 GHz", func(c *Chip) *int { return &c.HBMBytesPerCycle }),
		intConst("L2TotalBytesPerCycle", Assumed, "no public figure: the L2 serves the 24 cores' ports at once", func(c *Chip) *int { return &c.L2TotalBytesPerCycle }),
		intConst("MemQueueDepth", Assumed, "GM transfers a DMA pipe keeps in flight", func(c *Chip) *int { return &c.MemQueueDepth }),
		intConst("L2HitCycles", Assumed, "the GM latency MTE2 pays without the model", func(c *Chip) *int { return &c.L2HitCycles }),
		intConst("L2MissCycles", Assumed, "L2 hit latency plus an HBM access", func(c *Chip) *int { return &c.L2MissCycles }),
		intConst("GMPageBytes", Assumed, "2 MB pages, as an accelerator's driver maps device memory", func(c *Chip) *int { return &c.GMPageBytes }),
		intConst("TLBEntries", Assumed, "pages a core's TLB holds", func(c *Chip) *int { return &c.TLBEntries }),
		intConst("PageWalkCycles", Assumed, "the page table read from the L2: an L2 hit", func(c *Chip) *int { return &c.PageWalkCycles }),
		intConst("CrossCoreFlagCycles", Assumed, "a flag word in GM seen through the L2: an L2 hit", func(c *Chip) *int { return &c.CrossCoreFlagCycles }),
		intConst("CrossCoreFlagIssueCycles", Assumed, "the chip's cross-core flag unit passes one notification on every 8 cycles", func(c *Chip) *int { return &c.CrossCoreFlagIssueCycles }),
		intConst("CrossCoreSetupCycles", Assumed, "an AI core initialises its flag words in GM: an L2 miss", func(c *Chip) *int { return &c.CrossCoreSetupCycles }),
	}
}
