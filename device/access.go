package device

import "pypto/isa"

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
// which can only add hazards, never miss one).
func gmViewSpan(o Operand) (span, bool) {
	lo, hi, empty := viewSpan(o.GM)
	if empty {
		return span{}, false
	}
	size := o.DType.Size()
	return span{space: gmSpace + o.GM.Param, lo: lo * size, hi: (hi + 1) * size}, true
}

// accesses lists the bytes an instruction reads and writes. By the opcode table's
// convention the first operand is the destination; TMATMUL_ACC also reads it.
func accesses(in Instr) accessSet {
	var s accessSet
	add := func(o Operand, write bool) {
		var sp span
		switch o.Kind {
		case isa.KindTile:
			sp = tileSpan(o)
		case isa.KindGM:
			var ok bool
			if sp, ok = gmViewSpan(o); !ok {
				return
			}
		default:
			return
		}
		if write {
			s.writes = append(s.writes, sp)
		} else {
			s.reads = append(s.reads, sp)
		}
	}
	switch in.Op {
	case isa.SET_FLAG, isa.WAIT_FLAG, isa.TSYNC:
		return s
	case isa.TEXTRACT:
		add(in.Args[0], true)
		s.reads = append(s.reads, extractSpan(in))
		return s
	}
	for i, a := range in.Args {
		add(a, i == 0)
	}
	if in.Op == isa.TMATMUL_ACC {
		add(in.Args[0], false)
	}
	return s
}

// extractSpan is the part of the source tile a TEXTRACT reads: from its first
// sub-tile element to its last, row-major.
func extractSpan(in Instr) span {
	dst, src := in.Args[0], in.Args[1]
	r, c := int(in.Args[2].Imm), int(in.Args[3].Imm)
	size := src.DType.Size()
	first := (r*src.Cols + c) * size
	last := ((r+dst.Rows-1)*src.Cols + c + dst.Cols) * size
	return span{space: int(src.Loc), lo: src.Addr + first, hi: src.Addr + last}
}
