package lower

import (
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/internal/checked"
)

// MemoryPlan summarises the GM memory plan of a compiled program: what a run needs of
// device memory at its peak. Every figure counts whole buffers (GM buffers start on
// 512-byte boundaries, so each tensor's bytes are rounded up).
type MemoryPlan struct {
	InputBytes    int `json:"input_bytes"`    // the program's inputs, each in a buffer of its own
	ConstantBytes int `json:"constant_bytes"` // constants the program carries, copied in with the inputs
	OutputBytes   int `json:"output_bytes"`   // its results (a result that is an input is counted as an input)
	// WorkspaceBytes holds the intermediates, whose buffers are reused once their last
	// reader has run; WorkspaceNoReuseBytes is what they would take without reuse.
	WorkspaceBytes        int `json:"workspace_bytes"`
	WorkspaceNoReuseBytes int `json:"workspace_no_reuse_bytes"`
	PeakBytes             int `json:"peak_bytes"` // all of it: the device memory a run needs
}

// MemoryPlan reports the plan of g.
func (g *ExecGraph) MemoryPlan() MemoryPlan {
	m := MemoryPlan{WorkspaceBytes: g.WorkspaceBytes, WorkspaceNoReuseBytes: g.WorkspaceNoReuse, PeakBytes: g.GMBytes}
	tg := g.Blocks.Tiles
	for i, t := range tg.Tensors {
		if t.Alias != 0 {
			continue // its bytes are its owner's
		}
		switch t.Role {
		case RoleInput:
			m.InputBytes += g.Buffers[i].Bytes
		case RoleOutput:
			m.OutputBytes += g.Buffers[i].Bytes
		}
	}
	return m
}

func (m MemoryPlan) String() string {
	return fmt.Sprintf("peak %d bytes: inputs %d, constants %d, outputs %d, workspace %d (%d without reuse)",
		m.PeakBytes, m.InputBytes, m.ConstantBytes, m.OutputBytes, m.WorkspaceBytes, m.WorkspaceNoReuseBytes)
}

// checkDeviceSizes refuses a graph with a value larger than the chip's device memory
// before anything is tiled or planned for it (a huge value would otherwise become
// millions of tiles first), naming the value's op and line.
func checkDeviceSizes(chip *device.Chip, g *core.Graph) error {
	for _, n := range g.Nodes {
		b, ok := checked.Bytes(n.Type.Shape, n.Type.DType.Size())
		if !ok {
			b = -1
		}
		if err := chip.CheckGM(b, func() string { return "the value of " + n.Op + ", of type " + n.Type.String() + "," }); err != nil {
			return core.MemoryErrorOf(err).WithLoc(n.Loc)
		}
	}
	return nil
}

// runCheckMemoryPool refuses a plan that needs more device memory than the pool the
// program must run in (Options.MemoryPoolBytes; 0 means no limit).
func runCheckMemoryPool(c *compilation) error {
	pool := c.opts.MemoryPoolBytes
	m := c.exec.MemoryPlan()
	if pool == 0 || m.PeakBytes <= pool {
		return nil
	}
	e := core.Errorf(core.CompileError, "the program needs %d bytes of device memory, but the memory pool holds %d", m.PeakBytes, pool).
		Because("the memory plan's %s", m)
	if m.InputBytes+m.OutputBytes > pool {
		e.Because("its inputs and outputs alone take %d bytes", m.InputBytes+m.OutputBytes)
	}
	return e.Suggest("raise memory_pool_bytes to at least %d, or compute in smaller pieces (fewer rows per call, a narrower dtype)", m.PeakBytes)
}

// MemoryPlan reports the device memory the program needs; its constants, which are
// params to the execution graph, are told apart from the caller's inputs.
func (e *Executable) MemoryPlan() MemoryPlan {
	m := e.exec.MemoryPlan()
	params := e.exec.Blocks.Tiles.Params
	for _, t := range params[len(params)-len(e.constants):] {
		m.InputBytes -= e.exec.Buffers[t].Bytes
		m.ConstantBytes += e.exec.Buffers[t].Bytes
	}
	return m
}
