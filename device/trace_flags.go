package device

import (
	"slices"

	"pypto/isa"
)

// Flag flows: each WAIT_FLAG of a block is paired with the SET_FLAG it consumed (the
// k-th wait of an event with the k-th set, as the simulator's per-block queues pair
// them) and drawn as a flow arrow from the instruction the set followed on its source
// pipe to the instruction the wait let start on its destination pipe. Those are the
// slices the arrow binds to: flags take no pipe time and have no slice of their own.

// flagFlow is one set -> wait pair bound to two slices of a task's trace.
type flagFlow struct {
	from, to TraceEvent // the producing and the released instruction
	set      TraceEvent // the SET_FLAG (its event and times)
	wait     TraceEvent // the WAIT_FLAG
}

// blockPipe is one pipe of one block on one core.
type blockPipe struct {
	kind        isa.CoreKind
	core, block int
	pipe        isa.Pipe
}

// flagQueue is one flag event of one block on one core.
type flagQueue struct {
	kind        isa.CoreKind
	core, block int
	flag        FlagEvent
}

// flagFlows pairs the sets and waits of a task's trace; unbound counts the pairs
// with no instruction before the set or after the wait to bind an arrow to.
func flagFlows(trace []TraceEvent) (flows []flagFlow, unbound int) {
	spans := map[blockPipe][]TraceEvent{}
	type setsWaits struct{ sets, waits []TraceEvent }
	queues := map[flagQueue]*setsWaits{}
	var order []flagQueue // first seen first, so the flows come out in trace order
	for _, e := range trace {
		switch e.Op {
		case isa.SET_FLAG, isa.WAIT_FLAG:
			q := flagQueue{e.Kind, e.Core, e.Block, e.Flag}
			sw := queues[q]
			if sw == nil {
				sw = &setsWaits{}
				queues[q] = sw
				order = append(order, q)
			}
			if e.Op == isa.SET_FLAG {
				sw.sets = append(sw.sets, e)
			} else {
				sw.waits = append(sw.waits, e)
			}
		default:
			if e.End > e.Start {
				k := blockPipe{e.Kind, e.Core, e.Block, e.Pipe}
				spans[k] = append(spans[k], e)
			}
		}
	}
	byStart := func(a, b TraceEvent) int { return cmpInt64(a.Start, b.Start) }
	for _, s := range spans {
		slices.SortStableFunc(s, byStart)
	}
	for _, q := range order {
		ss, ws := queues[q].sets, queues[q].waits
		slices.SortStableFunc(ss, byStart)
		slices.SortStableFunc(ws, byStart)
		for i := range min(len(ss), len(ws)) {
			src := spans[blockPipe{q.kind, q.core, q.block, q.flag.Src}]
			dst := spans[blockPipe{q.kind, q.core, q.block, q.flag.Dst}]
			// The set follows the last instruction its pipe started before it; the
			// wait releases the first one its pipe starts at or after it.
			before := searchStart(src, ss[i].Start) - 1
			after := searchStart(dst, ws[i].Start)
			if before < 0 || after >= len(dst) {
				unbound++
				continue
			}
			flows = append(flows, flagFlow{from: src[before], to: dst[after], set: ss[i], wait: ws[i]})
		}
	}
	return flows, unbound
}

// searchStart is the index of the first slice starting at or after t.
func searchStart(s []TraceEvent, t int64) int {
	i, _ := slices.BinarySearchFunc(s, t, func(e TraceEvent, t int64) int { return cmpInt64(e.Start, t) })
	return i
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
