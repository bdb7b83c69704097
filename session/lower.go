package session

import (
	"strings"

	"pypto/core"
	"pypto/device"
	"pypto/lower"
)

// Lowering is the Compiler that runs the real pipeline: lower.Compile for a device
// preset, programs run on the simulated NPU.
func Lowering() Compiler { return loweringCompiler{} }

type loweringCompiler struct{}

func (loweringCompiler) CheckDevice(name string) (string, error) {
	chip, err := device.Preset(name)
	if err != nil {
		return "", core.Errorf(core.ValueError, "unknown device %q", name).
			Suggest("choose one of the chip presets: %s", strings.Join(device.PresetNames(), ", "))
	}
	return chip.Name, nil
}

func (loweringCompiler) Estimate(g *core.Graph, name string, cfg Config, run []int) (float64, bool, error) {
	ms, err := estimateProgram(g, name, cfg, run)
	return ms, err == nil, err
}

func (c loweringCompiler) Compile(g *core.Graph, name string, cfg Config) (Program, error) {
	chip, err := device.Preset(name)
	if err != nil {
		return nil, core.Errorf(core.ValueError, "unknown device %q", name)
	}
	opts := cfg.options()
	opts.Chip = chip
	exe, err := lower.Compile(g, opts)
	if err != nil {
		return nil, AsError(core.CompileError, err)
	}
	return loweredProgram{exe, cfg.MaxSteps}, nil
}

// loweredProgram adapts a lower.Executable, which is immutable and safe to run from
// several goroutines at once.
type loweredProgram struct {
	exe      *lower.Executable
	maxSteps int64 // per block; 0: the simulator's default
}

func (p loweredProgram) Dump() string { return p.exe.Dump() }

func (p loweredProgram) Run(inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, error) {
	return p.RunIn(nil, inputs, stop)
}

// RunIn runs the program in device memory the pool lends (nil: its own).
func (p loweredProgram) RunIn(pool *MemoryPool, inputs [][]byte, stop <-chan struct{}) ([][]byte, Stats, error) {
	var gm lower.GMAllocator
	if pool != nil {
		gm = pool
	}
	outs, st, err := p.exe.RunIn(gm, inputs, device.RunOptions{MaxInstructions: p.maxSteps, Interrupt: stop})
	if err != nil {
		return nil, Stats{}, AsError(core.DeviceError, err)
	}
	m := p.exe.MemoryPlan()
	return outs, Stats{Cycles: st.Cycles, Seconds: st.Seconds, KernelCycles: st.KernelCycles, HBMBytes: st.HBMBytesRead + st.HBMBytesWritten,
		KernelSeconds: st.KernelSeconds, Tasks: st.Ran(), PreparedTasks: st.Skipped, TimingCachedTasks: st.TimingCached(), Memory: &m, Detail: st}, nil
}

// MemoryPlan is the device memory the program needs.
func (p loweredProgram) MemoryPlan() (lower.MemoryPlan, bool) { return p.exe.MemoryPlan(), true }

// UpdateCopies are the slice_updates the compiled program computes on a copy.
func (p loweredProgram) UpdateCopies() []lower.UpdateCopy { return p.exe.UpdateCopies() }

// LayoutConversions are the layout conversions the compiled program keeps.
func (p loweredProgram) LayoutConversions() []lower.LayoutConversion {
	return p.exe.LayoutConversions()
}

// Visualization is what the viewer shows of the program (compiled with Visualize).
func (p loweredProgram) Visualization() (*lower.Visualization, error) { return p.exe.Visualization() }
