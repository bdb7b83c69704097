package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/lower"
)

// The reference device runs ops that have no lowering yet, while a chip preset
// refuses them with a CompileError at the user's line.
func TestReferenceDeviceRunsWhatChipsRefuse(t *testing.T) {
	s := New(Devices())
	require.NoError(t, s.SetDevice(" Reference "))
	assert.Equal(t, ReferenceDevice, s.Device())
	x := tensorOf(t, []int{2, 2}, 1, -2, 3, -4)
	loc := core.Location{File: "m.py", Line: 9}
	y, err := Apply("softmax", []*Tensor{x}, core.Attrs{"axis": int64(0)}, loc)
	require.NoError(t, err)
	got := values(t, s, y)
	assert.InDelta(t, 0.1192029, got[0], 1e-6)
	assert.InDelta(t, 0.8807971, got[2], 1e-6)

	require.NoError(t, s.SetDevice("tiny"))
	if op, z := unloweredUnary(x, loc); z != nil {
		ce := coreErr(t, s.Realize(z))
		assert.Equal(t, core.CompileError, ce.Kind)
		assert.Contains(t, ce.Message, op)
		assert.Equal(t, loc, ce.Loc)
	}

	err = s.SetDevice("h100")
	ce := coreErr(t, err)
	assert.Equal(t, core.ValueError, ce.Kind)
	assert.Contains(t, ce.Suggestions[0], "reference")
}

// unloweredUnary applies the first primitive op without a device lowering that takes x
// alone, or returns nil once every such op has a lowering.
func unloweredUnary(x *Tensor, loc core.Location) (string, *Tensor) {
	lowered := map[string]bool{}
	for _, op := range lower.LoweredOps() {
		lowered[op] = true
	}
	for _, op := range core.OpNames() {
		if lowered[op] || core.IsComposite(op) {
			continue
		}
		if y, err := Apply(op, []*Tensor{x}, nil, loc); err == nil {
			return op, y
		}
	}
	return "", nil
}
