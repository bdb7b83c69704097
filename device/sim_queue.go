package device

import (
	"fmt"

	"pypto/dtype"
	"pypto/isa"
)

// Queues between the cores of a group (TPUSH / TPOP / TFREE): isa.NumQueues FIFOs of
// isa.QueueDepth slots. On the split A2/A3 parts cube and vector cores exchange data
// only through GM, so a slot is GM workspace: TPUSH writes the tile out (FIX from L0C,
// MTE3 from UB), TPOP reads it in (MTE2), and the slot stays taken until the consumer
// frees it with TFREE. Times are task cycles, so the cores of a group, which keep
// block-relative clocks, agree on them.

type queueSet struct {
	q [isa.NumQueues]simQueue
}

// simQueue is one FIFO: entries[:popped] are popped and not yet freed, the rest wait
// to be popped; freeAt holds, for each free slot, the task time it became free.
type simQueue struct {
	entries []queueEntry
	popped  int
	freeAt  []int64
}

// queueEntry is a tile in flight: its bytes, dtype and shape, and when its push ends.
type queueEntry struct {
	dt         dtype.DType
	rows, cols int
	data       []byte
	readyAt    int64
}

func newQueueSet() *queueSet {
	s := &queueSet{}
	free := make([]int64, isa.NumQueues*isa.QueueDepth) // one allocation for all queues
	for i := range s.q {
		s.q[i].freeAt = free[i*isa.QueueDepth : (i+1)*isa.QueueDepth : (i+1)*isa.QueueDepth]
	}
	return s
}

// queueOf is the queue an instruction names (TPOP names it second).
func (s *queueSet) queueOf(in *Instr) (*simQueue, int, error) {
	arg := 0
	if in.Op == isa.TPOP {
		arg = 1
	}
	id := in.Args[arg].Imm
	if id < 0 || id >= isa.NumQueues || id != float64(int(id)) {
		return nil, 0, fmt.Errorf("queue %g is not one of the %d queues", id, isa.NumQueues)
	}
	return &s.q[int(id)], int(id), nil
}

// ready reports whether a TPUSH (a free slot) or TPOP (an entry to pop) can start,
// and from which task time.
func (s *queueSet) ready(in *Instr) (int64, bool) {
	q, _, err := s.queueOf(in)
	if err != nil {
		return 0, true // let it start: exec reports the error
	}
	if in.Op == isa.TPUSH {
		if len(q.freeAt) == 0 {
			return 0, false
		}
		return minOf(q.freeAt), true
	}
	if q.popped >= len(q.entries) {
		return 0, false
	}
	return q.entries[q.popped].readyAt, true
}

func minOf(s []int64) int64 {
	m := s[0]
	for _, v := range s[1:] {
		m = min(m, v)
	}
	return m
}

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.TPUSH: {route: routePush, exec: execPush, work: workPush},
		isa.TPOP:  {exec: execPop, work: workPop},
		// The device frees a slot on MTE2, the pipe that popped it, so that the free
		// follows the pop in order without a flag; it takes no pipe time.
		isa.TFREE: {route: func(*checkCtx, isa.Instr) (isa.Pipe, string) { return isa.PipeMTE2, "" }, access: noAccess, exec: execFree},
	})
}

// routePush: from L0C through the fixpipe, from UB on MTE3.
func routePush(ck *checkCtx, in isa.Instr) (isa.Pipe, string) {
	if ck.tile(in, 1).Loc == isa.Acc {
		return isa.PipeFIX, ""
	}
	return isa.PipeMTE3, ""
}

func workPush(chip *Chip, in *Instr) int64 {
	src := in.Args[1]
	if in.Pipe == isa.PipeFIX {
		return ceilDiv(int64(src.Bytes()), chip.FixpipeBytesPerCycle)
	}
	return ceilDiv(int64(src.Bytes()), chip.UBToGMBytesPerCycle)
}

func workPop(chip *Chip, in *Instr) int64 {
	return ceilDiv(int64(in.Args[0].Bytes()), chip.GMReadBytesPerCycle)
}

// execPush copies the source tile into a free slot; the entry can be popped once the
// push has ended.
func execPush(c *coreSim, x *execCtx, in *Instr) error {
	q, id, err := x.queues.queueOf(in)
	if err != nil {
		return err
	}
	if len(q.freeAt) == 0 {
		return fmt.Errorf("queue %d has no free slot", id)
	}
	src := in.Args[1]
	s, err := c.tile(src)
	if err != nil {
		return err
	}
	slot := 0
	for i, t := range q.freeAt {
		if t < q.freeAt[slot] {
			slot = i
		}
	}
	q.freeAt = append(q.freeAt[:slot], q.freeAt[slot+1:]...)
	ready := c.notifyCrossCore(x.run.t0 + x.end) // the popping core sees the entry
	q.entries = append(q.entries, queueEntry{dt: src.DType, rows: src.Rows, cols: src.Cols, data: append([]byte(nil), s...), readyAt: ready})
	c.gmWritten += int64(len(s))
	return nil
}

// execPop copies the oldest unpopped entry into the destination, converting to its
// dtype; the slot stays taken until TFREE.
func execPop(c *coreSim, x *execCtx, in *Instr) error {
	q, id, err := x.queues.queueOf(in)
	if err != nil {
		return err
	}
	if q.popped >= len(q.entries) {
		return fmt.Errorf("queue %d has no entry to pop", id)
	}
	e, dst := q.entries[q.popped], in.Args[0]
	if e.rows != dst.Rows || e.cols != dst.Cols {
		return fmt.Errorf("queue %d holds a %dx%d tile, the destination is %dx%d", id, e.rows, e.cols, dst.Rows, dst.Cols)
	}
	d, err := c.tile(dst)
	if err != nil {
		return err
	}
	convert(e.dt, e.data, dst.DType, d, e.rows*e.cols)
	q.popped++
	c.gmRead += int64(len(e.data))
	return nil
}

// execFree releases the oldest popped slot.
func execFree(c *coreSim, x *execCtx, in *Instr) error {
	q, id, err := x.queues.queueOf(in)
	if err != nil {
		return err
	}
	if q.popped == 0 {
		return fmt.Errorf("tfree of queue %d, which has no popped entry", id)
	}
	q.entries = q.entries[1:]
	q.popped--
	q.freeAt = append(q.freeAt, c.notifyCrossCore(x.run.t0+x.now)) // the pushing core sees the slot free
	return nil
}
