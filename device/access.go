package device

import "math"

// span is a half-open byte range in one address space: an on-chip buffer (space =
// its Location) or one GM param (space = gmSpace + param index, offsets relative to
// the param's start). Distinct params of one program are assumed not to overlap in GM;
// RunTask checks that assumption for params the program writes.
type span struct {
	space  int
	lo, hi int
}

const gmSpace = 1 << 8 // above every isa.Location

func (a span) overlaps(b span) bool { return a.space == b.space && a.lo < b.hi && b.lo < a.hi }

// accessSet is what one instruction reads and writes.
type accessSet struct {
	reads, writes []span
}

func (s accessSet) empty() bool { return len(s.reads) == 0 && len(s.writes) == 0 }

// conflicts reports a RAW, WAR or WAW hazard between an earlier access set s and a
// later one t.
func (s accessSet) conflicts(t accessSet) bool {
	for _, w := range s.writes {
		for _, x := range t.reads {
			if w.overlaps(x) {
				return true
			}
		}
		for _, x := range t.writes {
			if w.overlaps(x) {
				return true
			}
		}
	}
	for _, r := range s.reads {
		for _, x := range t.writes {
			if r.overlaps(x) {
				return true
			}
		}
	}
	return false
}

func tileSpan(o Operand) span {
	return span{space: int(o.Loc), lo: o.Addr, hi: o.Addr + o.Bytes()}
}

// gmViewSpan is the byte range of a param a view touches (its bounding range: a
// strided view is treated as touching everything between its first and last element,
// which can only add hazards, never miss one). A view a register moves may touch any
// of its param until it runs; the simulator sees it resolved.
func gmViewSpan(o Operand) (span, bool) {
	if o.GM.OffsetReg != 0 {
		return span{space: gmSpace + o.GM.Param, lo: 0, hi: math.MaxInt}, true
	}
	lo, hi, empty := viewSpan(o.GM)
	if empty {
		return span{}, false
	}
	size := o.DType.Size()
	return span{space: gmSpace + o.GM.Param, lo: lo * size, hi: (hi + 1) * size}, true
}

// accesses lists the bytes an instruction reads and writes, as its opTable entry
// says.
func accesses(in Instr) accessSet {
	var s accessSet
	addAccesses(&in, &s)
	return s
}

// addAccesses adds the bytes in reads and writes to s.
func addAccesses(in *Instr, s *accessSet) {
	if impl := lookupOp(in.Op); impl != nil && impl.access != nil {
		impl.access(in, s)
		return
	}
	conventionalAccess(in, s)
}

// spanArena hands out the span slices of the access sets a block's race checker
// keeps, from chunks of arenaChunk spans, so that issuing an instruction whose
// operands a register moves allocates a share of a chunk, not slices of its own.
// A chunk is freed when no kept access set refers to it any more.
type spanArena struct {
	chunk   []span
	scratch accessSet // the access set being computed
}

const arenaChunk = 1024

// accesses is accesses(*in) with its spans from the arena.
func (a *spanArena) accesses(in *Instr) accessSet {
	s := &a.scratch
	s.reads, s.writes = s.reads[:0], s.writes[:0]
	addAccesses(in, s)
	return accessSet{reads: a.keep(s.reads), writes: a.keep(s.writes)}
}

// keep copies s into the arena.
func (a *spanArena) keep(s []span) []span {
	if len(s) == 0 {
		return nil
	}
	if cap(a.chunk)-len(a.chunk) < len(s) {
		a.chunk = make([]span, 0, max(arenaChunk, len(s)))
	}
	n := len(a.chunk)
	a.chunk = append(a.chunk, s...)
	return a.chunk[n:len(a.chunk):len(a.chunk)]
}
