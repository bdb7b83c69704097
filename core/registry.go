package core

import (
	"fmt"
	"sort"
)

// AttrSpec declares one attribute an op accepts, with its default.
type AttrSpec struct {
	Name    string
	Default any
}

// OpDef is the registry entry of a tensor op: the single source of truth for its
// signature, attributes, type inference and reference semantics. Lowering looks ops up
// here too, so an op that exists is an op every layer knows about.
type OpDef struct {
	Name  string
	Arity int // number of tensor inputs
	Attrs []AttrSpec
	Doc   string
	// Infer computes the result type; errors are *Error with kind ShapeError/DTypeError.
	Infer func(in []TensorType, attrs Attrs) (TensorType, *Error)
	// Eval computes the result in the reference interpreter. Inputs have the inferred
	// types; the result must have out's type and be rounded to its dtype.
	Eval func(in []*Array, attrs Attrs, out *Array)
}

var registry = map[string]*OpDef{}

// Register adds an op definition; it panics on a duplicate, which is a programming
// error caught by any test that imports core.
func Register(def *OpDef) {
	if _, dup := registry[def.Name]; dup {
		panic("core: op registered twice: " + def.Name)
	}
	registry[def.Name] = def
}

// LookupOp returns the definition of an op by name.
func LookupOp(name string) (*OpDef, bool) {
	d, ok := registry[name]
	return d, ok
}

// OpNames lists registered ops in sorted order.
func OpNames() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// withDefaults returns attrs completed with the op's defaults, rejecting unknown names.
func (d *OpDef) withDefaults(attrs Attrs) (Attrs, *Error) {
	out := Attrs{}
	for _, spec := range d.Attrs {
		out[spec.Name] = spec.Default
	}
	for k, v := range attrs {
		found := false
		for _, spec := range d.Attrs {
			if spec.Name == k {
				found = true
				if fmt.Sprintf("%T", v) != fmt.Sprintf("%T", spec.Default) {
					return nil, Errorf(ValueError, "%s: attribute %s has type %T, want %T", d.Name, k, v, spec.Default)
				}
			}
		}
		if !found {
			return nil, Errorf(ValueError, "%s: unknown attribute %q", d.Name, k)
		}
		out[k] = v
	}
	return out, nil
}
