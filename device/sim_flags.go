package device

// flagQueues holds a block's pending SET_FLAG events: one FIFO per (source pipe,
// destination pipe, event id) that the block's program uses, indexed by the queue
// number progInfo gives each flag instruction. The scheduler looks at a WAIT_FLAG's
// queue at every step it waits at a pipe's head, so the lookup is an index, not a
// hash; the FIFOs keep their memory from block to block of a core (a block ends with
// every queue empty, or fails).
type flagQueues struct {
	info  *progInfo
	slots []flagFIFO
}

// flagFIFO is one queue: its events are buf[head:].
type flagFIFO struct {
	buf  []semEntry
	head int
}

// reset empties the queues for a block of the program info describes.
func (f *flagQueues) reset(info *progInfo) {
	f.info = info
	f.slots = grow(f.slots, len(info.flagKeys))
	for i := range f.slots {
		q := &f.slots[i]
		q.buf, q.head = q.buf[:0], 0
	}
}

// pending is the events of the queue of the flag instruction at pc, oldest first.
func (f *flagQueues) pending(pc int) []semEntry {
	q := &f.slots[f.info.flagSlot[pc]]
	return q.buf[q.head:]
}

// push adds an event to the queue of the SET_FLAG at pc.
func (f *flagQueues) push(pc int, e semEntry) {
	q := &f.slots[f.info.flagSlot[pc]]
	if q.head > 0 && len(q.buf) == cap(q.buf) { // full: move the pending to the front
		n := copy(q.buf, q.buf[q.head:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, e)
}

// pop removes and returns the oldest event of the queue of the WAIT_FLAG at pc, which
// must have one.
func (f *flagQueues) pop(pc int) semEntry {
	q := &f.slots[f.info.flagSlot[pc]]
	e := q.buf[q.head]
	if q.head++; q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return e
}

// each calls fn with every queue that holds events, in the order of the program's
// first instruction on each.
func (f *flagQueues) each(fn func(k flagKey, q []semEntry)) {
	for i := range f.slots {
		if q := &f.slots[i]; q.head < len(q.buf) {
			fn(f.info.flagKeys[i], q.buf[q.head:])
		}
	}
}
