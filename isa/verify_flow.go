package isa

import (
	"cmp"
	"fmt"
	"slices"
)

// checkFlow checks what spans instructions: loop structure and event pairing. It
// returns the index of the offending instruction (-1 for the program) and the
// message, or "" when the program is consistent. It runs after every instruction has
// passed its own rules, so operands are in range.
func checkFlow(p *Program) (int, string) {
	type openLoop struct {
		at      int
		counter int
		events  map[eventKey]int
	}
	var loops []openLoop
	events := map[eventKey]int{} // set and not yet waited for -> the set_flag's index
	for i, in := range p.Body {
		if r, ok := writtenReg(in); ok {
			for _, l := range loops {
				if l.counter == r {
					return i, fmt.Sprintf("writes %%%s, the counter of the loop at instr %d", quoteName(p.Regs[r].Name), l.at)
				}
			}
		}
		switch in.Op {
		case LOOP:
			loops = append(loops, openLoop{at: i, counter: in.Args[0].Reg, events: copyEvents(events)})
		case ENDLOOP:
			if len(loops) == 0 {
				return i, "endloop without a loop"
			}
			l := loops[len(loops)-1]
			loops = loops[:len(loops)-1]
			if msg := sameEvents(l.events, events); msg != "" {
				return i, fmt.Sprintf("the body of the loop at instr %d %s; a loop body must leave events as it found them", l.at, msg)
			}
		case SET_FLAG:
			k := flagKey(in)
			if at, set := events[k]; set {
				return i, fmt.Sprintf("sets event %s again while the set at instr %d has not been waited for", k, at)
			}
			events[k] = i
		case WAIT_FLAG:
			k := flagKey(in)
			if _, set := events[k]; !set {
				return i, fmt.Sprintf("waits for event %s, which no earlier set_flag set (it would wait forever)", k)
			}
			delete(events, k)
		}
	}
	if len(loops) > 0 {
		return loops[len(loops)-1].at, "loop without an endloop"
	}
	first := -1
	for _, at := range events {
		if first < 0 || at < first {
			first = at
		}
	}
	if first >= 0 {
		return first, fmt.Sprintf("sets event %s, which no later wait_flag waits for", flagKey(p.Body[first]))
	}
	return -1, ""
}

// eventKey is one event: a (source pipe, destination pipe, id) triple.
type eventKey struct {
	src, dst Pipe
	id       int
}

func (k eventKey) String() string { return fmt.Sprintf("%s->%s #%d", k.src, k.dst, k.id) }

func flagKey(in Instr) eventKey {
	return eventKey{in.Args[0].Pipe, in.Args[1].Pipe, int(in.Args[2].Imm)}
}

func copyEvents(m map[eventKey]int) map[eventKey]int {
	c := make(map[eventKey]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// sameEvents says how the events after a loop body differ from those before it.
func sameEvents(before, after map[eventKey]int) string {
	for _, k := range sortedEvents(after) {
		if _, ok := before[k]; !ok {
			return fmt.Sprintf("leaves event %s set", k)
		}
	}
	for _, k := range sortedEvents(before) {
		if _, ok := after[k]; !ok {
			return fmt.Sprintf("consumes event %s, set before the loop", k)
		}
	}
	return ""
}

// sortedEvents orders events so that messages do not depend on map order.
func sortedEvents(m map[eventKey]int) []eventKey {
	keys := make([]eventKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b eventKey) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.dst, b.dst), cmp.Compare(a.id, b.id))
	})
	return keys
}

// writtenReg is the register an instruction writes, if any: the destination of the
// scalar instructions and the counter of a loop.
func writtenReg(in Instr) (int, bool) {
	switch in.Op {
	case SMOV, SADD, SSUB, SMUL, SDIV, SREM, SMIN, SMAX, SLD, LOOP:
		return in.Args[0].Reg, true
	}
	return 0, false
}
