package core

import (
	"strconv"
	"strings"

	"pypto/dtype"
)

// Symbolic shape inference. An op applied to symbolic types (or with symbolic list
// attributes) is inferred by its symOp: a rule that computes the result's dims and
// records, as Constraints, what only symbol values can decide. The result's dtype, and
// every check that does not depend on sizes (dtypes, axes in range, attribute values),
// come from the op's own concrete Infer run on stand-in inputs of the same ranks whose
// dims are all 1, so the two paths cannot disagree on them. Where an op's concrete
// Infer cannot take such stand-ins (its attributes fix sizes), the symOp gives the
// dtype itself.
//
// The rules are sound by construction and checked by Specialize: for every binding of
// the symbols that satisfies the constraints, the op's concrete Infer succeeds on the
// substituted inputs and gives exactly the substituted symbolic type. One simplification
// keeps them so: a symbolic dim never broadcasts. Where it meets a different size the
// two must be equal (a symbol that is 1 at run time does not stretch; use a literal 1).

// symOp is the symbolic inference of one op.
type symOp struct {
	rule  func(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error)
	dtype func(in []TensorType, attrs Attrs) dtype.DType // nil: the op's Infer on stand-ins
}

var symOps = map[string]symOp{}

func registerSym(rule func(*symCtx, []TensorType, Attrs) ([]Dim, *Error), names ...string) {
	for _, n := range names {
		symOps[n] = symOp{rule: rule}
	}
}

// HasSymbolicRule reports whether op can be applied to symbolic shapes.
func HasSymbolicRule(op string) bool { _, ok := symOps[op]; return ok }

// isSymbolicCall reports whether an op application involves symbolic dims.
func isSymbolicCall(in []TensorType, attrs Attrs) bool {
	for _, t := range in {
		if t.IsSymbolic() {
			return true
		}
	}
	return attrs.IsSymbolic()
}

func inferSymbolic(def *OpDef, in []TensorType, attrs Attrs) (TensorType, []Constraint, *Error) {
	op, ok := symOps[def.Name]
	if !ok {
		return TensorType{}, nil, Errorf(ShapeError, "%s does not support symbolic shapes yet (inputs %s)", def.Name, joinTypes(in)).
			Suggest("compile with concrete shapes for this function: p.compile(fn, dynamic=False)")
	}
	var dt dtype.DType
	if op.dtype != nil {
		dt = op.dtype(in, attrs)
	} else { // first, so that dtype and attribute errors come first, as in concrete inference
		t, err := def.Infer(standIns(in), standInAttrs(attrs))
		if err != nil {
			return TensorType{}, nil, err
		}
		dt = t.DType
	}
	c := &symCtx{op: def.Name}
	dims, err := op.rule(c, in, attrs)
	if err != nil {
		return TensorType{}, nil, err
	}
	for _, d := range dims {
		if v, ok := d.Const(); ok && v < 0 {
			return TensorType{}, nil, Errorf(ShapeError, "%s: the result would have a negative dimension: %s", def.Name, DimsString(dims))
		}
	}
	return SymbolicType(dt, dims), c.cons, nil
}

// standIns are inputs of the same dtypes and ranks with every dim 1.
func standIns(in []TensorType) []TensorType {
	out := make([]TensorType, len(in))
	for i, t := range in {
		s := make(Shape, len(t.Shape))
		for j := range s {
			s[j] = 1
		}
		out[i] = TensorType{DType: t.DType, Shape: s}
	}
	return out
}

// standInAttrs replaces the symbolic dims of list attributes by 1.
func standInAttrs(attrs Attrs) Attrs {
	if !attrs.IsSymbolic() {
		return attrs
	}
	out := make(Attrs, len(attrs))
	for k, v := range attrs {
		if dims, ok := v.([]Dim); ok {
			ints := make([]int64, len(dims))
			for i, d := range dims {
				ints[i] = 1
				if n, ok := d.Const(); ok {
					ints[i] = int64(n)
				}
			}
			v = ints
		}
		out[k] = v
	}
	return out
}

// symCtx collects the constraints one op application needs.
type symCtx struct {
	op   string
	cons []Constraint
}

// need records that a rel b must hold, unless it certainly does; it returns false when
// it certainly does not (the caller reports that as an error now).
func (c *symCtx) need(a Dim, rel Relation, b Dim, why string) bool {
	if v, ok := a.Sub(b).Const(); ok {
		switch rel {
		case Equal:
			return v == 0
		case AtLeast:
			return v >= 0
		case NotEqual:
			return v != 0
		}
	}
	if rel == AtLeast {
		if bv, ok := b.Const(); ok && bv <= 0 && nonNegative(a) {
			return true
		}
	}
	if rel == Equal && !hasSolution(a.Sub(b)) {
		return false
	}
	a, b = simplifyConstraint(a, rel, b)
	for _, k := range c.cons {
		if k.Rel == rel && k.A.String() == a.String() && k.B.String() == b.String() {
			return true // recorded already (one size checked against two others that must agree)
		}
	}
	c.cons = append(c.cons, Constraint{A: a, B: b, Rel: rel, Op: c.op, Why: why})
	return true
}

// simplifyConstraint rewrites a rel b about one symbol s, linear with coefficient 1
// (or -1 for == and !=), as s rel constant: "seq >= 2" rather than "seq-1 >= 1", so
// that a violation names the symbol and its value. Otherwise a constant goes right.
func simplifyConstraint(a Dim, rel Relation, b Dim) (Dim, Dim) {
	d := a.Sub(b)
	if syms := d.Symbols(); len(syms) == 1 {
		k, rest, ok := d.linearIn(syms[0])
		c, isConst := rest.Const()
		if ok && isConst && (k == 1 || (k == -1 && rel != AtLeast)) {
			return DimSym(syms[0]), DimConst(-c * k)
		}
	}
	if rel != AtLeast && a.IsConst() && !b.IsConst() {
		return b, a // "seq == 7" reads better than "7 == seq"
	}
	return a, b
}

// hasSolution reports whether d == 0 can hold for some sizes; it says no only for a
// d linear in a single symbol, k*s + c, whose root is not a non-negative integer.
func hasSolution(d Dim) bool {
	syms := d.Symbols()
	if len(syms) != 1 {
		return true
	}
	k, rest, ok := d.linearIn(syms[0])
	c, isConst := rest.Const()
	if !ok || !isConst {
		return true
	}
	return -c%k == 0 && -c/k >= 0
}

// nonNegative reports whether d is non-negative for every binding (symbols are sizes).
func nonNegative(d Dim) bool {
	for _, t := range d.terms {
		if t.coef < 0 {
			return false
		}
		for _, f := range t.mono {
			a := f.atom
			if a.sym != "" {
				continue
			}
			if y, ok := a.y.Const(); !ok || y <= 0 || !nonNegative(a.x) {
				return false
			}
		}
	}
	return true
}

// broadcast applies numpy broadcasting to symbolic shapes: a constant 1 stretches, and
// any other dims of an axis must be equal. It returns false when two dims certainly
// differ.
func (c *symCtx) broadcast(shapes [][]Dim, why func() string) ([]Dim, bool) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]Dim, n)
	one := DimConst(1)
	for i := 0; i < n; i++ {
		var dims []Dim
		for _, s := range shapes {
			if j := len(s) - n + i; j >= 0 && !s[j].Equal(one) {
				dims = append(dims, s[j])
			}
		}
		if len(dims) == 0 {
			out[i] = one
			continue
		}
		rep := dims[0]
		for _, d := range dims {
			if d.IsConst() {
				rep = d // a constant says more than a symbol it must equal
				break
			}
		}
		for _, d := range dims {
			if !d.Equal(rep) && !c.need(d, Equal, rep, why()) {
				return nil, false
			}
		}
		out[i] = rep
	}
	return out, true
}

func joinTypes(in []TensorType) string {
	parts := make([]string, len(in))
	for i, t := range in {
		parts[i] = t.String()
	}
	return strings.Join(parts, ", ")
}

func joinDimShapes(in []TensorType) string {
	parts := make([]string, len(in))
	for i, t := range in {
		parts[i] = t.ShapeString()
	}
	if len(parts) == 2 {
		return parts[0] + " and " + parts[1]
	}
	return strings.Join(parts, ", ")
}

// dimProduct is the product of dims (1 for none).
func dimProduct(dims []Dim) Dim {
	p := DimConst(1)
	for _, d := range dims {
		p = p.Mul(d)
	}
	return p
}

func itoa(n int) string { return strconv.Itoa(n) }
