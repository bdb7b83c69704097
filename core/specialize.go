package core

import (
	"fmt"
	"sort"
	"strings"
)

// A symbolic Tensor Graph is compiled by specialising it: BindSymbols reads the symbol
// values off the concrete shapes of the inputs, the graph's constraints are checked for
// them (GraphConstraints, Constraint.Check), and Specialize rebuilds the graph with
// every symbol replaced by its value, re-inferring each op with its concrete Infer.

// GraphSymbols lists the symbols that the types and attributes of g mention, sorted.
func GraphSymbols(g *Graph) []string {
	set := map[string]bool{}
	for _, n := range g.Nodes {
		for _, d := range n.Type.Dims {
			d.collectSymbols(set)
		}
		for _, v := range n.Attrs {
			if dims, ok := v.([]Dim); ok {
				for _, d := range dims {
					d.collectSymbols(set)
				}
			}
		}
	}
	return sortedKeys(set)
}

// Binding gives each symbol of a graph its value for one run.
type Binding map[string]int

// Key is a canonical text of the binding ("batch=4,seq=128"), for caches.
func (b Binding) Key() string {
	names := make([]string, 0, len(b))
	for n := range b {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%d", n, b[n])
	}
	return strings.Join(parts, ",")
}

// BindSymbols reads the value of every symbol of g's params from the concrete shapes of
// the inputs (one per param, in order). A dim that is a symbol binds it; a dim that is
// an expression binds its one unbound symbol when it is linear in it (2*s+1), once the
// others are known; a constant must match. Conflicts are ShapeErrors naming the symbol
// and both values: "batch is 4 from input 0 but 8 from input 1".
func BindSymbols(g *Graph, shapes []Shape) (Binding, error) {
	if len(shapes) != len(g.Params) {
		return nil, Errorf(ValueError, "graph %s takes %d inputs, got %d shapes", quoteName(g.Name), len(g.Params), len(shapes))
	}
	b := Binding{}
	from := map[string]string{} // where each symbol got its value, for messages
	type pending struct {
		input, axis int
		d           Dim
		v           int
	}
	var later []pending
	for k, p := range g.Params {
		t, s := g.Nodes[p].Type, shapes[k]
		if len(s) != len(t.Shape) {
			return nil, Errorf(ShapeError, "input %d has shape %v, but the program was traced for %d-d inputs of shape %s", k, s, len(t.Shape), t.ShapeString())
		}
		for ax, d := range t.AllDims() {
			v := s[ax]
			if c, ok := d.Const(); ok {
				if c != v {
					return nil, Errorf(ShapeError, "input %d has shape %v, but the program was traced for shape %s: axis %d must be %d", k, s, t.ShapeString(), ax, c).
						Suggest("make that dimension a p.symbol to let it vary")
				}
				continue
			}
			if syms := d.Symbols(); len(syms) == 1 && d.String() == syms[0] {
				name := syms[0]
				where := fmt.Sprintf("input %d", k)
				if old, ok := b[name]; ok && old != v {
					return nil, Errorf(ShapeError, "%s is %d from %s but %d from %s", name, old, from[name], v, where).
						Because("%s of shape %v has %s at axis %d; every use of a symbol must have one size in a run", where, s, name, ax)
				}
				if _, ok := b[name]; !ok {
					b[name], from[name] = v, where
				}
				continue
			}
			later = append(later, pending{k, ax, d, v})
		}
	}
	for progress := true; progress && len(later) > 0; {
		progress = false
		var rest []pending
		for _, p := range later {
			unbound := []string{}
			for _, s := range p.d.Symbols() {
				if _, ok := b[s]; !ok {
					unbound = append(unbound, s)
				}
			}
			switch {
			case len(unbound) == 0:
				got, err := p.d.Eval(b)
				if err != nil {
					return nil, Errorf(ShapeError, "input %d: axis %d is %s: %v", p.input, p.axis, p.d, err)
				}
				if got != p.v {
					return nil, Errorf(ShapeError, "input %d: axis %d is %d, but %s is %d with %s", p.input, p.axis, p.v, p.d, got, bindingString(b, p.d.Symbols()))
				}
				progress = true
			case len(unbound) == 1:
				k, rest0, ok := p.d.Substitute(b).linearIn(unbound[0])
				if !ok {
					rest = append(rest, p)
					continue
				}
				r, _ := rest0.Const()
				if (p.v-r)%k != 0 || (p.v-r)/k < 0 {
					return nil, Errorf(ShapeError, "input %d: axis %d is %d, which %s cannot be for any %s", p.input, p.axis, p.v, p.d, unbound[0])
				}
				b[unbound[0]], from[unbound[0]] = (p.v-r)/k, fmt.Sprintf("input %d", p.input)
				progress = true
			default:
				rest = append(rest, p)
			}
		}
		later = rest
	}
	if len(later) > 0 {
		return nil, Errorf(ShapeError, "cannot tell %s from the inputs: input %d has %s at axis %d", strings.Join(unboundOf(later[0].d, b), ", "), later[0].input, later[0].d, later[0].axis).
			Suggest("give some input a dimension that is the symbol alone")
	}
	for _, s := range GraphSymbols(g) {
		if _, ok := b[s]; !ok {
			return nil, Errorf(ShapeError, "symbol %s appears in the program but in no input's shape, so a run cannot know it", s)
		}
	}
	return b, nil
}

func unboundOf(d Dim, b Binding) []string {
	var out []string
	for _, s := range d.Symbols() {
		if _, ok := b[s]; !ok {
			out = append(out, s)
		}
	}
	return out
}

// CheckConstraints returns the first constraint the binding violates, as an error.
func CheckConstraints(cons []Constraint, b Binding) error {
	for _, c := range cons {
		if err := c.Check(b); err != nil {
			return err
		}
	}
	return nil
}

// Specialize returns g with every symbol replaced by its value in b, each op re-inferred
// by its concrete Infer. An op that rejects the concrete shapes reports its usual error
// at its location (the binding is named among the causes); a concrete type that differs
// from the substituted symbolic one is an InternalError (a symbolic rule is wrong).
func Specialize(g *Graph, b Binding) (*Graph, error) {
	return specializeWith(g, b, specializeHooks{})
}

// specializeHooks let a caller add params after g's own and rewrite the inputs of a
// node (given by its index in g) before it is applied; nil hooks do nothing.
type specializeHooks struct {
	params func(out *Builder)
	inputs func(out *Builder, node int, ins []Value, loc Location) ([]Value, error)
}

func specializeWith(g *Graph, b Binding, h specializeHooks) (*Graph, error) {
	if err := Verify(g); err != nil {
		return nil, err
	}
	out := NewBuilder(g.Name)
	vals := make([]Value, len(g.Nodes))
	for _, p := range g.Params {
		vals[p] = out.Param(g.Nodes[p].Name, g.Nodes[p].Type.Substitute(b))
	}
	if h.params != nil {
		h.params(out)
	}
	names := indexNames(g)
	for i, n := range g.Nodes {
		if n.Op == OpParam {
			continue
		}
		ins := n.mapInputs(vals)
		if h.inputs != nil {
			var err error
			if ins, err = h.inputs(out, i, ins, n.Loc); err != nil {
				return nil, err
			}
		}
		v, err := out.Op(n.Op, ins, substituteAttrs(n.Attrs, b), n.Loc)
		if err != nil {
			e := AsError(err)
			return nil, e.Because("the program was traced with symbolic shapes; this run binds %s", b.Key())
		}
		if want := n.Type.Substitute(b); !out.Type(v).Equal(want) {
			return nil, Errorf(InternalError, "graph %s: %s: specialised for %s, %s gives %s, not %s",
				quoteName(g.Name), formatNodeWith(g, names, i), b.Key(), n.Op, out.Type(v), want)
		}
		vals[i] = v
	}
	for _, o := range g.Outputs {
		out.Output(vals[o])
	}
	return out.Graph(), nil
}

// AsError returns err as an *Error, wrapping other errors as InternalErrors.
func AsError(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return Errorf(InternalError, "%v", err)
}
