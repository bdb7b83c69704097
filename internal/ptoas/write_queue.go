package ptoas

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// Queues. A mixed task's cube and vector cores hand tiles over through TPUSH / TPOP
// queues of two slots; the 0.1.1 dialect has no queue ops, so each queue becomes a
// buffer in GM, two slots per block, guarded by two cross-core events:
//
//   - the consumer first sets FREE twice (both slots are free);
//   - a push waits for FREE, stores the tile into slot n % 2 (n counts the pushes) on
//     its pipe (FIX from Acc, which converts as TPOP does; MTE3 from Vec), then sets
//     FULL on that pipe;
//   - a pop waits for FULL on MTE2 and loads slot n % 2 (n counts the pops);
//   - a free sets FREE on MTE2, after the load that read the slot;
//   - the producer finally waits for FREE twice, so that every event set is consumed.
//
// pto.sync.set / pto.sync.wait are the cross-core events between a block's cube and
// vector cores (ptoas 0.1.1 emits set_intra_block / wait_intra_block). Queue q uses
// events 2q (FULL) and 2q+1 (FREE).

// findQueues works out each queue's entry (dtype and shape), producer and consumer
// from the task's programs.
func (w *writer) findQueues() {
	t := w.task
	if t.Vectors == 0 {
		for _, p := range t.Programs {
			for pc, in := range p.Body {
				if in.Op == isa.TPUSH || in.Op == isa.TPOP || in.Op == isa.TFREE {
					w.p, w.pc = p, pc
					w.fail("a queue instruction in a task of one core kind: queues connect a mixed task's cube and vector cores")
				}
			}
		}
		return
	}
	n := 1 + t.Vectors
	type side struct{ pusher, popper int } // the program (place in the group) of each end
	ends := map[int]*side{}
	for i, p := range t.Programs {
		place := i % n
		for pc, in := range p.Body {
			var q int
			switch in.Op {
			case isa.TPUSH:
				q = int(in.Args[0].Imm)
			case isa.TPOP, isa.TFREE:
				q = int(in.Args[len(in.Args)-1].Imm)
			default:
				continue
			}
			w.p, w.pc = p, pc
			e := ends[q]
			if e == nil {
				e = &side{-1, -1}
				ends[q] = e
			}
			end := &e.popper
			if in.Op == isa.TPUSH {
				end = &e.pusher
			}
			if *end >= 0 && *end != place {
				w.fail("queue %d is used by two programs of a block at one end; a GM hand-off needs one producer and one consumer per queue", q)
			}
			*end = place
			if in.Op == isa.TFREE {
				continue
			}
			tile := p.Tiles[in.Args[map[bool]int{true: 1, false: 0}[in.Op == isa.TPUSH]].Tile]
			qu := w.queues[q]
			if qu == nil {
				qu = &Queue{ID: q, Rows: tile.Rows, Cols: tile.Cols, FullEvent: 2 * q, FreeEvent: 2*q + 1}
				w.queues[q] = qu
			}
			if tile.Rows != qu.Rows || tile.Cols != qu.Cols {
				w.fail("queue %d carries %dx%d entries and %dx%d ones; a GM slot has one shape", q, qu.Rows, qu.Cols, tile.Rows, tile.Cols)
			}
			if in.Op == isa.TPOP {
				el, ok := elemType(tile.DType)
				if !ok || tile.DType == dtype.Bool {
					w.fail("queue %d's entries are %s, which a GM slot cannot hold", q, tile.DType)
				}
				if qu.DType != "" && qu.DType != el {
					w.fail("queue %d is popped into %s and %s tiles; a GM slot has one dtype", q, qu.DType, el)
				}
				qu.DType = el
			}
		}
	}
	w.p, w.pc = nil, -1
	for q, e := range ends {
		qu := w.queues[q]
		if e.pusher < 0 || e.popper < 0 || qu == nil || qu.DType == "" {
			w.fail("queue %d is not both pushed and popped in each block", q)
		}
		if e.pusher == e.popper {
			w.fail("queue %d is pushed and popped by the same core", q)
		}
		qu.Producer = isa.Vector
		if e.pusher == 0 {
			qu.Producer = isa.Cube
		}
		qu.Elems = t.Blocks() * 2 * qu.Rows * qu.Cols
		d, _ := dtype.Parse(map[string]string{"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i8": "int8", "i32": "int32"}[qu.DType])
		qu.Bytes = qu.Elems * d.Size()
		if q < 0 || 2*q+1 >= 16 {
			w.fail("queue %d: the cross-core events run from 0 to 15, two per queue", q)
		}
	}
}

// declareQueueCounters declares, for each queue the program pushes or pops, the
// register counting them (which slot is next), and primes the queues it consumes.
func (w *writer) declareQueueCounters() {
	for _, q := range sortedKeys(w.queues) {
		push, pop := false, false
		for _, in := range w.p.Body {
			switch {
			case in.Op == isa.TPUSH && int(in.Args[0].Imm) == q:
				push = true
			case in.Op == isa.TPOP && int(in.Args[1].Imm) == q:
				pop = true
			}
		}
		if !push && !pop {
			continue
		}
		name := w.fresh("%", fmt.Sprintf("queue%d_n", q))
		w.qcount[q] = name
		w.decls = append(w.decls, fmt.Sprintf("%s = \"emitc.variable\"() <{value = 0 : i64}> {pypto.queue} : () -> i64", name))
		if pop {
			for range 2 {
				w.decls = append(w.decls, fmt.Sprintf(`"pto.sync.set"() <{pipe = #pto.pipe<PIPE_MTE2>, event_id = %d : i32}> {pypto.queue} : () -> ()`, w.queues[q].FreeEvent))
			}
		}
	}
}

// finishQueues drains the queues the program produced into.
func (w *writer) finishQueues() {
	for _, q := range sortedKeys(w.qcount) {
		qu := w.queues[q]
		if (qu.Producer == isa.Cube) != (w.p.Core == isa.Cube) {
			continue
		}
		pipe := "PIPE_FIX"
		if w.p.Core == isa.Vector {
			pipe = "PIPE_MTE3"
		}
		for range 2 {
			w.line(`"pto.sync.wait"() <{pipe = #pto.pipe<%s>, event_id = %d : i32}> {pypto.queue} : () -> ()`, pipe, qu.FreeEvent)
		}
	}
}

// queueSlot writes the view of the program's next slot of queue q (block w.block,
// slot count % 2) and advances the count; attrs marks the ops as parts of one
// instruction.
func (w *writer) queueSlot(q int, part string) operand {
	qu := w.queues[q]
	count := w.qcount[q]
	entry := qu.Rows * qu.Cols
	slot := w.value("slot")
	w.line(`%s = "emitc.rem"(%s, %s) : (i64, i64) -> i64`, slot, count, w.i64(2))
	off := w.value("off")
	w.line(`%s = "emitc.mul"(%s, %s) : (i64, i64) -> i64`, off, slot, w.i64(int64(entry)))
	blockBase := w.i64(int64(w.block * 2 * entry))
	if w.blockIdx != "" { // the block's slots, from the block index (bodies may be shared)
		blockBase = w.value("qb")
		w.line(`%s = "emitc.mul"(%s, %s) : (i64, i64) -> i64`, blockBase, w.blockIdx, w.i64(int64(2*entry)))
	}
	base := w.value("off")
	w.line(`%s = "emitc.add"(%s, %s) : (i64, i64) -> i64`, base, off, blockBase)
	col := w.castIndex(base)
	next := w.value("n")
	w.line(`%s = "emitc.add"(%s, %s) : (i64, i64) -> i64`, next, count, w.i64(1))
	w.line(`"emitc.assign"(%s, %s) {%s} : (i64, i64) -> ()`, count, next, part)
	// The slot is one entry of rows x cols, row-major: strides (cols, 1) from the slot's
	// first element, which is the tensor view's (0, off) with the view's strides
	// (Elems, 1); a row stride of cols needs a view of its own.
	typ := fmt.Sprintf("!pto.tile_view<%dx%dx%s>", qu.Rows, qu.Cols, qu.DType)
	rowsView := w.queueRowsView(q)
	sv := w.value("sv")
	w.line("%s = pto.subview %s, offsets = [%s, %s], sizes = [%s, %s] : !pto.tensor_view<2x%s> -> %s", sv, rowsView, w.index(0), col, w.index(qu.Rows), w.index(qu.Cols), qu.DType, typ)
	return operand{sv, typ}
}

// queueRowsView is queue q's buffer seen as rows of an entry's cols.
func (w *writer) queueRowsView(q int) string {
	key := fmt.Sprintf("queue_rows:%d", q)
	qu := w.queues[q]
	if s, ok := w.consts[key]; ok {
		return s
	}
	name := w.fresh("%", fmt.Sprintf("queue%d_rows", q))
	w.consts[key] = name
	w.viewDefs = append(w.viewDefs, fmt.Sprintf("%s = pto.make_tensor_view %s, shape = [%s, %s] strides = [%s, %s] : !pto.tensor_view<2x%s>",
		name, w.queueArg[q], w.index(qu.Elems/qu.Cols), w.index(qu.Cols), w.index(qu.Cols), w.index(1), qu.DType))
	return name
}

func init() {
	opWriters[isa.TPUSH] = func(w *writer, in isa.Instr) {
		q := int(in.Args[0].Imm)
		qu := w.queues[q]
		g := w.group(in)
		pipe := "PIPE_FIX"
		if w.p.Tiles[in.Args[1].Tile].Loc == isa.Vec {
			pipe = "PIPE_MTE3"
			if el, _ := elemType(w.p.Tiles[in.Args[1].Tile].DType); el != qu.DType {
				w.fail("a push from a %s Vec tile into queue %d of %s entries: a store from Vec does not convert", el, q, qu.DType)
			}
		}
		w.line(`"pto.sync.wait"() <{pipe = #pto.pipe<%s>, event_id = %d : i32}> {%s} : () -> ()`, pipe, qu.FreeEvent, g(0))
		slot := w.queueSlot(q, g(1))
		w.op("tstore", "", g(2), w.tileOp(in, 1), slot)
		w.line(`"pto.sync.set"() <{pipe = #pto.pipe<%s>, event_id = %d : i32}> {%s} : () -> ()`, pipe, qu.FullEvent, g(3))
	}
	opWriters[isa.TPOP] = func(w *writer, in isa.Instr) {
		q := int(in.Args[1].Imm)
		qu := w.queues[q]
		g := w.group(in)
		w.line(`"pto.sync.wait"() <{pipe = #pto.pipe<PIPE_MTE2>, event_id = %d : i32}> {%s} : () -> ()`, qu.FullEvent, g(0))
		slot := w.queueSlot(q, g(1))
		w.op("tload", "operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>", g(2), slot, w.tileOp(in, 0))
	}
	opWriters[isa.TFREE] = func(w *writer, in isa.Instr) {
		q := int(in.Args[0].Imm)
		g := w.group(in)
		w.line(`"pto.sync.set"() <{pipe = #pto.pipe<PIPE_MTE2>, event_id = %d : i32}> {%s} : () -> ()`, w.queues[q].FreeEvent, g(0))
	}
}
