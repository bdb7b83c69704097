package device

import "pypto/isa"

// flagQueues holds a block's pending SET_FLAG events: one FIFO per (source pipe,
// destination pipe, event id), in a flat array indexed by flagSlot. The scheduler
// looks at a WAIT_FLAG's queue at every step it waits at a queue's head, so the
// lookup is an index, not a hash; the FIFOs keep their memory from block to block of
// a core (a block ends with every queue empty, or fails).
type flagQueues struct {
	ids   int // event ids per pipe pair (Chip.FlagEventIDs)
	slots []flagFIFO
	used  []int // the slots that ever held an event, in first-use order
}

// flagFIFO is one queue: its events are buf[head:].
type flagFIFO struct {
	buf  []semEntry
	head int
	used bool
}

// reset empties every queue for a new block of a chip with ids event ids per pair.
func (f *flagQueues) reset(ids int) {
	if f.ids != ids || f.slots == nil {
		f.ids, f.slots, f.used = ids, make([]flagFIFO, numPipes*numPipes*ids), f.used[:0]
		return
	}
	for _, s := range f.used {
		q := &f.slots[s]
		q.buf, q.head, q.used = q.buf[:0], 0, false
	}
	f.used = f.used[:0]
}

// slot is the queue of a SET_FLAG's or WAIT_FLAG's event. checkMachine has checked
// the pipes and the id.
func (f *flagQueues) slot(in *Instr) *flagFIFO {
	src, dst, id := int(in.Args[0].Pipe), int(in.Args[1].Pipe), int(in.Args[2].Imm)
	s := (src*numPipes+dst)*f.ids + id
	q := &f.slots[s]
	if !q.used {
		q.used = true
		f.used = append(f.used, s)
	}
	return q
}

// pending is the events of in's queue, oldest first.
func (f *flagQueues) pending(in *Instr) []semEntry {
	q := f.slot(in)
	return q.buf[q.head:]
}

// push adds an event to in's queue.
func (f *flagQueues) push(in *Instr, e semEntry) {
	q := f.slot(in)
	if q.head > 0 && len(q.buf) == cap(q.buf) { // full: move the pending to the front
		n := copy(q.buf, q.buf[q.head:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, e)
}

// pop removes and returns the oldest event of in's queue, which must have one.
func (f *flagQueues) pop(in *Instr) semEntry {
	q := f.slot(in)
	e := q.buf[q.head]
	if q.head++; q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return e
}

// each calls fn with every queue that holds events, in first-use order.
func (f *flagQueues) each(fn func(k flagKey, q []semEntry)) {
	for _, s := range f.used {
		if q := &f.slots[s]; q.head < len(q.buf) {
			id, pair := s%f.ids, s/f.ids
			fn(flagKey{pipePair{isa.Pipe(pair / numPipes), isa.Pipe(pair % numPipes)}, id}, q.buf[q.head:])
		}
	}
}
