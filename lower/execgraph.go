package lower

import (
	"fmt"
	"sort"

	"pypto/device"
	"pypto/isa"
)

// gmAlign is the alignment of every GM buffer, so that any tensor starts on a
// 512-byte boundary as DMA engines prefer.
const gmAlign = 512

// Task is one launch: a kernel's blocks, each a PTO program, run on cores of one kind.
type Task struct {
	Name   string
	Kernel int // index into BlockGraph.Kernels
	Core   isa.CoreKind
	Deps   []int // tasks that must finish first (producers of this task's inputs)
	Args   []int // GM tensors bound to the programs' params, in param order
	// Vectors is 0 for a task of one core kind, whose Programs are one per block. A
	// mixed task (cube and vector cores of one AI core working together through
	// TPUSH/TPOP queues) has Vectors vector programs per block: Programs holds, block
	// after block, the cube program and then the vector ones.
	Vectors  int
	Programs []*isa.Program
	Machine  []*device.MachineProgram // set by the backend pass
}

// GroupSize is the number of programs per block.
func (t *Task) GroupSize() int { return 1 + t.Vectors }

// Group returns block b's programs: one, or a mixed task's cube and vector programs.
func (t *Task) Group(b int) []*isa.Program {
	n := t.GroupSize()
	return t.Programs[b*n : (b+1)*n]
}

// Buffer places a GM tensor in device memory.
type Buffer struct {
	Offset, Bytes int
}

// ExecGraph is the final plan: tasks in a valid execution order and the GM memory plan.
type ExecGraph struct {
	Blocks  *BlockGraph
	Tasks   []*Task
	Buffers []Buffer // indexed like TileGraph.Tensors
	GMBytes int      // total device memory the run needs
	// WorkspaceBytes is the part of GMBytes used by intermediates after reuse;
	// WorkspaceNoReuse is what they would need without reuse (reported in dumps).
	WorkspaceBytes, WorkspaceNoReuse int
	// PreparedBytes is the part of GMBytes holding the results of weight preparation
	// that other tasks read (prepare_weights.go), each in a buffer of its own.
	PreparedBytes int
}

// WeightPrep reports whether task t computes from weights alone (TileOp.WeightPrep).
func (g *ExecGraph) WeightPrep(t *Task) bool {
	return g.Blocks.Tiles.Ops[g.Blocks.Kernels[t.Kernel].Op].WeightPrep
}

// Verify checks task order, argument bindings, that tensors share buffer bytes only when
// the dependencies order all the tasks of one before all the tasks of the other, and
// that every PTO program passes the ISA verifier for the chip.
func (g *ExecGraph) Verify(chip *device.Chip) error {
	tg := g.Blocks.Tiles
	if len(g.Buffers) != len(tg.Tensors) {
		return fmt.Errorf("execgraph: %d buffers for %d tensors", len(g.Buffers), len(tg.Tensors))
	}
	for i, buf := range g.Buffers {
		if buf.Offset%gmAlign != 0 || buf.Offset < 0 || buf.Offset+buf.Bytes > g.GMBytes {
			return fmt.Errorf("execgraph: buffer of t%d at %d+%d is misaligned or outside GM of %d bytes", i, buf.Offset, buf.Bytes, g.GMBytes)
		}
		if buf.Bytes < tg.Tensors[i].Type.Bytes() {
			return fmt.Errorf("execgraph: buffer of t%d has %d bytes, its tensor needs %d", i, buf.Bytes, tg.Tensors[i].Type.Bytes())
		}
	}
	order := newTaskOrder(g)
	prepared := preparedMask(tg)
	for i := range g.Buffers {
		for j := i + 1; j < len(g.Buffers); j++ {
			ri, rj := root(tg.Tensors, i), root(tg.Tensors, j)
			packed := ownsBytesOf(tg.Tensors, i, j) || ownsBytesOf(tg.Tensors, j, i)
			if ri != rj && !packed && overlaps(g.Buffers[i], g.Buffers[j]) && (tg.Tensors[ri].Role != RoleTemp || tg.Tensors[rj].Role != RoleTemp || prepared[ri] || prepared[rj] || !order.apart(ri, rj)) {
				return fmt.Errorf("execgraph: t%d and t%d share GM bytes while both may be in use (no dependency orders one's tasks before the other's)", i, j)
			}
		}
	}
	for i, t := range g.Tasks {
		for _, d := range t.Deps {
			if d >= i {
				return fmt.Errorf("execgraph: task %d depends on later task %d", i, d)
			}
		}
		if len(t.Programs)%t.GroupSize() != 0 {
			return fmt.Errorf("execgraph: task %d has %d programs, not whole groups of %d", i, len(t.Programs), t.GroupSize())
		}
		for j, p := range t.Programs {
			want := t.Core
			if t.Vectors > 0 && j%t.GroupSize() > 0 {
				want = isa.Vector
			}
			if p.Core != want {
				return fmt.Errorf("execgraph: task %d program %s is for %s cores, its place in the task needs %s", i, p.Name, p.Core, want)
			}
			if len(p.Params) != len(t.Args) {
				return fmt.Errorf("execgraph: task %d program %s has %d params, %d args bound", i, p.Name, len(p.Params), len(t.Args))
			}
			if err := isa.Verify(p, chip.Capacity); err != nil {
				return fmt.Errorf("execgraph: task %d: %v", i, err)
			}
		}
	}
	return nil
}

func overlaps(a, b Buffer) bool {
	return a.Bytes > 0 && b.Bytes > 0 && a.Offset < b.Offset+b.Bytes && b.Offset < a.Offset+a.Bytes
}

// interval is a closed range of task indices; inputs and outputs span the whole run.
type interval struct{ first, last int }

func (a interval) overlaps(b interval) bool { return a.first <= b.last && b.first <= a.last }

// liveRanges gives each tensor the tasks from its producer to its last reader; inputs,
// outputs and prepared weights span the whole run.
func liveRanges(g *ExecGraph) []interval {
	tg := g.Blocks.Tiles
	n := len(g.Tasks)
	live := make([]interval, len(tg.Tensors))
	prepared := preparedMask(tg)
	for i, t := range tg.Tensors {
		if t.Role == RoleTemp && !prepared[i] {
			live[i] = interval{n, -1}
		} else {
			live[i] = interval{-1, n}
		}
	}
	for ti, task := range g.Tasks {
		for _, a := range task.Args {
			if r := root(tg.Tensors, a); tg.Tensors[r].Role == RoleTemp && !prepared[r] {
				live[r].first = min(live[r].first, ti)
				live[r].last = max(live[r].last, ti)
			}
		}
	}
	for i := range tg.Tensors { // an alias lives as long as the bytes it views
		live[i] = live[root(tg.Tensors, i)]
	}
	return live
}

// Hazards lists, for each task, the earlier tasks it must wait for when tasks may run
// concurrently: the producers of its inputs (Deps) and every earlier task whose GM
// bytes it overwrites or that overwrites bytes it reads. The memory plan reuses a
// workspace buffer once its last reader has run in graph order, so a task that writes
// reused bytes must also wait for the earlier readers of the tensor that had them.
func (g *ExecGraph) Hazards() [][]int {
	tg := g.Blocks.Tiles
	type access struct {
		buf   Buffer
		write bool
	}
	acc := make([][]access, len(g.Tasks))
	for i, t := range g.Tasks {
		op := tg.Ops[g.Blocks.Kernels[t.Kernel].Op]
		out := paramTensor(tg.Tensors, op.Output)
		for _, a := range t.Args {
			// A kernel of the user's own may store into any of its params.
			write := a == out || op.Kind == TileKernel
			acc[i] = append(acc[i], access{g.Buffers[a], write})
		}
	}
	hz := make([][]int, len(g.Tasks))
	for j := range g.Tasks {
		deps := map[int]bool{}
		for _, d := range g.Tasks[j].Deps {
			deps[d] = true
		}
		for i := range j {
			if deps[i] {
				continue
			}
		scan:
			for _, a := range acc[i] {
				for _, b := range acc[j] {
					if (a.write || b.write) && overlaps(a.buf, b.buf) {
						deps[i] = true
						break scan
					}
				}
			}
		}
		for d := range deps {
			hz[j] = append(hz[j], d)
		}
		sort.Ints(hz[j])
	}
	return hz
}
