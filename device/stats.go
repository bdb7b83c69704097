package device

import (
	"fmt"
	"sort"
	"strings"

	"pypto/isa"
)

// TaskStats is what one RunTask measured. Cycles are in the chip's clock.
type TaskStats struct {
	Chip    string
	Kind    isa.CoreKind // CoreInvalid for a mixed task
	Mixed   bool         // a RunGroupTask: CoreCycles and ActiveCores count AI cores
	ClockHz float64

	// Cycles is the task's time: StartCycles, then KernelCycles, then EndCycles.
	Cycles int64
	// KernelCycles is the busiest core's time from its first instruction to its last
	// pipe's end (the sum over its blocks); StartCycles (dispatch, core start, the
	// kernel's prologue) comes before it and EndCycles (epilogue, final sync) after.
	KernelCycles           int64
	StartCycles, EndCycles int64
	// CoreCycles is each core's time (the sum over the blocks it ran, each with its
	// prologue and epilogue), indexed by core; cores that ran no block have 0.
	CoreCycles  []int64
	ActiveCores int // cores that ran at least one block
	Blocks      int

	// PipeBusy is the time each pipe spent executing instructions, summed over cores.
	PipeBusy       map[isa.Pipe]int64
	GMBytesRead    int64
	GMBytesWritten int64
	// FootprintRead and FootprintWritten count distinct GM bytes read and written
	// (each byte once, however often the blocks touched it): the HBM traffic of the
	// task when its data fits the L2.
	FootprintRead, FootprintWritten int64
	Instructions                    int64 // machine instructions executed, flags included
	// L2Hits and L2Misses count the L2 lines TLOADs found and missed (both 0 on a
	// chip without an L2 model and in functional runs).
	L2Hits, L2Misses int64
	// PrefetchedBytes counts the bytes of L2 lines the cores' first loads found
	// prefetched (RunOptions.PrefetchBytes).
	PrefetchedBytes int64
	// HBMBytesRead and HBMBytesWritten count the bytes that crossed the HBM during
	// the task's kernel (0 without an L2 model): the fills of the L2 lines its TLOADs
	// missed, whole lines (its L2Misses' lines; PrefetchedBytes crossed before the
	// kernel), and its stores written through and the dirty lines of a shared L2 its
	// misses evicted. The bandwidth calendar holds them to the chip's
	// HBMBytesPerCycle, so their sum over KernelCycles never exceeds it.
	HBMBytesRead, HBMBytesWritten int64
	// ICacheMisses counts the instruction cache lines the cores missed, and
	// FetchStallCycles the issue time they waited for them (sim_icache.go).
	ICacheMisses, FetchStallCycles int64
	// StartupCycles is what the task paid between its launch and its cores' steady
	// state: StartCycles (dispatch, core start, the first prologue) and the largest
	// of its cores' own start-up (CoreStartupCycles). CoreStartupCycles is, per core
	// (indexed as CoreCycles), its first block's instruction-cache stalls, its page
	// walks (first touches of GM pages) and a mixed task's cross-core flag set-up
	// (sim_startup.go). CoreSharedWaitCycles is, per core, the time its transfers and
	// hand-offs waited for what other cores held: the L2's and the HBM's bandwidth,
	// lines another core was filling, the cross-core flag unit; SharedWaitCycles
	// their sum.
	StartupCycles                           int64
	CoreStartupCycles, CoreSharedWaitCycles []int64
	SharedWaitCycles                        int64
	// TimingCached says the times came from the timing cache: the task ran before
	// with the same timing inputs, and only its values were computed this time
	// (sim_timing_cache.go).
	TimingCached bool
	// HighWater is the highest buffer byte any block of the task used, per location.
	HighWater map[isa.Location]int

	// Trace has one event per executed instruction when RunOptions.Trace is set, in
	// core order and, per core, in start-time order.
	Trace []TraceEvent
	// Prints is the output of the TPRINT instructions, in core order and, per core,
	// in execution order.
	Prints []PrintRecord
}

// PrintRecord is what one TPRINT printed: the tile's valid region in the reference
// interpreter's format, and where and when it ran (task cycles).
type PrintRecord struct {
	Kind            isa.CoreKind
	Core, Block, PC int
	Cycle           int64
	Text            string
}

// Output is the text of every TPRINT of the task, concatenated in Prints order.
func (s *TaskStats) Output() string {
	var b strings.Builder
	for _, p := range s.Prints {
		b.WriteString(p.Text)
	}
	return b.String()
}

// TraceEvent is one instruction's execution: on which core, block and pipe, and when.
// Times are task cycles (the launch overhead comes first).
type TraceEvent struct {
	Kind            isa.CoreKind // the kind of core (a mixed task has both)
	Core, Block, PC int
	Pipe            isa.Pipe
	Op              isa.Opcode
	// Start is when the instruction started on its pipe, Free when the pipe could
	// start the next one, End when it completed: its last byte arrived (a GM
	// transfer) or its result was ready (a vector instruction's latency). Free is End
	// for the other instructions.
	Start, Free, End int64
	// Latency is the memory's access latency a GM transfer's End includes (a read's
	// L2 hit or miss latency less MTE2's set-up, Chip.LoadSetupCycles; a store's
	// completion in L2), 0 for other instructions.
	Latency int64
	// Flag is the event a SET_FLAG sets or a WAIT_FLAG waits for (zero for the rest).
	Flag FlagEvent
}

// Cycles is the instruction's time from its start to its completion: what a
// measurement of the instruction alone sees.
func (e TraceEvent) Cycles() int64 { return e.End - e.Start }

// Occupancy is the cycles the instruction held its pipe: a transfer's data, a vector
// instruction's start-up and repeats.
func (e TraceEvent) Occupancy() int64 { return e.Free - e.Start }

// FlagEvent is one flag event of a core: from pipe Src to pipe Dst, with event id ID.
type FlagEvent struct {
	Src, Dst isa.Pipe
	ID       int
}

// BusyRatio is the fraction of the task's time a pipe was busy, averaged over the
// cores that ran blocks (the figure the published GEMM measurements report per unit).
func (s *TaskStats) BusyRatio(p isa.Pipe) float64 {
	if s.Cycles <= 0 || s.ActiveCores == 0 {
		return 0
	}
	return float64(s.PipeBusy[p]) / (float64(s.Cycles) * float64(s.ActiveCores))
}

// L2HitRate is the fraction of the lines TLOADs read that hit in L2 (0 with none).
func (s *TaskStats) L2HitRate() float64 {
	if n := s.L2Hits + s.L2Misses; n > 0 {
		return float64(s.L2Hits) / float64(n)
	}
	return 0
}

// setTime sets the task's time from its busiest core's time, which holds each of its
// blocks' prologue and epilogue (coreSim.addBlock).
func (s *TaskStats) setTime(chip *Chip, longest int64) {
	s.KernelCycles = max(0, longest-int64(chip.PrologueCycles+chip.EpilogueCycles))
	s.StartCycles, s.EndCycles = int64(chip.StartCycles()), int64(chip.EndCycles())
	s.Cycles = s.StartCycles + s.KernelCycles + s.EndCycles
}

// KernelSeconds is KernelCycles at the chip's clock.
func (s *TaskStats) KernelSeconds() float64 {
	if s.ClockHz <= 0 {
		return 0
	}
	return float64(s.KernelCycles) / s.ClockHz
}

// Seconds is Cycles at the chip's clock.
func (s *TaskStats) Seconds() float64 {
	if s.ClockHz <= 0 {
		return 0
	}
	return float64(s.Cycles) / s.ClockHz
}

// String summarises the stats on a few lines (for logs and bench output).
func (s *TaskStats) String() string {
	var b strings.Builder
	kind := s.Kind.String()
	if s.Mixed {
		kind = "mixed"
	}
	fmt.Fprintf(&b, "%s task on %s: %d cycles (%.3f us; kernel %d, start %d, end %d), %d blocks on %d cores, %d instructions\n",
		kind, s.Chip, s.Cycles, s.Seconds()*1e6, s.KernelCycles, s.StartCycles, s.EndCycles, s.Blocks, s.ActiveCores, s.Instructions)
	fmt.Fprintf(&b, "  GM read %d B, written %d B", s.GMBytesRead, s.GMBytesWritten)
	if s.L2Hits+s.L2Misses > 0 {
		fmt.Fprintf(&b, ", L2 hit rate %.1f%%", 100*s.L2HitRate())
	}
	b.WriteString("\n")
	pipes := make([]isa.Pipe, 0, len(s.PipeBusy))
	for p := range s.PipeBusy {
		pipes = append(pipes, p)
	}
	sort.Slice(pipes, func(i, j int) bool { return pipes[i] < pipes[j] })
	b.WriteString("  busy")
	for _, p := range pipes {
		fmt.Fprintf(&b, " %s=%.1f%%", p, 100*s.BusyRatio(p))
	}
	b.WriteString("\n")
	return b.String()
}

// addStartup fills the start-up and shared-wait figures from the cores (of a task
// whose CoreCycles has n entries, indexed by core).
func (s *TaskStats) addStartup(sims []*coreSim, n int) {
	s.CoreStartupCycles, s.CoreSharedWaitCycles = make([]int64, n), make([]int64, n)
	var most int64
	for _, c := range sims {
		if c.index < n {
			s.CoreStartupCycles[c.index] += c.startupStall
			s.CoreSharedWaitCycles[c.index] += c.sharedWait
		}
		most = max(most, c.startupStall)
		s.SharedWaitCycles += c.sharedWait
	}
	s.StartupCycles = s.StartCycles + most
}
