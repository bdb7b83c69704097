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
	Arity int // number of tensor inputs (the least number when MaxArity says more are allowed)
	// MaxArity allows optional trailing inputs (layer_norm's weight and bias) when it is
	// above Arity, or any number of inputs from Arity up when it is Variadic (concat).
	// Zero means exactly Arity.
	MaxArity int
	Attrs    []AttrSpec
	Doc      string
	// Infer computes the result type; errors are *Error with kind ShapeError/DTypeError.
	Infer func(in []TensorType, attrs Attrs) (TensorType, *Error)
	// Eval computes the result in the reference interpreter. Inputs have the inferred
	// types; the result must have out's type and be rounded to its dtype.
	Eval func(in []*Array, attrs Attrs, out *Array)
	// Decompose, set on composite ops only (softmax, layer_norm, gelu, ...), rewrites the
	// op into simpler ops added to b, returning the value that replaces it; it must have
	// the op's inferred type. The compiler's decomposition pass (DecomposeGraph) uses it so
	// that the device needs lowerings for primitives only, while Eval stays the exact
	// reference the decomposition is tested against.
	Decompose func(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error)
	// VJP, set on differentiable ops, emits the backward nodes: the cotangent of each
	// input from the cotangent of the result (see Gradients). A composite without one
	// is differentiated through its decomposition. Rules of the existing ops live in
	// vjp_*.go (vjpRules), attached when the op registers.
	VJP VJPFunc
	// NoGrad, set on ops no gradient flows through, says why (integer results,
	// piecewise-constant values, ops formed by the compiler after differentiation).
	NoGrad string
}

// Variadic as an OpDef.MaxArity means any number of inputs from Arity up.
const Variadic = -1

// AcceptsArity reports whether the op takes n tensor inputs.
func (d *OpDef) AcceptsArity(n int) bool {
	switch {
	case d.MaxArity == Variadic:
		return n >= d.Arity
	case d.MaxArity > d.Arity:
		return n >= d.Arity && n <= d.MaxArity
	}
	return n == d.Arity
}

// ArityString says how many inputs the op takes, for error messages and docs.
func (d *OpDef) ArityString() string {
	switch {
	case d.MaxArity == Variadic:
		return fmt.Sprintf("%d or more", d.Arity)
	case d.MaxArity > d.Arity:
		return fmt.Sprintf("%d to %d", d.Arity, d.MaxArity)
	}
	return fmt.Sprint(d.Arity)
}

var registry = map[string]*OpDef{}

// Register adds an op definition; it panics on a duplicate, which is a programming
// error caught by any test that imports core.
func Register(def *OpDef) {
	if _, dup := registry[def.Name]; dup {
		panic("core: op registered twice: " + def.Name)
	}
	if r, ok := vjpRules[def.Name]; ok && def.VJP == nil {
		def.VJP = r
	}
	if why, ok := noGradOps[def.Name]; ok && def.NoGrad == "" {
		def.NoGrad = why
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
		spec := d.attrSpec(k)
		if spec == nil {
			return nil, Errorf(ValueError, "%s: unknown attribute %q", d.Name, k)
		}
		if !attrTypeMatches(v, spec.Default) {
			return nil, Errorf(ValueError, "%s: attribute %s has type %T, want %T", d.Name, k, v, spec.Default)
		}
		if dims, ok := v.([]Dim); ok {
			v = normalizeDimList(dims)
		}
		out[k] = v
	}
	return out, nil
}
