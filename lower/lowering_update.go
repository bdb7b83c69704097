package lower

import (
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// slice_update is written in place: its result takes the GM bytes of x (an alias of
// x's owner), and its task stores only the update's elements there, at the offset the
// starts give when the program runs (sld, then a GM view moved by a register). So a
// KV cache step moves O(update) bytes, not O(cache).
//
// x's bytes may be taken only when nothing reads x after the update: x must have this
// update as its one reader, be no result of the program, and own its bytes as an
// intermediate, as an input the caller donated (Options.Donate), or as the result of
// an earlier in-place update. Otherwise x is first copied into a buffer of its own (a
// "cast" tile op to x's own dtype, reported in its Reason and in Executable.Copies),
// which keeps the op functional.
//
// A start outside [0, n - size] moves the stores outside the result's param, which the
// device reports; the failure is then explained by the reference (run_errors.go), which
// names the start and the user's line.

func init() {
	lowerings["slice_update"] = lowering{kind: TileUpdate, core: isa.Vector, check: checkUpdateStarts}
}

var updateInstructions = []isa.Opcode{isa.TLOAD, isa.TSTORE, isa.SLD, isa.SMAX, isa.SMIN, isa.SSUB, isa.SMUL, isa.SADD}

func checkUpdateStarts(in []core.TensorType, _ core.TensorType) *core.Error {
	for i, s := range in[2:] {
		if s.DType != dtype.Int32 && s.DType != dtype.Int8 {
			return core.Errorf(core.CompileError, "slice_update: start %d is %s; the device reads starts as int32 or int8", i, s.DType.LongName()).
				Suggest("cast the start: start.astype(p.int32)")
		}
	}
	return nil
}

// updateTiling sizes a slice_update's tiles over its update's [outer, rows, cols]:
// one loaded tile per step, double-buffered.
func updateTiling(op *TileOp, tensors []GMTensor, chip *device.Chip) error {
	u := tensors[op.Inputs[1]].Type
	op.Problem = elementwiseProblem(u.Shape)
	t, reason, err := elementwiseTile(chip, u.DType.Size(), u.DType.Size(), 1, 0, op.Problem[1], op.Problem[2])
	if err != nil {
		return err
	}
	op.Tile = t
	if op.Reason == "" {
		op.Reason = "in place: stores the update only; " + reason
	}
	return nil
}

// inPlaceOK reports whether the update node n may take x's bytes (see above).
func inPlaceOK(g *core.Graph, n *core.Node, tensors []GMTensor, tensorOf map[core.Value]int, readers map[core.Value]int, isOutput map[core.Value]bool, donated map[core.Value]bool) bool {
	x := n.Inputs[0]
	if readers[x] != 1 || isOutput[x] {
		return false
	}
	for _, in := range n.Inputs[1:] {
		if in == x {
			return false
		}
	}
	t := tensors[tensorOf[x]]
	switch {
	case t.View != nil:
		return false
	case t.Alias != 0: // an earlier update's result (a reshape's source has another reader: the reshape)
		return writesInPlace(lowerings[g.Nodes[x].Op].kind)
	case t.Role == RoleInput:
		return donated[x]
	}
	return t.Role == RoleTemp
}

// updateOps gives the tile ops of an in-place node n (slice_update, index_put,
// scatter): the update, in place on x or on a copy of x. out is the result's tensor,
// not yet added.
func updateOps(g *core.Graph, n *core.Node, v core.Value, tg *TileGraph, tensorOf map[core.Value]int, inPlace bool, role TensorRole) (ops []*TileOp, out int) {
	x := tensorOf[n.Inputs[0]]
	base := root(tg.Tensors, x)
	if !inPlace {
		base = len(tg.Tensors)
		tg.Tensors = append(tg.Tensors, GMTensor{Value: v, Type: g.Type(v), Role: RoleTemp})
		cp := &TileOp{Node: v, Op: "cast", Kind: TileElementwise, Core: isa.Vector, Loc: n.Loc, Inputs: []int{x}, Output: base,
			Attrs: core.Attrs{"dtype": g.Type(v).DType.LongName()}}
		ops = append(ops, cp)
	}
	if role == RoleOutput && tg.Tensors[base].Role == RoleTemp {
		tg.Tensors[base].Role = RoleOutput // its bytes are a result's: they live through the run
	}
	out = len(tg.Tensors)
	tg.Tensors = append(tg.Tensors, GMTensor{Value: v, Type: g.Type(v), Role: role, Alias: base + 1})
	tensorOf[v] = out
	up := &TileOp{Node: v, Op: n.Op, Kind: lowerings[n.Op].kind, Core: isa.Vector, Attrs: n.Attrs, Loc: n.Loc, Output: out}
	up.Inputs = append(up.Inputs, base)
	for _, in := range n.Inputs[1:] {
		up.Inputs = append(up.Inputs, tensorOf[in])
	}
	if !inPlace {
		up.Reason = fmt.Sprintf("x copied first (%s): in place needs x donated or read by nothing else", describeCopySource(tg.Tensors[x]))
	}
	return append(ops, up), out
}

// describeCopySource says why x, an update's source, is copied rather than written.
func describeCopySource(t GMTensor) string {
	switch t.Role {
	case RoleInput:
		return "an input not donated, or read after the update"
	case RoleOutput:
		return "a result of the program"
	}
	return "an intermediate read after the update too"
}

// emitUpdate generates a block of a slice_update: the starts read into registers,
// checked, and turned into one element offset; then, per tile of the update, a load
// and a store into the result moved by that offset.
func emitUpdate(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	out := tg.Tensors[op.Output].Type
	u := tg.Tensors[op.Inputs[1]].Type
	axes := op.Attrs.Ints("axes")
	st := out.Shape.Strides()
	elems := out.Shape.NumElements()
	off := e.reg("off")
	for i, a := range axes {
		if a < 0 {
			a += len(out.Shape)
		}
		s, c := e.reg(fmt.Sprintf("start%d", i)), e.reg(fmt.Sprintf("clamped%d", i))
		e.emit(isa.SLD, isa.RegOp(s), isa.GMOp(isa.GMView{Param: e.params[op.Inputs[2+i]], Rows: 1, Cols: 1, RowStride: 1, ColStride: 1}))
		e.emit(isa.SMAX, isa.RegOp(c), isa.RegOp(s), isa.ImmOp(0))
		e.emit(isa.SMIN, isa.RegOp(c), isa.RegOp(c), isa.ImmOp(float64(out.Shape[a]-u.Shape[a])))
		// A start outside its range adds (start - clamped) whole tensors to the
		// offset, which moves every store outside the param: the device refuses it.
		e.emit(isa.SSUB, isa.RegOp(s), isa.RegOp(s), isa.RegOp(c))
		e.emit(isa.SMUL, isa.RegOp(s), isa.RegOp(s), isa.ImmOp(float64(elems)))
		e.emit(isa.SMUL, isa.RegOp(c), isa.RegOp(c), isa.ImmOp(float64(st[a])))
		e.emit(isa.SADD, isa.RegOp(off), isa.RegOp(off), isa.RegOp(c))
		e.emit(isa.SADD, isa.RegOp(off), isa.RegOp(off), isa.RegOp(s))
	}
	tr, tc := op.Tile[0], op.Tile[1]
	rows, cols := op.Problem[1], op.Problem[2]
	src := newFlatView(e.params[op.Inputs[1]], reshapeMap(u.Shape), u.Shape)
	dst := newFlatView(e.params[op.Output], affineMap{strides: st}, u.Shape)
	buf := e.pingPong("u", isa.Vec, u.DType, tr, tc)
	perOuter := op.Grid[1] * op.Grid[2]
	for step, t := range tiles {
		o, rest := t/perOuter, t%perOuter
		r0, c0 := (rest/op.Grid[2])*tr, (rest%op.Grid[2])*tc
		vr, vc := min(tr, rows-r0), min(tc, cols-c0)
		e.emit(isa.TLOAD, isa.TileOp(buf[step%2]), isa.GMOp(src.window(o, r0, c0, vr, vc)))
		w := dst.window(o, r0, c0, vr, vc)
		w.OffsetReg = isa.UseReg(off)
		e.emit(isa.TSTORE, isa.GMOp(w), isa.TileOp(buf[step%2]))
	}
}

// UpdateCopy is a slice_update the program computes on a copy of x, not in x's bytes.
type UpdateCopy struct {
	Bytes  int           `json:"bytes"`  // the bytes copied per run
	Reason string        `json:"reason"` // why x's own bytes could not be taken
	Where  string        `json:"where"`  // file:line of the update
	Loc    core.Location `json:"-"`
}

// UpdateCopies lists the in-place updates (slice_update, index_put, scatter) that
// copy x first (see inPlaceOK).
func (e *Executable) UpdateCopies() []UpdateCopy {
	out := []UpdateCopy{}
	tg := e.exec.Blocks.Tiles
	for i, op := range tg.Ops {
		if !writesInPlace(op.Kind) || i == 0 {
			continue
		}
		if cp := tg.Ops[i-1]; cp.Node == op.Node && cp.Kind == TileElementwise {
			c := UpdateCopy{Bytes: tg.Tensors[cp.Output].Type.Bytes(), Reason: describeCopySource(tg.Tensors[cp.Inputs[0]]), Loc: op.Loc}
			if op.Loc.File != "" {
				c.Where = fmt.Sprintf("%s:%d", op.Loc.File, op.Loc.Line)
			}
			out = append(out, c)
		}
	}
	return out
}
