package lower

import (
	"strings"

	"pypto/core"
)

// TaskInfo describes one task of a compiled program for profiles: the op it runs, the
// ops a fused kernel holds, where the user's code made it, and the work it does.
type TaskInfo struct {
	Name  string        `json:"name"`
	Op    string        `json:"op"`  // the op of the compiled graph (fused_rows, matmul, ...)
	Ops   []string      `json:"ops"` // the ops it computes: a fused op's body, else Op
	Kind  string        `json:"kind"`
	Core  string        `json:"core"`
	Loc   core.Location `json:"loc"`
	Deps  []int         `json:"deps"`
	Args  []int         `json:"args"` // GM tensors bound to its programs (BufferInfo.Tensor)
	Type  string        `json:"type"` // its result's type
	Tile  []int         `json:"tile"`
	Grid  []int         `json:"grid"`
	FLOPs int64         `json:"flops"` // see taskFLOPs
}

// BufferInfo is one GM tensor of the memory plan with the tasks it is live for.
type BufferInfo struct {
	Tensor    int    `json:"tensor"`
	Role      string `json:"role"`
	Type      string `json:"type"`
	Offset    int    `json:"offset"`
	Bytes     int    `json:"bytes"`
	Alias     int    `json:"alias"` // 1 + the tensor whose bytes it views, or 0
	FirstTask int    `json:"first_task"`
	LastTask  int    `json:"last_task"` // inputs and outputs: -1 and len(tasks)
}

// TaskInfos describes the program's tasks in execution order.
func (e *Executable) TaskInfos() []TaskInfo {
	tg := e.exec.Blocks.Tiles
	out := make([]TaskInfo, len(e.exec.Tasks))
	for i, t := range e.exec.Tasks {
		op := tg.Ops[e.exec.Blocks.Kernels[t.Kernel].Op]
		info := TaskInfo{Name: t.Name, Op: op.Op, Ops: bodyOps(op), Kind: op.Kind.String(), Core: t.Core.String(),
			Loc: op.Loc, Deps: append([]int{}, t.Deps...), Args: append([]int{}, t.Args...),
			Type: tg.Tensors[op.Output].Type.String(), Tile: op.Tile, Grid: op.Grid}
		info.FLOPs = taskFLOPs(op, tg.Tensors[op.Output].Type, len(info.Ops))
		if t.Vectors > 0 {
			info.Core = "mixed"
		}
		out[i] = info
	}
	return out
}

// bodyOps lists the ops a tile op computes: a fused op's body, in order.
func bodyOps(op *TileOp) []string {
	if !strings.HasPrefix(op.Op, "fused") {
		return []string{op.Op}
	}
	body, err := core.FusedBody(op.Attrs)
	if err != nil {
		return []string{op.Op}
	}
	var ops []string
	for _, n := range body.Nodes {
		if n.Op != core.OpParam {
			ops = append(ops, n.Op)
		}
	}
	if op.Op == "fused_matmul" {
		ops = append([]string{"matmul"}, ops...)
	}
	return ops
}

// taskFLOPs counts the arithmetic of a tile op: 2*b*m*n*k for a matmul's multiply-adds
// (problem [batch, m, n, k]), and for other ops one operation per output element per op
// it computes (an estimate: a reduction's inputs are more than its outputs, and a
// transcendental takes several vector instructions).
func taskFLOPs(op *TileOp, out core.TensorType, nOps int) int64 {
	switch op.Kind {
	case TileMatmul, TileMatmulEpilogue:
		if len(op.Problem) == 4 {
			p := op.Problem
			f := 2 * int64(p[0]) * int64(p[1]) * int64(p[2]) * int64(p[3])
			if op.Kind == TileMatmulEpilogue {
				f += int64(out.Shape.NumElements()) * int64(nOps-1)
			}
			return f
		}
	case TileAttention:
		if len(op.Problem) == 5 { // QK^T and PV
			p := op.Problem
			return 2 * int64(p[0]) * int64(p[1]) * int64(p[2]) * (int64(p[3]) + int64(p[4]))
		}
	}
	return int64(out.Shape.NumElements()) * int64(max(nOps, 1))
}

// BufferInfos lists the GM tensors of the memory plan with their live tasks.
func (e *Executable) BufferInfos() []BufferInfo {
	tg := e.exec.Blocks.Tiles
	live := liveRanges(e.exec)
	out := make([]BufferInfo, len(tg.Tensors))
	for i, t := range tg.Tensors {
		b := e.exec.Buffers[i]
		out[i] = BufferInfo{Tensor: i, Role: t.Role.String(), Type: t.Type.String(), Offset: b.Offset, Bytes: b.Bytes,
			Alias: t.Alias, FirstTask: live[i].first, LastTask: live[i].last}
	}
	return out
}
