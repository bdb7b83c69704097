package device

import (
	"fmt"
	"sort"
	"strings"

	"pypto/isa"
)

// The preset numbers. Sources: "npu-facts" is the section of docs/sources.md so named (public
// figures for 910B-class A2/A3 parts and the 950-class A5); "assumed" means no public
// figure was found and the value is our estimate, to be calibrated against the
// published GEMM measurements later. docs/device.md repeats this table.
const (
	kib = 1024

	// npu-facts: one 16x16x16 fp16/bf16 MAC block per cycle; int8 16x32x16. For fp32
	// we derive 16x8x16 from the same rule the int8 figure follows: the cube consumes
	// one 512-byte fractal of each operand per cycle, and an fp32 fractal is 16x8.
	cubeFractal        = 16
	cubeFractalInt8    = 32
	cubeFractalFloat32 = 8

	vectorBytesPerCycle  = 256 // npu-facts: 256 B per cycle per vector core
	gmReadBytesPerCycle  = 32  // npu-facts: GM (DDR/HBM path) 32 B per cycle per core
	l1ToL0ABytesPerCycle = 512 // npu-facts
	l1ToL0BBytesPerCycle = 256 // npu-facts
	ubToGMBytesPerCycle  = 64  // npu-facts
	// assumed: the fixpipe reads 128 B of fp32 L0C per cycle, so an fp16 result leaves
	// at 64 B per cycle, the same rate npu-facts gives for UB -> GM.
	fixpipeBytesPerCycle = 128

	// assumed: UB has 64 banks of 4 KB; indexed accesses rarely share a 32-byte block,
	// and we take 8 of them per cycle.
	gatherElemsPerCycle = 8
	// assumed: the scalar unit's GM read waits the GM latency of the memory pipes.
	scalarLoadCycles = 200

	issueCycles = 4 // assumed: scalar cost of dispatching one tile instruction
	// assumed: no public figure for the per-pipe instruction queues; deep enough that
	// the scalar unit rarely waits on a pipe in the kernels we run.
	issueQueueDepth   = 32
	flagLatencyCycles = 10 // assumed: set_flag -> wait_flag visibility
	// Task start and end. No public figure splits them; the dispatch is fitted
	// (presets_fitted.go), the others are assumed:
	// assumed: a core's start signal, its PC and first instruction line (an L2 miss).
	coreStartCycles = 500
	// assumed: the kernel's entry reads its argument block from GM: four scalar loads
	// (parameter addresses and sizes) at scalarLoadCycles each.
	prologueCycles = 4 * scalarLoadCycles
	// assumed: the closing pipe barrier and the write-back of the scalar data cache,
	// one GM write latency.
	epilogueCycles = 200
	// assumed: each core writes its completion flag to GM and the AI CPU polls it,
	// about 1 us.
	finalSyncCycles = 1850
	// AscendC exposes EVENT_ID0..EVENT_ID7 per pipe pair.
	flagEventIDs = 8

	// The shared memory system (a2, a5; tiny has none so that its per-core costs stay
	// the plain formulas of the tests).
	l2Bytes = 192 * kib * kib // npu-facts: 192 MB L2 on 910B1
	// assumed: no public figure; 512 B is the GM transfer granule MTE2 is tuned for.
	l2LineBytes          = 512
	l2Ways               = 16  // assumed: no public figure; a common L2 associativity
	l2ReadBytesPerCycle  = 110 // npu-facts: L2 read 110 B per cycle per core
	l2WriteBytesPerCycle = 86  // npu-facts: L2 write 86 B per cycle per core
	// derived: 1.6 TB/s of HBM (npu-facts) at 1.85 GHz is 865 B per cycle for the
	// whole chip, shared by the cores that miss.
	hbmBytesPerCycle = 865
	// assumed: no public figure for how many transfers a DMA pipe keeps in flight; a
	// few descriptors, enough to overlap one transfer's latency with the data of the
	// one before.
	memQueueDepth = 4
	l2HitCycles   = 200 // assumed: the GM latency MTE2 pays without the model
	l2MissCycles  = 500 // assumed: L2 hit latency plus an HBM access

	// Start-up and hand-offs (sim_startup.go; a2, a5).
	// assumed: the device memory is mapped in 2 MB pages (the large pages an
	// accelerator's driver maps its memory in) and a core's TLB holds 64 of them.
	gmPageBytes = 2 * kib * kib
	tlbEntries  = 64
	// assumed: a page walk reads the page table from the L2 (the driver wrote it
	// before the launch): an L2 hit's latency.
	pageWalkCycles = l2HitCycles
	// assumed: a cross-core notification is a flag word in GM that the other core
	// sees through the L2: an L2 hit's latency.
	crossCoreFlagCycles = l2HitCycles
	// assumed: no public figure; the chip's cross-core flag unit passes on one
	// notification every 8 cycles, so that 24 AI cores handing a tile both ways every
	// few hundred cycles keep it busy a good part of the time.
	crossCoreFlagIssueCycles = 8
	// assumed: an AI core initialises its cross-core flag words in GM before its first
	// instruction: an L2 miss's latency.
	crossCoreSetupCycles = l2MissCycles
)

// pipeStartup is the assumed fixed latency per instruction of each pipe: the memory
// pipes pay the latency of their far side (GM most), the compute pipes a short
// pipeline fill. All assumed; the data-proportional part uses the published rates.
func pipeStartup() map[isa.Pipe]int {
	return map[isa.Pipe]int{
		isa.PipeS:    0,
		isa.PipeMTE2: 200, // GM read latency
		isa.PipeMTE3: 100, // GM write (posted)
		isa.PipeFIX:  32,
		isa.PipeMTE1: 16,
		isa.PipeM:    8,
		isa.PipeV:    8,
	}
}

// splitLocations is the A2/A3 split architecture: buffers of the AIC and of the AIV.
func splitLocations() map[isa.CoreKind][]isa.Location {
	return map[isa.CoreKind][]isa.Location{
		isa.Cube:   {isa.Mat, isa.Left, isa.Right, isa.Acc, isa.Bias, isa.Scaling},
		isa.Vector: {isa.Vec},
	}
}

// scalingBytes is the fixpipe / MX scale buffer. Assumed: no public figure; 4 KB holds
// the per-column scales of a 1024-column tile or the MX scales of a 128 x 256 operand.
const scalingBytes = 4 * kib

// buffers builds the buffer table from sizes; alignments are npu-facts' (L1 32 B,
// L0A/L0B 512 B = one fractal, L0C 64 B, UB 32 B) except BT's 64 B and the scaling
// buffer's 32 B, which are assumed.
func buffers(l1, l0a, l0b, l0c, ub, bt int) map[isa.Location]Buffer {
	return map[isa.Location]Buffer{
		isa.Mat:     {Bytes: l1, Align: 32},
		isa.Left:    {Bytes: l0a, Align: 512},
		isa.Right:   {Bytes: l0b, Align: 512},
		isa.Acc:     {Bytes: l0c, Align: 64},
		isa.Vec:     {Bytes: ub, Align: 32},
		isa.Bias:    {Bytes: bt, Align: 64},
		isa.Scaling: {Bytes: scalingBytes, Align: 32},
	}
}

// withRates fills the timing constants shared by every preset (all from the 910B-class
// figures; no separate public rates exist for the other parts).
func withRates(c *Chip) *Chip {
	c.CubeM, c.CubeK, c.CubeN = cubeFractal, cubeFractal, cubeFractal
	c.CubeKInt8, c.CubeKFloat32 = cubeFractalInt8, cubeFractalFloat32
	c.VectorBytesPerCycle = vectorBytesPerCycle
	c.SortBytesPerCycle = fittedSortBytesPerCycle
	c.GMReadBytesPerCycle = gmReadBytesPerCycle
	c.L1ToL0ABytesPerCycle = l1ToL0ABytesPerCycle
	c.L1ToL0BBytesPerCycle = l1ToL0BBytesPerCycle
	c.UBToGMBytesPerCycle = ubToGMBytesPerCycle
	c.FixpipeBytesPerCycle = fixpipeBytesPerCycle
	c.GatherElemsPerCycle = gatherElemsPerCycle
	c.ScalarLoadCycles = scalarLoadCycles
	c.PipeStartup = pipeStartup()
	c.IssueCycles = issueCycles
	c.IssueQueueDepth = issueQueueDepth
	c.MemQueueDepth = memQueueDepth
	c.FlagLatencyCycles = flagLatencyCycles
	c.DispatchCycles, c.CoreStartCycles = fittedDispatchCycles, coreStartCycles
	c.PrologueCycles, c.EpilogueCycles, c.FinalSyncCycles = prologueCycles, epilogueCycles, finalSyncCycles
	c.FlagEventIDs = flagEventIDs
	c.CoreLocations = splitLocations()
	return c
}

// withFractalRows adds the cost per row of fractals of an L1 -> L0 move (a2, a5;
// tiny keeps the plain rate formulas of the tests). Fitted: no public figure, and
// the public rates alone make MTE1 about half as busy as the published GEMM rows
// measure (presets_fitted.go).
func withFractalRows(c *Chip) *Chip {
	c.L1ToL0FractalRowCycles = fittedL1ToL0FractalRowCycles
	return c
}

// withInstrCosts adds the instruction costs fitted to single-instruction
// measurements of a 910B3-class core (a2, a5; tiny keeps the plain repeat formulas of
// the tests): the vector unit's start-up, result latencies, special-function rate,
// reduction tree, register reads, the DMA's strided bursts and a GM read's set-up
// (presets_fitted.go, device/calib/instr.go).
func withInstrCosts(c *Chip) *Chip {
	c.PipeStartup[isa.PipeV] = fittedVectorStartupCycles
	c.VectorFloatLatencyCycles = fittedVectorFloatLatencyCycles
	c.VectorIntLatencyCycles = fittedVectorIntLatencyCycles
	c.VectorScalarFormLatencyCycles = fittedVectorScalarFormLatencyCycles
	c.VectorSFUCyclesPerRepeat = fittedVectorSFUCyclesPerRepeat
	c.VectorReduceRepeatCycles = fittedVectorReduceRepeatCycles
	c.UBScalarReadCycles = fittedUBScalarReadCycles
	c.StridedBurstCycles, c.StridedSectorCycles = fittedStridedBurstCycles, fittedStridedSectorCycles
	c.LoadSetupCycles = fittedLoadSetupCycles
	return c
}

// withL2 adds the shared memory system of the 910B-class part; a5 assumes the same
// (no public L2 figures for it).
func withL2(c *Chip) *Chip {
	c.L2Bytes, c.L2LineBytes, c.L2Ways = l2Bytes, l2LineBytes, l2Ways
	c.L2HitCycles, c.L2MissCycles = l2HitCycles, l2MissCycles
	c.L2ReadBytesPerCycle, c.L2WriteBytesPerCycle = l2ReadBytesPerCycle, l2WriteBytesPerCycle
	c.HBMBytesPerCycle = hbmBytesPerCycle
	// assumed: no public figure for the L2's own limit; it serves every AI core's port
	// (110 B per cycle each) at once, so only HBM and the ports limit a transfer.
	c.L2TotalBytesPerCycle = c.CubeCores * l2ReadBytesPerCycle
	c.GMPageBytes, c.TLBEntries, c.PageWalkCycles = gmPageBytes, tlbEntries, pageWalkCycles
	c.CrossCoreFlagCycles, c.CrossCoreFlagIssueCycles, c.CrossCoreSetupCycles = crossCoreFlagCycles, crossCoreFlagIssueCycles, crossCoreSetupCycles
	return c
}

// Device memory. a2: npu-facts (910B1, 64 GB of HBM). a5: assumed equal to the a2's (no
// public figure). tiny: ours, small like the rest of it.
const (
	a2HBMBytes   = 64 << 30
	tinyHBMBytes = 4 << 30
)

// presets builds a fresh Chip per call so callers may modify what they get.
var presets = map[string]func() *Chip{
	// 910B1-class (npu-facts): 24 AIC + 48 AIV at 1850 MHz, L1 512 KB, L0A/L0B 64 KB,
	// L0C 128 KB, UB 192 KB, BT 1 KB.
	"a2": func() *Chip {
		return withInstrCosts(withFractalRows(withICache(withL2(withRates(&Chip{Name: "a2", CubeCores: 24, VectorCores: 48, ClockHz: 1.85e9, HBMBytes: a2HBMBytes,
			Buffers: buffers(512*kib, 64*kib, 64*kib, 128*kib, 192*kib, 1*kib)})))))
	},
	// 950-class (npu-facts): 32 AIC + 64 AIV at 1650 MHz, L0C 256 KB, UB 248 KB. L1,
	// L0A/L0B, BT and all rates are assumed equal to the A2's.
	"a5": func() *Chip {
		return withInstrCosts(withFractalRows(withICache(withL2(withRates(&Chip{Name: "a5", CubeCores: 32, VectorCores: 64, ClockHz: 1.65e9, HBMBytes: a2HBMBytes,
			Buffers: buffers(512*kib, 64*kib, 64*kib, 256*kib, 248*kib, 1*kib)})))))
	},
	// A deliberately small part (ours): few cores and small buffers so tests exercise
	// tiling and multi-block tasks quickly. Rates and clock are the A2's.
	"tiny": func() *Chip {
		return withRates(&Chip{Name: "tiny", CubeCores: 2, VectorCores: 4, ClockHz: 1.85e9, HBMBytes: tinyHBMBytes,
			Buffers: buffers(64*kib, 16*kib, 16*kib, 32*kib, 32*kib, 1*kib)})
	},
}

// PresetNames lists the known presets in sorted order.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns a fresh copy of the named chip preset.
func Preset(name string) (*Chip, error) {
	mk, ok := presets[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return nil, fmt.Errorf("device: unknown chip preset %q (known: %s)", name, strings.Join(PresetNames(), ", "))
	}
	return mk(), nil
}
