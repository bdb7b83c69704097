package session

import (
	"pypto/core"
	"pypto/lower"
)

// Compiler turns a Tensor Graph into a runnable Program for a named device. The
// default one is the lowering pipeline (lower.Compile on a device preset); tests may
// substitute the reference interpreter.
type Compiler interface {
	// Compile compiles g for device with the options cfg chooses (cfg.Device is
	// already resolved into device); errors are *core.Error.
	Compile(g *core.Graph, device string, cfg Config) (Program, error)
	// CheckDevice returns the canonical name of a device, or an error if it names no
	// known target.
	CheckDevice(device string) (string, error)
}

// estimator is a Compiler that can estimate a program's time without building it, for
// sizing buckets (buckets.go); ok is false when the device has no timing model.
type estimator interface {
	// Estimate is the estimate of g's program for a run whose dynamic sizes
	// (Config.dynamic) have the values run (nil: the program computes everything).
	Estimate(g *core.Graph, device string, cfg Config, run []int) (ms float64, ok bool, err error)
}

// estimateWith asks c for an estimate when it can give one.
func estimateWith(c Compiler, g *core.Graph, device string, cfg Config, run []int) (float64, bool, error) {
	if e, ok := c.(estimator); ok {
		return e.Estimate(g, device, cfg, run)
	}
	return 0, false, nil
}

// Program is a compiled graph. Inputs are one contiguous little-endian buffer per
// graph param, in param order; outputs likewise per graph output. Closing stop asks
// the run to end early (Ctrl-C, internal/interrupt). Run must be safe for concurrent
// use.
type Program interface {
	Run(inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, error)
	Dump() string
}

// memoryPlanner is a Program with a device memory plan (those compiled for a chip).
type memoryPlanner interface {
	MemoryPlan() (lower.MemoryPlan, bool)
}

// visualizer is a Program that exports what the viewer shows of it.
type visualizer interface {
	Visualization() (*lower.Visualization, error)
}

// pooledProgram is a Program that can run in device memory a MemoryPool lends (those
// compiled for a chip; the reference device has no device memory).
type pooledProgram interface {
	RunIn(pool *MemoryPool, inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, error)
}

// layoutReporter is a Program that reports the layout conversions it keeps.
type layoutReporter interface {
	LayoutConversions() []lower.LayoutConversion
}

// Stats describe one run on the simulated device.
type Stats struct {
	Cycles  int64   `json:"cycles"`
	Seconds float64 `json:"seconds"` // simulated time at the chip clock
	// KernelCycles is the part of Cycles the kernels ran (first to last instruction),
	// without the tasks' launch and end; KernelSeconds is it at the chip clock.
	KernelCycles  int64   `json:"kernel_cycles"`
	KernelSeconds float64 `json:"kernel_seconds"`
	Tasks         int     `json:"tasks"` // the tasks the run executed
	// PreparedTasks counts the tasks the run skipped: weight preparation (layout
	// conversions, casts of captured tensors) an earlier run did for the same bytes.
	PreparedTasks int `json:"prepared_tasks"`
	// TimingCachedTasks counts the tasks whose times the device took from its timing
	// cache (an earlier run with the same timing inputs); their values were computed.
	TimingCachedTasks int `json:"timing_cached_tasks"`
	// Memory is the device memory plan of the program that ran (nil on the reference
	// device, which has none).
	Memory *lower.MemoryPlan `json:"memory,omitempty"`
	Detail any               `json:"detail,omitempty"` // the backend's full statistics
	// HBMBytes is the run's traffic with the device memory behind the L2
	// (lower.RunStats.HBMBytesRead + HBMBytesWritten): lines missed or prefetched,
	// stores written through, dirty workspace lines written back.
	HBMBytes int64 `json:"hbm_bytes"`
	// Program names the program a symbolic executor chose for the run: its bucket
	// ("seq_len<=128") or, with a program per size, the binding ("seq_len=100").
	Program string `json:"program,omitempty"`
	// Run numbers the runs of this process in the order they were recorded as its
	// latest (Session.LastStats): a run recorded later has a larger number. Zero in
	// statistics that were not recorded so.
	Run uint64 `json:"run,omitempty"`
}
