package lower

import (
	"fmt"
	"sort"

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
	// PreparedBytes holds the results of weight preparation (layout conversions and
	// casts of weights) that runs keep between them (prepare_weights.go).
	PreparedBytes int `json:"prepared_bytes"`
	PeakBytes     int `json:"peak_bytes"` // all of it: the device memory a run needs
}

// MemoryPlan reports the plan of g.
func (g *ExecGraph) MemoryPlan() MemoryPlan {
	m := MemoryPlan{WorkspaceBytes: g.WorkspaceBytes, WorkspaceNoReuseBytes: g.WorkspaceNoReuse, PreparedBytes: g.PreparedBytes, PeakBytes: g.GMBytes}
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
	s := fmt.Sprintf("peak %d bytes: inputs %d, constants %d, outputs %d, workspace %d (%d without reuse)",
		m.PeakBytes, m.InputBytes, m.ConstantBytes, m.OutputBytes, m.WorkspaceBytes, m.WorkspaceNoReuseBytes)
	if m.PreparedBytes > 0 {
		s += fmt.Sprintf(", prepared weights %d", m.PreparedBytes)
	}
	return s
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
// program must run in (Options.MemoryPoolBytes; 0 means no limit), naming the largest
// tensors live at the plan's peak and the lines that made them.
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
	peak := c.exec.livePeak()
	e.Because("at its peak (task %d of %d) %d bytes are live; the largest tensors then:", peak.task+1, len(c.exec.Tasks), peak.bytes)
	for _, t := range peak.largest(5) {
		e.Because("  %s", describeGMTensor(c.graph, c.exec, t))
	}
	return e.Suggest("make the pool at least %d bytes (p.MemoryPool(size=%d)), or compute in smaller pieces (fewer rows per call, a narrower dtype)", m.PeakBytes, m.PeakBytes)
}

// memoryPeak is the step of a run where the most GM bytes are live.
type memoryPeak struct {
	task, bytes int
	live        []int // owner tensors live then
	sizes       []int // their buffers' bytes
}

// largest returns up to n of the live tensors, largest first.
func (p memoryPeak) largest(n int) []int {
	idx := make([]int, len(p.live))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p.sizes[idx[a]] > p.sizes[idx[b]] })
	out := make([]int, 0, n)
	for _, i := range idx[:min(n, len(idx))] {
		out = append(out, p.live[i])
	}
	return out
}

// livePeak finds the task during which the tensors live (inputs, outputs and the
// intermediates between their first and last task) take the most bytes.
func (g *ExecGraph) livePeak() memoryPeak {
	tg := g.Blocks.Tiles
	live := liveRanges(g)
	best := memoryPeak{bytes: -1}
	for ti := range max(len(g.Tasks), 1) {
		p := memoryPeak{task: ti}
		for i, t := range tg.Tensors {
			if t.Alias != 0 || live[i].first > ti || live[i].last < ti {
				continue
			}
			p.live = append(p.live, i)
			p.sizes = append(p.sizes, g.Buffers[i].Bytes)
			p.bytes += g.Buffers[i].Bytes
		}
		if p.bytes > best.bytes {
			best = p
		}
	}
	return best
}

// describeGMTensor says what tensor t is, for a person: its role, type, bytes, the op
// that made it and the user's line.
func describeGMTensor(g *core.Graph, eg *ExecGraph, t int) string {
	gt := eg.Blocks.Tiles.Tensors[t]
	role := map[TensorRole]string{RoleInput: "input", RoleOutput: "output", RoleTemp: "intermediate"}[gt.Role]
	what := fmt.Sprintf("%s %s, %d bytes", role, gt.Type, eg.Buffers[t].Bytes)
	if v := int(gt.Value); g != nil && v >= 0 && v < len(g.Nodes) && g.Nodes[v] != nil {
		n := g.Nodes[v]
		if n.Op != core.OpParam {
			what += ", made by " + n.Op
		}
		if !n.Loc.IsZero() {
			what += " at " + n.Loc.String()
		}
	}
	return what
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

// taskOrder tells whether two GM tensors may share bytes when tasks run as soon as
// their dependencies allow (concurrently, not only in list order): every task using
// one must be ordered through the dependencies before every task using the other, so
// the bytes are handed on only once their last reader has finished (delayed release).
type taskOrder struct {
	ancestors [][]uint64 // per task, a bit set of the tasks it transitively depends on
	users     [][]int    // per owner tensor, the tasks that bind it
}

func newTaskOrder(g *ExecGraph) *taskOrder {
	tg := g.Blocks.Tiles
	n := len(g.Tasks)
	words := (n + 63) / 64
	o := &taskOrder{ancestors: make([][]uint64, n), users: make([][]int, len(tg.Tensors))}
	for i, task := range g.Tasks {
		set := make([]uint64, words)
		for _, d := range task.Deps {
			if d < 0 || d >= i {
				continue // Verify reports it
			}
			set[d/64] |= 1 << (d % 64)
			for w, bits := range o.ancestors[d] {
				set[w] |= bits
			}
		}
		o.ancestors[i] = set
		for _, a := range task.Args {
			r := root(tg.Tensors, a)
			if us := o.users[r]; len(us) == 0 || us[len(us)-1] != i {
				o.users[r] = append(us, i)
			}
		}
	}
	return o
}

// before reports whether every task using owner tensor a precedes every task using b.
func (o *taskOrder) before(a, b int) bool {
	for _, ub := range o.users[b] {
		for _, ua := range o.users[a] {
			if o.ancestors[ub][ua/64]&(1<<(ua%64)) == 0 {
				return false
			}
		}
	}
	return true
}

// apart reports whether owner tensors a and b are never in use at the same time.
func (o *taskOrder) apart(a, b int) bool { return o.before(a, b) || o.before(b, a) }
