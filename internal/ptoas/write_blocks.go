package ptoas

import (
	"fmt"

	"pypto/isa"
)

// A task's blocks run programs the compiler generated from one template: they differ
// in where their windows are. Blocks whose programs are equal but for the offsets of
// their GM windows (and of no SLD's), each param's windows moved by one amount per
// block, are a class written once, that amount computed from the block index.

// blockClass is the leaves (indices into the function's programs) that share a body,
// and per param the offset of each member's windows from the first member's.
type blockClass struct {
	members []int
	deltas  map[int][]int64
}

// blockClasses groups the function's programs (t.Programs[progs[k]] is leaf k).
func blockClasses(t Task, progs []int) []blockClass {
	var classes []blockClass
	keys := map[string]int{}
	for k, i := range progs {
		p := t.Programs[i]
		key := shapeKey(p)
		if t.Addrs != nil {
			key += fmt.Sprint(t.Addrs[i])
		}
		if c, ok := keys[key]; ok {
			first := t.Programs[progs[classes[c].members[0]]]
			if d, ok := offsetDeltas(first, p); ok {
				classes[c].members = append(classes[c].members, k)
				for q, v := range d {
					classes[c].deltas[q] = append(classes[c].deltas[q], v)
				}
				continue
			}
			key += fmt.Sprintf("#%d", k) // moved inconsistently: a class of its own
		}
		keys[key] = len(classes)
		deltas := map[int][]int64{}
		for q := range p.Params {
			deltas[q] = []int64{0}
		}
		classes = append(classes, blockClass{members: []int{k}, deltas: deltas})
	}
	return classes
}

// shapeKey is p's text with the offsets of its windows (but SLDs') zeroed and its
// name dropped.
func shapeKey(p *isa.Program) string {
	q := *p
	q.Name = ""
	q.Body = make([]isa.Instr, len(p.Body))
	for i, in := range p.Body {
		out := in
		if in.Op != isa.SLD {
			out.Args = append([]isa.Operand(nil), in.Args...)
			for j := range out.Args {
				if out.Args[j].Kind == isa.KindGM {
					out.Args[j].GM.Offset = 0
				}
			}
		}
		q.Body[i] = out
	}
	return isa.Format(&q)
}

// offsetDeltas is, per param, how far p's windows are from first's, when every window
// of a param moves by the same amount.
func offsetDeltas(first, p *isa.Program) (map[int]int64, bool) {
	d := map[int]int64{}
	for q := range p.Params {
		d[q] = 0
	}
	seen := map[int]bool{}
	for pc, in := range p.Body {
		for j, a := range in.Args {
			if a.Kind != isa.KindGM || in.Op == isa.SLD {
				continue
			}
			q := a.GM.Param
			v := int64(a.GM.Offset - first.Body[pc].Args[j].GM.Offset)
			if seen[q] && d[q] != v {
				return nil, false
			}
			seen[q], d[q] = true, v
		}
	}
	return d, true
}

// perLeaf writes the i64 value that is vals[k] for leaf members[k]: an affine function
// of the leaf index when the values are one, else a chain of selects on it.
func (w *writer) perLeaf(members []int, vals []int64, base string) string {
	if len(members) == 1 || w.leafSel == "" {
		return w.i64(vals[0])
	}
	m0, v0 := int64(members[0]), vals[0]
	dm, dv := int64(members[1])-m0, vals[1]-v0
	if dm != 0 && dv%dm == 0 {
		a := dv / dm
		affine := true
		for k, m := range members {
			if vals[k] != v0+a*(int64(m)-m0) {
				affine = false
				break
			}
		}
		if affine {
			prod := w.value(base)
			w.line(`%s = "emitc.mul"(%s, %s) : (i64, i64) -> i64`, prod, w.leafSel, w.i64(a))
			sum := w.value(base)
			w.line(`%s = "emitc.add"(%s, %s) : (i64, i64) -> i64`, sum, prod, w.i64(v0-a*m0))
			return sum
		}
	}
	v := w.i64(vals[0])
	for k := 1; k < len(members); k++ {
		if vals[k] == vals[0] {
			continue // the chain's default
		}
		c := w.value("is")
		w.line(`%s = "emitc.cmp"(%s, %s) <{predicate = 0 : i64}> : (i64, i64) -> i1`, c, w.leafSel, w.i64(int64(members[k])))
		next := w.value(base)
		w.line(`%s = "emitc.conditional"(%s, %s, %s) : (i1, i64, i64) -> i64`, next, c, w.i64(vals[k]), v)
		v = next
	}
	return v
}

// delta is the SSA i64 of param q's offset from the class's first member (computed
// once per program body), or "" when the body is one block's.
func (w *writer) delta(q int) string {
	if w.deltas == nil || len(w.members) < 2 {
		return ""
	}
	vals := w.deltas[q]
	allZero := true
	for _, v := range vals {
		allZero = allZero && v == 0
	}
	if allZero {
		return ""
	}
	if v, ok := w.deltaVals[q]; ok {
		return v
	}
	v := w.perLeaf(w.members, vals, "d")
	w.deltaVals[q] = v
	return v
}
