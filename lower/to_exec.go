package lower

import (
	"fmt"
	"sort"

	"pypto/device"
	"pypto/isa"
)

// buildExecGraph turns kernels into tasks, plans GM and generates each block's PTO
// program. Kernels with no tiles (zero-size outputs) become no task at all.
// A mixed kernel's blocks each get the cube program and vectorsPerBlock vector
// programs (the vector cores of one AI core).
func buildExecGraph(bg *BlockGraph, chip *device.Chip) (*ExecGraph, error) {
	vectorsPerBlock := chip.VectorCores / chip.CubeCores
	tg := bg.Tiles
	eg := &ExecGraph{Blocks: bg}
	producers := map[int][]int{} // tensor -> the tasks writing it (several for concat's parts)
	var blocks []block
	for ki, k := range bg.Kernels {
		if len(k.Blocks) == 0 {
			continue
		}
		op := tg.Ops[k.Op]
		task := &Task{Name: fmt.Sprintf("%s_%d", op.Op, ki), Kernel: ki, Core: k.Core}
		task.Args = kernelArgs(tg, op)
		deps := map[int]bool{}
		for _, in := range op.Inputs {
			for _, p := range producers[root(tg.Tensors, in)] {
				deps[p] = true
			}
		}
		for d := range deps {
			task.Deps = append(task.Deps, d)
		}
		sort.Ints(task.Deps)
		if groupEmitters[op.Kind] != nil {
			task.Vectors = vectorsPerBlock
		}
		if op.Kind == TileKernel {
			task.Vectors = op.Attrs.Int("vectors", 0)
		}
		for bi, tiles := range k.Blocks {
			blocks = append(blocks, block{task, op, tiles, bi, len(k.Blocks)})
		}
		out := root(tg.Tensors, op.Output) // an in-place update writes its owner's bytes
		producers[out] = append(producers[out], len(eg.Tasks))
		eg.Tasks = append(eg.Tasks, task)
	}
	if err := emitBlocks(tg, blocks, limitsOf(chip)); err != nil {
		return nil, err
	}
	planMemory(eg)
	return eg, nil
}

// block is one block of a task, to be emitted.
type block struct {
	task  *Task
	op    *TileOp
	tiles []int
	index int
	count int // the task's blocks
}

// emitBlocks generates the programs of blocks in parallel (each block's emitter is its
// own; the tile graph is only read) and appends them to their tasks in block order.
// The first block of every task is emitted first: the other blocks share its operand
// lists (blocks of a task mostly differ only in their GM views), which saves memory.
// The error is the first failing first block's in order, else the first other one's.
func emitBlocks(tg *TileGraph, blocks []block, budget codeLimits) error {
	progs := make([][]*isa.Program, len(blocks))
	errs := make([]error, len(blocks))
	seeds := map[*Task]*blockSeed{}
	var first, rest []int
	for i, b := range blocks {
		if b.index == 0 {
			first = append(first, i)
		} else {
			rest = append(rest, i)
		}
	}
	emit := func(order []int) {
		inParallel(len(order), func(k int) bool {
			i := order[k]
			b := blocks[i]
			progs[i], errs[i] = emitBlock(tg, b.op, b.tiles, blockAt{b.index, b.count}, fmt.Sprintf("%s_b%d", b.task.Name, b.index), b.task.Vectors, seeds[b.task], budget)
			return errs[i] == nil
		})
	}
	emit(first)
	for _, i := range first {
		if errs[i] != nil {
			return errs[i]
		}
		seeds[blocks[i].task] = seedOf(progs[i])
	}
	emit(rest)
	for i, b := range blocks {
		if errs[i] != nil {
			return errs[i]
		}
		b.task.Programs = append(b.task.Programs, progs[i]...)
	}
	return nil
}

// planMemory places inputs and outputs in buffers of their own (packed inputs one after
// another, placeInputs), then the prepared weights (preparedTensors), and packs intermediates
// into a workspace, reusing the bytes of a tensor once every task that uses it is
// ordered, through the dependencies, before the tasks of the tensor that takes them
// (taskOrder: safe when independent tasks run at once), first fit by offset over
// tensors sorted by size, largest first.
func planMemory(eg *ExecGraph) {
	tg := eg.Blocks.Tiles
	eg.Buffers = make([]Buffer, len(tg.Tensors))
	off := placeInputs(eg)
	// Prepared weights are written before any task by the runs that skip their
	// preparation, so each keeps its bytes for the whole run, like an input.
	prepared := preparedMask(tg)
	for _, t := range preparedTensors(tg) {
		bytes := roundUp(tg.Tensors[t].Type.Bytes(), gmAlign)
		eg.Buffers[t] = Buffer{Offset: off, Bytes: bytes}
		eg.PreparedBytes += bytes
		off += bytes
	}
	var temps []int
	for i, t := range tg.Tensors {
		if t.Alias == 0 && t.Role == RoleTemp && !prepared[i] {
			temps = append(temps, i)
			eg.WorkspaceNoReuse += roundUp(t.Type.Bytes(), gmAlign)
		}
	}
	base := off
	order := newTaskOrder(eg)
	sort.SliceStable(temps, func(a, b int) bool { return tg.Tensors[temps[a]].Type.Bytes() > tg.Tensors[temps[b]].Type.Bytes() })
	var placed []int
	for _, t := range temps {
		bytes := roundUp(tg.Tensors[t].Type.Bytes(), gmAlign)
		// Candidate offsets: the workspace start and the end of every placed buffer.
		cands := []int{base}
		for _, p := range placed {
			cands = append(cands, eg.Buffers[p].Offset+eg.Buffers[p].Bytes)
		}
		sort.Ints(cands)
		for _, c := range cands {
			b := Buffer{Offset: c, Bytes: bytes}
			clash := false
			for _, p := range placed {
				if overlaps(b, eg.Buffers[p]) && !order.apart(t, p) {
					clash = true
					break
				}
			}
			if !clash {
				eg.Buffers[t] = b
				break
			}
		}
		placed = append(placed, t)
		off = max(off, eg.Buffers[t].Offset+bytes)
	}
	eg.WorkspaceBytes = off - base
	eg.GMBytes = off
	for i, t := range tg.Tensors {
		switch {
		case len(t.Pieces) > 0:
			eg.Buffers[i] = packedBuffer(eg, t)
		case t.Alias != 0:
			eg.Buffers[i] = eg.Buffers[t.Alias-1]
		}
	}
}

// kernelArgs lists the GM tensors a tile op's kernel takes: its distinct inputs (the
// owners of strided views), then its output. A tensor read twice (x + x) is one param,
// so no two params alias. An in-place update's first input is not a param: its bytes
// are the output's.
func kernelArgs(tg *TileGraph, op *TileOp) []int {
	var args []int
	seen := map[int]bool{}
	ins := op.Inputs
	if writesInPlace(op.Kind) {
		ins = ins[1:]
	}
	all := append(append([]int(nil), ins...), op.Output)
	if op.Dynamic != nil {
		all = append(all, op.Dynamic.Sizes)
	}
	for _, t := range all {
		if t = paramTensor(tg.Tensors, t); !seen[t] {
			seen[t] = true
			args = append(args, t)
		}
	}
	return args
}

// groupEmitter writes the programs of one block of a mixed tile op: the cube core's and
// one per vector core of the same AI core, exchanging tiles through TPUSH/TPOP queues.
type groupEmitter struct {
	cube *emitter
	vec  []*emitter
}

// groupEmitters generate the blocks of mixed tile kinds; a kind listed here becomes a
// mixed task (see Task.Vectors).
var groupEmitters = map[TileKind]func(g *groupEmitter, tg *TileGraph, op *TileOp, tiles []int){}

// newKernelEmitter starts a program of one block whose params are op's kernel args.
func newKernelEmitter(tg *TileGraph, op *TileOp, name string, core isa.CoreKind) *emitter {
	e := newEmitter(name, core)
	for _, t := range kernelArgs(tg, op) {
		typ := tg.Tensors[t].Type
		e.params[t] = len(e.prog.Params)
		e.prog.Params = append(e.prog.Params, isa.Param{Name: fmt.Sprintf("t%d", t), DType: typ.DType, Elems: typ.Shape.NumElements()})
	}
	for _, t := range op.Inputs { // a strided view reads its owner's param (operandView)
		if p := paramTensor(tg.Tensors, t); p != t {
			e.params[t] = e.params[p]
		}
	}
	return e
}

// blockAt is a block's place among its task's blocks: index of count; count 0 for a
// block emitted alone (the tile search's estimates), which runs its tiles as at the
// bound of dynamic sizes.
type blockAt struct{ index, count int }

// dynamic reports whether the block of op runs a tile loop over sizes read at run
// time (TileOp.Dynamic).
func (at blockAt) dynamic(op *TileOp) bool {
	return op.Dynamic != nil && at.count > 0 && op.Kind != TileAttention // an attention deals its tiles statically (attentionRun)
}

// emitBlock generates the PTO programs of one block of a tile op: one, or for a mixed
// op the cube program followed by vectors vector programs. Its emitters share the
// operand lists of seed and start at the sizes of its programs (seed may be nil).
func emitBlock(tg *TileGraph, op *TileOp, tiles []int, at blockAt, name string, vectors int, seed *blockSeed, budget codeLimits) ([]*isa.Program, error) {
	if op.Kind == TileKernel {
		return kernelBlock(tg, op, tiles, name)
	}
	if emit := groupEmitters[op.Kind]; emit != nil {
		g := &groupEmitter{cube: newKernelEmitter(tg, op, name+"_c", isa.Cube)}
		g.cube.useSeed(seed, 0)
		g.cube.codeBudget, g.cube.l1Bytes, g.cube.l0cBytes, g.cube.flagIDs = budget.instrs, budget.l1Bytes, budget.l0cBytes, budget.flagIDs
		progs := []*isa.Program{g.cube.prog}
		for v := range vectors {
			g.vec = append(g.vec, newKernelEmitter(tg, op, fmt.Sprintf("%s_v%d", name, v), isa.Vector))
			g.vec[v].useSeed(seed, 1+v)
			progs = append(progs, g.vec[v].prog)
		}
		if at.dynamic(op) {
			emitDynamicMatmulEpilogue(g, tg, op, at.index, at.count)
		} else {
			emit(g, tg, op, tiles)
		}
		return progs, nil
	}
	e := newKernelEmitter(tg, op, name, op.Core)
	e.useSeed(seed, 0)
	e.codeBudget, e.l1Bytes, e.l0cBytes, e.flagIDs = budget.instrs, budget.l1Bytes, budget.l0cBytes, budget.flagIDs
	if at.dynamic(op) {
		if op.Kind == TileRows {
			emitDynamicRows(e, tg, op, at.index, at.count)
		} else {
			emitDynamicPlainMatmul(e, tg, op, at.index, at.count)
		}
		return []*isa.Program{e.prog}, nil
	}
	switch op.Kind {
	case TileMatmul:
		emitPlainMatmul(e, tg, op, tiles)
	case TileElementwise:
		emitElementwise(e, tg, op, tiles)
	case TileReduce:
		emitReduce(e, tg, op, tiles)
	case TileScan:
		emitScan(e, tg, op, tiles)
	case TileSort:
		emitSort(e, tg, op, tiles)
	case TileRows:
		emitRows(e, tg, op, tiles)
	case TileUpdate:
		emitUpdate(e, tg, op, tiles)
	case TileScatter:
		emitScatter(e, tg, op, tiles)
	case TileConv:
		emitConv(e, tg, op, tiles)
	default:
		return nil, fmt.Errorf("no code generator for tile kind %s", op.Kind)
	}
	return []*isa.Program{e.prog}, nil
}
