package core

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Dim is the size of one axis: an integer, or an integer expression over named symbols
// (p.symbol("batch")) whose values are known only when a compiled program runs.
//
// A Dim is kept in one canonical form, a polynomial with integer coefficients whose
// variables are symbols and the floor divisions and remainders that a polynomial cannot
// express (seq//2, (seq+1)%4), so that two Dims are the same expression exactly when
// their canonical texts are equal: batch*seq equals seq*batch, (s+1)-1 is s, 2*s//2 is
// s. Symbols stand for non-negative integers; // and % are Python's floor division and
// remainder. The zero Dim is the constant 0.
type Dim struct {
	terms []dimTerm // ordered by dimTermLess; no zero coefficients
	text  string    // the canonical text, cached (empty only for the zero value)
}

// dimTerm is coef * the product of its factors (a constant when there are none).
type dimTerm struct {
	coef int64
	mono []dimFactor // ordered by atom text
}

// dimFactor is an atom raised to a positive power.
type dimFactor struct {
	atom *dimAtom
	pow  int
}

// dimAtom is a symbol, or x//y or x%y that does not simplify further.
type dimAtom struct {
	sym  string
	op   string // "//" or "%" when sym is empty
	x, y Dim
	text string
}

// DimConst is the constant n.
func DimConst(n int) Dim {
	if n == 0 {
		return Dim{}
	}
	return newDim([]dimTerm{{coef: int64(n)}})
}

// DimSym is the symbol name, which must be an identifier (see isIdent).
func DimSym(name string) Dim {
	a := &dimAtom{sym: name, text: name}
	return newDim([]dimTerm{{coef: 1, mono: []dimFactor{{atom: a, pow: 1}}}})
}

func newDim(terms []dimTerm) Dim {
	d := Dim{terms: terms}
	d.text = d.format()
	return d
}

// Const returns the value of a constant Dim.
func (d Dim) Const() (int, bool) {
	switch {
	case len(d.terms) == 0:
		return 0, true
	case len(d.terms) == 1 && len(d.terms[0].mono) == 0:
		return int(d.terms[0].coef), true
	}
	return 0, false
}

// IsConst reports whether d has no symbols.
func (d Dim) IsConst() bool { _, ok := d.Const(); return ok }

// Equal reports whether d and o are the same expression.
func (d Dim) Equal(o Dim) bool { return d.String() == o.String() }

// String is the canonical text, in Python syntax: 1024, batch*seq, seq+1, seq//2.
func (d Dim) String() string {
	if d.text == "" {
		return "0"
	}
	return d.text
}

// Symbols lists the symbols d depends on, sorted.
func (d Dim) Symbols() []string {
	set := map[string]bool{}
	d.collectSymbols(set)
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func (d Dim) collectSymbols(set map[string]bool) {
	for _, t := range d.terms {
		for _, f := range t.mono {
			if f.atom.sym != "" {
				set[f.atom.sym] = true
			} else {
				f.atom.x.collectSymbols(set)
				f.atom.y.collectSymbols(set)
			}
		}
	}
}

// Add is d + o.
func (d Dim) Add(o Dim) Dim {
	byKey := map[string]*dimTerm{}
	var order []string
	for _, src := range [][]dimTerm{d.terms, o.terms} {
		for _, t := range src {
			k := monoKey(t.mono)
			if acc, ok := byKey[k]; ok {
				acc.coef += t.coef
				continue
			}
			c := t
			byKey[k] = &c
			order = append(order, k)
		}
	}
	var out []dimTerm
	for _, k := range order {
		if t := byKey[k]; t.coef != 0 {
			out = append(out, *t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return dimTermLess(out[i], out[j]) })
	return newDim(out)
}

// Neg is -d.
func (d Dim) Neg() Dim { return d.Scale(-1) }

// Sub is d - o.
func (d Dim) Sub(o Dim) Dim { return d.Add(o.Neg()) }

// Scale is k * d.
func (d Dim) Scale(k int64) Dim {
	if k == 0 {
		return Dim{}
	}
	out := make([]dimTerm, len(d.terms))
	for i, t := range d.terms {
		out[i] = dimTerm{coef: t.coef * k, mono: t.mono}
	}
	return newDim(out)
}

// Mul is d * o.
func (d Dim) Mul(o Dim) Dim {
	sum := Dim{}
	for _, a := range d.terms {
		var prods []dimTerm
		for _, b := range o.terms {
			prods = append(prods, dimTerm{coef: a.coef * b.coef, mono: mulMono(a.mono, b.mono)})
		}
		sum = sum.Add(newDim(prods))
	}
	return sum
}

// FloorDiv is d // o (Python's floor division). It simplifies what divides exactly
// (2*s//2 is s, (2*s+3)//2 is s+1) and keeps the rest as an atom; a constant zero
// divisor is an error.
func (d Dim) FloorDiv(o Dim) (Dim, error) {
	c, isConst := o.Const()
	if isConst && c == 0 {
		return Dim{}, fmt.Errorf("division by zero in %s//%s", d, o)
	}
	if v, ok := d.Const(); ok && isConst {
		return DimConst(floorDiv(v, c)), nil
	}
	if isConst && c == 1 {
		return d, nil
	}
	if q, ok := d.divExact(o); ok {
		return q, nil
	}
	if isConst && c > 0 {
		// d = c*q + r with every coefficient of r in [0, c): floor(d/c) = q + floor(r/c),
		// since q is an integer.
		q, r := d.splitBy(int64(c))
		if rv, ok := r.Const(); ok {
			return q.Add(DimConst(floorDiv(rv, c))), nil
		}
		return q.Add(opAtom("//", r, o)), nil
	}
	return opAtom("//", d, o), nil
}

// Mod is d % o (Python's remainder, with the sign of o).
func (d Dim) Mod(o Dim) (Dim, error) {
	c, isConst := o.Const()
	if isConst && c == 0 {
		return Dim{}, fmt.Errorf("modulo by zero in %s%%%s", d, o)
	}
	if v, ok := d.Const(); ok && isConst {
		return DimConst(floorMod(v, c)), nil
	}
	if _, ok := d.divExact(o); ok {
		return Dim{}, nil
	}
	if isConst && c > 0 {
		_, r := d.splitBy(int64(c))
		if rv, ok := r.Const(); ok {
			return DimConst(floorMod(rv, c)), nil
		}
		return opAtom("%", r, o), nil
	}
	return opAtom("%", d, o), nil
}

// divExact returns d / o when o is a single term that divides every term of d.
func (d Dim) divExact(o Dim) (Dim, bool) {
	if len(o.terms) != 1 {
		return Dim{}, false
	}
	div := o.terms[0]
	out := make([]dimTerm, 0, len(d.terms))
	for _, t := range d.terms {
		if t.coef%div.coef != 0 {
			return Dim{}, false
		}
		m, ok := divMono(t.mono, div.mono)
		if !ok {
			return Dim{}, false
		}
		out = append(out, dimTerm{coef: t.coef / div.coef, mono: m})
	}
	sort.Slice(out, func(i, j int) bool { return dimTermLess(out[i], out[j]) })
	return newDim(out), true
}

// splitBy writes d as c*q + r, every coefficient of r in [0, c).
func (d Dim) splitBy(c int64) (q, r Dim) {
	var qt, rt []dimTerm
	for _, t := range d.terms {
		qc, rc := int64(floorDiv(int(t.coef), int(c))), int64(floorMod(int(t.coef), int(c)))
		if qc != 0 {
			qt = append(qt, dimTerm{coef: qc, mono: t.mono})
		}
		if rc != 0 {
			rt = append(rt, dimTerm{coef: rc, mono: t.mono})
		}
	}
	return newDim(qt), newDim(rt)
}

func opAtom(op string, x, y Dim) Dim {
	a := &dimAtom{op: op, x: x, y: y}
	a.text = leftOperandText(x) + op + operandText(y)
	return newDim([]dimTerm{{coef: 1, mono: []dimFactor{{atom: a, pow: 1}}}})
}

// Eval computes d for the given symbol values; a symbol without a value, or a
// division by zero, is an error.
func (d Dim) Eval(values map[string]int) (int, error) {
	sum := 0
	for _, t := range d.terms {
		v := int(t.coef)
		for _, f := range t.mono {
			a, err := f.atom.eval(values)
			if err != nil {
				return 0, err
			}
			for i := 0; i < f.pow; i++ {
				v *= a
			}
		}
		sum += v
	}
	return sum, nil
}

func (a *dimAtom) eval(values map[string]int) (int, error) {
	if a.sym != "" {
		v, ok := values[a.sym]
		if !ok {
			return 0, fmt.Errorf("symbol %s has no value", a.sym)
		}
		return v, nil
	}
	x, err := a.x.Eval(values)
	if err != nil {
		return 0, err
	}
	y, err := a.y.Eval(values)
	if err != nil {
		return 0, err
	}
	if y == 0 {
		return 0, fmt.Errorf("%s is 0 in %s", a.y, a.text)
	}
	if a.op == "//" {
		return floorDiv(x, y), nil
	}
	return floorMod(x, y), nil
}

// Substitute replaces the symbols that values names by their values, simplifying.
func (d Dim) Substitute(values map[string]int) Dim {
	sum := Dim{}
	for _, t := range d.terms {
		prod := DimConst(int(t.coef))
		for _, f := range t.mono {
			a := f.atom.substitute(values)
			for i := 0; i < f.pow; i++ {
				prod = prod.Mul(a)
			}
		}
		sum = sum.Add(prod)
	}
	return sum
}

func (a *dimAtom) substitute(values map[string]int) Dim {
	if a.sym != "" {
		if v, ok := values[a.sym]; ok {
			return DimConst(v)
		}
		return DimSym(a.sym)
	}
	x, y := a.x.Substitute(values), a.y.Substitute(values)
	var r Dim
	var err error
	if a.op == "//" {
		r, err = x.FloorDiv(y)
	} else {
		r, err = x.Mod(y)
	}
	if err != nil { // a divisor that became 0: keep the atom, Eval reports it
		return opAtom(a.op, x, y)
	}
	return r
}

// linearIn reports, when d is k*s + rest with rest free of s and s nowhere else in d,
// the coefficient k and rest: what binding solves d = v for s.
func (d Dim) linearIn(s string) (k int, rest Dim, ok bool) {
	for _, t := range d.terms {
		if len(t.mono) == 1 && t.mono[0].atom.sym == s && t.mono[0].pow == 1 {
			k += int(t.coef)
			continue
		}
		set := map[string]bool{}
		newDim([]dimTerm{t}).collectSymbols(set)
		if set[s] {
			return 0, Dim{}, false
		}
		rest = rest.Add(newDim([]dimTerm{t}))
	}
	return k, rest, k != 0
}

func (d Dim) format() string {
	if len(d.terms) == 0 {
		return ""
	}
	var b strings.Builder
	for i, t := range d.terms {
		coef := t.coef
		unaryMinus := i == 0 && coef < 0
		if i > 0 {
			if coef < 0 {
				b.WriteString("-")
				coef = -coef
			} else {
				b.WriteString("+")
			}
		} else if coef < 0 && len(t.mono) > 0 {
			b.WriteString("-")
			coef = -coef
		}
		if len(t.mono) == 0 {
			b.WriteString(strconv.FormatInt(coef, 10))
			continue
		}
		parts := []string{}
		if coef != 1 {
			parts = append(parts, strconv.FormatInt(coef, 10))
		}
		alone := coef == 1 && len(t.mono) == 1 && t.mono[0].pow == 1 && !unaryMinus
		for _, f := range t.mono {
			s := f.atom.text
			if f.atom.sym == "" && !alone {
				s = "(" + s + ")" // 2*(s//2) is not 2*s//2, nor -(s//2) -s//2
			}
			for k := 0; k < f.pow; k++ {
				parts = append(parts, s)
			}
		}
		b.WriteString(strings.Join(parts, "*"))
	}
	return b.String()
}

// leftOperandText prints the left operand of // or %: bare when it is a single term
// (// and % associate left with *, so b*s//3 is (b*s)//3), parenthesised otherwise.
func leftOperandText(d Dim) string {
	if len(d.terms) <= 1 {
		return d.String()
	}
	return "(" + d.String() + ")"
}

// operandText prints the right operand of // or %: bare when it is a non-negative
// constant or a symbol, parenthesised otherwise.
func operandText(d Dim) string {
	if v, ok := d.Const(); ok && v >= 0 {
		return d.String()
	}
	if len(d.terms) == 1 && d.terms[0].coef == 1 && len(d.terms[0].mono) == 1 &&
		d.terms[0].mono[0].pow == 1 && d.terms[0].mono[0].atom.sym != "" {
		return d.String()
	}
	return "(" + d.String() + ")"
}

func monoKey(m []dimFactor) string {
	parts := make([]string, 0, len(m))
	for _, f := range m {
		for k := 0; k < f.pow; k++ {
			parts = append(parts, f.atom.text)
		}
	}
	return strings.Join(parts, "*")
}

func monoDegree(m []dimFactor) int {
	n := 0
	for _, f := range m {
		n += f.pow
	}
	return n
}

// dimTermLess orders terms by falling degree, then those of symbols alone before those
// with a // or %, then by text; the constant comes last.
func dimTermLess(a, b dimTerm) bool {
	da, db := monoDegree(a.mono), monoDegree(b.mono)
	if da != db {
		return da > db
	}
	if oa, ob := hasOpAtom(a.mono), hasOpAtom(b.mono); oa != ob {
		return ob
	}
	return monoKey(a.mono) < monoKey(b.mono)
}

func hasOpAtom(m []dimFactor) bool {
	for _, f := range m {
		if f.atom.sym == "" {
			return true
		}
	}
	return false
}

func mulMono(a, b []dimFactor) []dimFactor {
	out := append([]dimFactor(nil), a...)
	for _, f := range b {
		found := false
		for i := range out {
			if out[i].atom.text == f.atom.text {
				out[i].pow += f.pow
				found = true
			}
		}
		if !found {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].atom.text < out[j].atom.text })
	return out
}

// divMono returns a / b when every factor of b appears in a at least as often.
func divMono(a, b []dimFactor) ([]dimFactor, bool) {
	out := append([]dimFactor(nil), a...)
	for _, f := range b {
		found := false
		for i := range out {
			if out[i].atom.text == f.atom.text && out[i].pow >= f.pow {
				out[i].pow -= f.pow
				found = true
			}
		}
		if !found {
			return nil, false
		}
	}
	kept := out[:0]
	for _, f := range out {
		if f.pow > 0 {
			kept = append(kept, f)
		}
	}
	return kept, true
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int) int { return a - floorDiv(a, b)*b }
