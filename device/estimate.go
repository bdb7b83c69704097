package device

import (
	"sync"

	"pypto/dtype"
	"pypto/isa"
)

// Estimates are the device's timing model asked before a program runs, for the
// compiler's choices (its tile search): a task estimate is a timing-only run of the
// task's machine programs (RunOptions{NoValues: true, estimate: true}), so every mechanism the
// simulator models (pipes, flags, queues, the memory system, the launch) reaches the
// choice, and an estimate of a whole task is exactly the time a run of it reports.
// Bound is the cheap part: a lower bound from the chip's peak rates, which a search
// uses to rank candidates before it times the promising ones.

// EstimateTask is the simulated time in cycles of a task of one core kind, as RunTask
// runs it, on a scratch GM of gmBytes (a timing-only run reads and writes no values;
// the blocks' param addresses must lie in it).
func EstimateTask(chip *Chip, kind isa.CoreKind, blocks []Block, gmBytes int) (int64, error) {
	gm := scratchGM(gmBytes)
	defer scratch.Put(gm)
	st, err := RunTask(chip, *gm, kind, blocks, RunOptions{NoValues: true, estimate: true})
	if err != nil {
		return 0, err
	}
	return st.Cycles, nil
}

// EstimateGroupTask is EstimateTask for a mixed task, as RunGroupTask runs it.
func EstimateGroupTask(chip *Chip, groups []Group, gmBytes int) (int64, error) {
	gm := scratchGM(gmBytes)
	defer scratch.Put(gm)
	st, err := RunGroupTask(chip, *gm, groups, RunOptions{NoValues: true, estimate: true})
	if err != nil {
		return 0, err
	}
	return st.Cycles, nil
}

// scratch holds GM images for estimates: a timing-only run never reads their bytes,
// so they are reused as they are.
var scratch sync.Pool

func scratchGM(n int) *[]byte {
	if p, ok := scratch.Get().(*[]byte); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n)
	return &b
}

// Share is the chip as one of n cores (AI cores for a mixed task) working at the same
// time sees it: its own pipes, buffers and L2 port, and 1/n of the HBM bandwidth they
// all share. Timing one core's blocks on it estimates a task of such cores for a
// fraction of the simulation, assuming that the cores run alike (the blocks of a tiled
// op do), so that each gets an equal share of HBM for the whole task; n counts the
// cores whose traffic is its own (cores reading the same lines fetch them once into
// the shared L2, which keeps its whole size).
func (c *Chip) Share(n int) *Chip {
	s := *c
	if n > 1 && s.HBMBytesPerCycle > 0 {
		s.HBMBytesPerCycle = max(1, s.HBMBytesPerCycle/n)
	}
	return &s
}

// Work is what the busiest core of a task must do, counted by the compiler from the
// kernel it would emit, and what the whole task must move through HBM.
type Work struct {
	DType       dtype.DType // the cube's operand dtype (for its MACs per cycle)
	MACs        int64       // cube multiply-accumulates, padding included
	LoadBytes   int64       // GM -> L1 / UB bytes (MTE2), queue pops included
	StoreBytes  int64       // L0C / UB -> GM bytes (FIX / MTE3)
	VectorBytes int64       // bytes of the vector instructions' regions (V)
	// L0ABytes and L0BBytes are the bytes MTE1 moves from L1 into L0A and L0B, and
	// L0FractalRows the rows of fractals those moves write (what each pays
	// L1ToL0FractalRowCycles for); zero when the caller does not count them.
	L0ABytes, L0BBytes, L0FractalRows int64
	// Starts counts instructions per pipe, each of which holds its pipe for the pipe's
	// startup at least (loads are counted by their bytes only: their latency may
	// overlap other transfers).
	Starts map[isa.Pipe]int64
	Instrs int64 // instructions the core's scalar unit issues
	// HBMBytes is what the whole task moves through HBM at least (cold reads, writes).
	HBMBytes int64
}

// Bound is a lower bound on the cycles of a task whose busiest core does w: the launch
// plus the busiest of its pipes at the chip's peak rates (the cube's MACs, loads at
// the fastest path, L1 -> L0 moves, stores, the vector unit, the startups of their instructions, the
// issue of every instruction) and the task's HBM bytes at the HBM rate. Latency,
// dependencies and contention only add to it, which is what a simulation measures.
func (c *Chip) Bound(w Work) int64 {
	load := c.GMReadBytesPerCycle
	if c.L2Bytes > 0 {
		load = max(load, c.L2ReadBytesPerCycle)
	}
	store := max(c.FixpipeBytesPerCycle, c.UBToGMBytesPerCycle)
	pipes := map[isa.Pipe]int64{
		isa.PipeM:    ceilDiv(w.MACs, c.CubeMACsPerCycle(w.DType)),
		isa.PipeMTE2: ceilDiv(w.LoadBytes, load),
		isa.PipeFIX:  ceilDiv(w.StoreBytes, store),
		isa.PipeV:    ceilDiv(w.VectorBytes, c.VectorBytesPerCycle),
		isa.PipeMTE1: ceilDiv(w.L0ABytes, c.L1ToL0ABytesPerCycle) + ceilDiv(w.L0BBytes, c.L1ToL0BBytesPerCycle) + w.L0FractalRows*int64(c.L1ToL0FractalRowCycles),
		isa.PipeS:    w.Instrs * int64(c.IssueCycles),
	}
	for p, n := range w.Starts {
		if p != isa.PipeMTE2 {
			pipes[p] += n * int64(c.PipeStartup[p])
		}
	}
	busiest := int64(0)
	for _, u := range pipes {
		busiest = max(busiest, u)
	}
	if c.L2Bytes > 0 {
		busiest = max(busiest, ceilDiv(w.HBMBytes, c.HBMBytesPerCycle))
	}
	return int64(c.TaskOverheadCycles()) + busiest
}
