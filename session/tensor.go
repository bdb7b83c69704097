// Package session is the eager side of PyPTO: lazy tensors that build a pending graph
// op by op, realised on demand by compiling (with a cache keyed by graph structure) and
// running on the current simulated device, plus the Executor behind p.compile. The C
// ABI (capi/) is a thin wrapper over this package; everything here is safe for
// concurrent use from several threads.
package session

import (
	"sync"
	"sync/atomic"

	"pypto/core"
)

// kind says what a tensor holds.
type kind uint8

const (
	concrete    kind = iota // host data
	pending                 // an op over other tensors, not computed yet
	placeholder             // a traced input of p.compile; never has data
)

// op is the recipe of a pending tensor. It is immutable once built, so a snapshot of
// it stays valid after the tensor it belongs to has been realised.
type op struct {
	name   string
	inputs []*Tensor
	attrs  core.Attrs
	loc    core.Location
}

// Tensor is a lazy eager tensor: concrete (contiguous little-endian host bytes),
// pending (an op over other tensors) or a placeholder. Its type never changes;
// realising a pending tensor turns it concrete and drops its inputs.
type Tensor struct {
	typ core.TensorType

	mu   sync.Mutex // guards kind, data and op
	kind kind
	data []byte
	keep *External // the owner of data when it is external memory (nil: library memory)
	op   *op

	realizing sync.Mutex // held while this tensor is being realised, so it is computed once

	// tracked: gradients may be taken through this tensor (it requires grad, or an
	// input of its op is tracked), so realising it keeps its recipe (see Grad).
	tracked atomic.Bool
}

// Type is the tensor's dtype and shape.
func (t *Tensor) Type() core.TensorType { return t.typ }

// IsPending reports whether the tensor still has to be computed.
func (t *Tensor) IsPending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kind == pending
}

// IsPlaceholder reports whether the tensor is a traced input of p.compile.
func (t *Tensor) IsPlaceholder() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kind == placeholder
}

// Data returns the bytes of a concrete tensor (nil otherwise). Callers must not modify them.
func (t *Tensor) Data() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kind != concrete {
		return nil
	}
	return t.data
}

// state returns a consistent snapshot of the tensor's contents.
func (t *Tensor) state() (kind, []byte, *op) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kind, t.data, t.op
}

// setData makes the tensor concrete and drops its recipe, so its inputs can be freed,
// unless gradients may be taken through it. keep is the External that b belongs to,
// if any.
func (t *Tensor) setData(b []byte, keep *External) {
	t.mu.Lock()
	t.kind, t.data, t.keep = concrete, b, keep
	if !t.tracked.Load() {
		t.op = nil
	}
	t.mu.Unlock()
}

// FromBytes wraps a contiguous little-endian buffer (which the tensor takes over).
func FromBytes(t core.TensorType, data []byte) (*Tensor, error) {
	if err := checkType(t); err != nil {
		return nil, err
	}
	if t.IsSymbolic() {
		return nil, symbolicDataError(t)
	}
	if len(data) != t.Bytes() {
		return nil, core.Errorf(core.ValueError, "buffer of %d bytes for a tensor of type %v (%d bytes)", len(data), t, t.Bytes())
	}
	return &Tensor{typ: cloneType(t), kind: concrete, data: data}, nil
}

// Zeros returns a zero-filled concrete tensor.
func Zeros(t core.TensorType) (*Tensor, error) {
	if err := checkType(t); err != nil {
		return nil, err
	}
	if t.IsSymbolic() {
		return nil, symbolicDataError(t)
	}
	return &Tensor{typ: cloneType(t), kind: concrete, data: make([]byte, t.Bytes())}, nil
}

// NewPlaceholder returns a traced input of the given type for building an Executor. A
// symbolic type (dims over p.symbol names) makes the executor symbolic: traced once,
// specialised per binding of the symbols when it runs.
func NewPlaceholder(t core.TensorType) (*Tensor, error) {
	if err := checkType(t); err != nil {
		return nil, err
	}
	return &Tensor{typ: cloneType(t), kind: placeholder}, nil
}

// Apply builds a pending tensor: op applied to inputs. The result type is inferred now,
// so a shape or dtype error is reported at the call that built the op, carrying loc.
func Apply(name string, inputs []*Tensor, attrs core.Attrs, loc core.Location) (*Tensor, error) {
	types := make([]core.TensorType, len(inputs))
	for i, in := range inputs {
		if in == nil {
			return nil, core.Errorf(core.ValueError, "%s: input %d is missing (nil tensor)", name, i).WithLoc(loc)
		}
		types[i] = in.typ
	}
	attrs = coerceAttrs(name, attrs)
	t, full, err := core.InferOp(name, types, attrs)
	if err != nil {
		return nil, err.WithLoc(loc)
	}
	out := &Tensor{
		typ:  t,
		kind: pending,
		op:   &op{name: name, inputs: append([]*Tensor(nil), inputs...), attrs: full, loc: loc},
	}
	for _, in := range inputs {
		if in.tracked.Load() {
			out.tracked.Store(true)
			break
		}
	}
	return out, nil
}

// coerceAttrs converts integer values given for float attributes (JSON and Python do
// not distinguish 1 from 1.0 reliably) so that the registry's type check accepts them.
func coerceAttrs(name string, attrs core.Attrs) core.Attrs {
	def, ok := core.LookupOp(name)
	if !ok || len(attrs) == 0 {
		return attrs
	}
	var out core.Attrs
	for _, spec := range def.Attrs {
		v, present := attrs[spec.Name]
		if !present {
			continue
		}
		if _, wantFloat := spec.Default.(float64); wantFloat {
			if i, isInt := v.(int64); isInt {
				if out == nil {
					out = make(core.Attrs, len(attrs))
					for k, x := range attrs {
						out[k] = x
					}
				}
				out[spec.Name] = float64(i)
			}
		}
	}
	if out == nil {
		return attrs
	}
	return out
}

func checkType(t core.TensorType) error {
	if !t.DType.Valid() {
		return core.Errorf(core.DTypeError, "invalid dtype code %d", uint8(t.DType)).
			Suggest("use one of float32, float16, bfloat16, int8, int32, bool")
	}
	if t.IsSymbolic() || !t.Layout.IsND() {
		if msg := t.Check(); msg != "" {
			return core.Errorf(core.ShapeError, "%s", msg)
		}
		if t.IsSymbolic() {
			return nil
		}
	}
	for i, d := range t.Shape {
		if d < 0 {
			return core.Errorf(core.ShapeError, "dimension %d of shape %v is negative", i, t.Shape)
		}
	}
	if err := core.CheckHostSize(t); err != nil {
		return err
	}
	return nil
}

func cloneType(t core.TensorType) core.TensorType { return t.Clone() }

func symbolicDataError(t core.TensorType) error {
	return core.Errorf(core.ValueError, "a tensor of symbolic shape %s cannot hold data", t.ShapeString()).
		Suggest("symbolic shapes describe the inputs of p.compile; give concrete sizes to create data")
}

// WithLayout returns a tensor of the same data (or the same placeholder role) whose
// type is tagged with layout l, which must fit its shape (see core.Layout). Pending
// tensors are realised first.
func (s *Session) WithLayout(t *Tensor, l core.Layout) (*Tensor, error) {
	typ := t.typ.Clone()
	typ.Layout = l
	if msg := typ.Check(); msg != "" {
		return nil, core.Errorf(core.ShapeError, "%s", msg).
			Suggest("give the shape in the layout's axis order (see docs/api.md, Layouts)")
	}
	if t.IsPlaceholder() {
		return &Tensor{typ: typ, kind: placeholder}, nil
	}
	if err := s.Realize(t); err != nil {
		return nil, err
	}
	t.mu.Lock()
	data, keep := t.data, t.keep
	t.mu.Unlock()
	return &Tensor{typ: typ, kind: concrete, data: data, keep: keep}, nil
}
