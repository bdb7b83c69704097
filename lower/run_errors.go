package lower

import (
	"errors"
	"fmt"

	"pypto/core"
	"pypto/device"
)

// A failure on the simulated device speaks of tasks, instructions and buffer
// addresses: an index out of range shows as an address outside a window, computed
// from a clamped or offset index. The user wrote an op at a line, so a failed task is
// explained in those terms: its op is evaluated with the reference semantics on the
// inputs it had in GM, which names the offending value as the reference device does
// ("index 9 is out of range for axis 1 of size 8"); the device's own report is kept as
// a cause. Where the reference computes the op without error (a failure only the
// device has, such as an exhausted instruction budget) the device's message stays,
// prefixed with the op, at the op's line.

// explainTaskFailure turns err, the failure of task in a run whose GM is gm, into the
// error the user sees.
func (e *Executable) explainTaskFailure(task *Task, gm []byte, err error) *core.Error {
	tg := e.exec.Blocks.Tiles
	op := tg.Ops[e.exec.Blocks.Kernels[task.Kernel].Op]
	report := fmt.Sprintf("%s stopped in task %s: %v", e.chip.Name, task.Name, err)
	budget := errors.Is(err, device.ErrBudget)
	if referenceExplains(err) {
		if ref := referenceError(tg, op, e.exec.Buffers, gm); ref != nil {
			return ref.WithLoc(op.Loc).Because("%s", report)
		}
	}
	label := op.Op
	if k, kerr := core.KernelOf(op.Attrs); op.Op == "call_kernel" && kerr == nil {
		label = "kernel " + k.Name
	}
	ce := core.Errorf(core.DeviceError, "%s: %s", label, report).WithLoc(op.Loc)
	if budget {
		ce.Suggest("if the loop is meant to run this long, raise the budget: p.CompileConfig(max_steps=...) (device.RunOptions.MaxInstructions)")
	}
	return ce
}

// referenceExplains reports whether evaluating the failed op with the reference
// semantics can explain err. A budget the reference would exceed too, and a race or
// deadlock, which program order cannot have, are not the reference's to explain;
// evaluating it would only cost time (the reference run of an attention kernel takes
// far longer than its device run: 30 s against 0.15 s for 960 query blocks).
func referenceExplains(err error) bool {
	return !errors.Is(err, device.ErrBudget) && !errors.Is(err, device.ErrSync)
}

// referenceError evaluates op with the reference implementation on its inputs as they
// are in gm and returns the error that reports, or nil (also when an input is a
// strided view, whose bytes are not laid out as its type).
func referenceError(tg *TileGraph, op *TileOp, bufs []Buffer, gm []byte) (refErr *core.Error) {
	defer func() {
		if recover() != nil {
			refErr = nil // a reference that cannot evaluate this op explains nothing
		}
	}()
	b := core.NewBuilder("explain")
	var ins []core.Value
	var arrays []*core.Array
	for i, t := range op.Inputs {
		if tg.Tensors[t].View != nil {
			return nil
		}
		typ := tg.Tensors[t].Type
		buf := bufs[root(tg.Tensors, t)]
		n := typ.Bytes()
		if buf.Offset < 0 || buf.Offset+n > len(gm) {
			return nil
		}
		ins = append(ins, b.Param(fmt.Sprintf("in%d", i), typ))
		arrays = append(arrays, core.ArrayFromBytes(typ, gm[buf.Offset:buf.Offset+n]))
	}
	v, err := b.Op(op.Op, ins, op.Attrs, op.Loc)
	if err != nil {
		return nil
	}
	b.Output(v)
	_, err = core.Interpret(b.Graph(), arrays)
	var ce *core.Error
	if errors.As(err, &ce) && ce.Kind != core.InternalError && ce.Kind != core.MemoryError {
		return ce
	}
	return nil
}
