package core

import (
	"fmt"
	"strings"
)

// Constraint is a fact about symbol values that an op on symbolic shapes needs and that
// tracing cannot decide, e.g. that seq equals 1024 for a matmul's inner dimensions.
// Mismatches that are certain already at trace time (1024 against 512, s against s+1)
// are errors then; the rest become constraints, which an executor checks when a run
// binds the symbols, before it specialises the graph.
type Constraint struct {
	A, B Dim
	Rel  Relation
	Op   string // the op that needs it
	Why  string // what the op does with the dims, e.g. "shapes [b,s] and [b,7] broadcast"
	Loc  Location
}

// Relation is what a Constraint requires of its two dims.
type Relation string

const (
	Equal    Relation = "=="
	AtLeast  Relation = ">="
	NotEqual Relation = "!="
)

func (r Relation) holds(a, b int) bool {
	switch r {
	case AtLeast:
		return a >= b
	case NotEqual:
		return a != b
	}
	return a == b
}

func (r Relation) words() string {
	switch r {
	case AtLeast:
		return "at least"
	case NotEqual:
		return "different from"
	}
	return "equal to"
}

// String prints the constraint as "seq == 1024" or "seq >= 3".
func (c Constraint) String() string { return c.A.String() + " " + string(c.Rel) + " " + c.B.String() }

// Check evaluates the constraint for the symbol values given; a violation is a
// ShapeError naming the symbols and both values.
func (c Constraint) Check(values map[string]int) *Error {
	a, errA := c.A.Eval(values)
	b, errB := c.B.Eval(values)
	if errA != nil || errB != nil {
		return Errorf(ShapeError, "%s: cannot check %s: %v", c.Op, c, firstErr(errA, errB)).WithLoc(c.Loc)
	}
	if c.Rel.holds(a, b) {
		return nil
	}
	need := c.Rel.words()
	var msg string
	if _, bConst := c.B.Const(); bConst {
		msg = fmt.Sprintf("%s is %d, but %s needs it %s %d", describeDim(c.A, values), a, c.Op, need, b)
	} else {
		msg = fmt.Sprintf("%s is %d and %s is %d, but %s needs the first %s the second", describeDim(c.A, values), a, describeDim(c.B, values), b, c.Op, need)
	}
	e := Errorf(ShapeError, "%s", msg).WithLoc(c.Loc)
	if c.Why != "" {
		e.Because("%s", c.Why)
	}
	return e.Because("the program was traced with symbolic shapes; this run binds %s", bindingString(values, c.symbols()))
}

func (c Constraint) symbols() []string {
	set := map[string]bool{}
	c.A.collectSymbols(set)
	c.B.collectSymbols(set)
	return sortedKeys(set)
}

// describeDim names a dim in a message: the symbol itself, or the expression with the
// values of its symbols.
func describeDim(d Dim, values map[string]int) string {
	syms := d.Symbols()
	if len(syms) == 1 && d.String() == syms[0] {
		return syms[0]
	}
	if len(syms) == 0 {
		return d.String()
	}
	return fmt.Sprintf("%s (with %s)", d, bindingString(values, syms))
}

func bindingString(values map[string]int, syms []string) string {
	parts := make([]string, 0, len(syms))
	for _, s := range syms {
		if v, ok := values[s]; ok {
			parts = append(parts, fmt.Sprintf("%s=%d", s, v))
		}
	}
	return strings.Join(parts, ", ")
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// GraphConstraints re-infers every op of g and collects the constraints its symbolic
// shapes need, each carrying the node's location. A concrete graph has none.
func GraphConstraints(g *Graph) ([]Constraint, error) {
	var out []Constraint
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Op == OpParam {
			continue
		}
		types := make([]TensorType, len(n.Inputs))
		for k, in := range n.Inputs {
			types[k] = g.Nodes[in].Type
		}
		_, _, cons, err := InferOpConstraints(n.Op, types, n.Attrs)
		if err != nil {
			return nil, err.WithLoc(n.Loc)
		}
		for _, c := range cons {
			c.Loc = n.Loc
			key := c.String() + "\x00" + c.Loc.String()
			if !seen[key] {
				seen[key] = true
				out = append(out, c)
			}
		}
	}
	return out, nil
}
