package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

func fingerprintGraph(t *testing.T, attrs Attrs, loc Location, dt dtype.DType) *Graph {
	b := NewBuilder("g")
	x := b.Param("x", TensorType{DType: dt, Shape: Shape{4, 6}})
	y, err := b.Op("sum", []Value{x}, attrs, loc)
	require.NoError(t, err)
	b.Output(y)
	return b.Graph()
}

// Graphs with the same text have the same fingerprint whatever their locations; a
// change of attribute, dtype or structure changes it.
func TestFingerprintFollowsTheTextForm(t *testing.T) {
	base := fingerprintGraph(t, Attrs{"axis": []int64{1}}, Location{File: "a.py", Line: 1}, dtype.Float16)
	same := fingerprintGraph(t, Attrs{"axis": []int64{1}}, Location{File: "b.py", Line: 9}, dtype.Float16)
	require.Equal(t, Format(base), Format(same))
	assert.Equal(t, Fingerprint(base), Fingerprint(same))
	assert.Len(t, Fingerprint(base), 32)
	for _, other := range []*Graph{
		fingerprintGraph(t, Attrs{"axis": []int64{0}}, Location{}, dtype.Float16),
		fingerprintGraph(t, Attrs{"axis": []int64{1}, "keepdims": true}, Location{}, dtype.Float16),
		fingerprintGraph(t, Attrs{"axis": []int64{1}}, Location{}, dtype.Float32),
	} {
		require.NotEqual(t, Format(base), Format(other))
		assert.NotEqual(t, Fingerprint(base), Fingerprint(other))
	}
}

func BenchmarkFingerprintVsFormat(b *testing.B) {
	bl := NewBuilder("chain")
	v := bl.Param("x", TensorType{DType: dtype.Float16, Shape: Shape{64, 128}})
	for range 1000 {
		v, _ = bl.Op("exp", []Value{v}, nil, Location{})
	}
	bl.Output(v)
	g := bl.Graph()
	b.Run("fingerprint", func(b *testing.B) {
		for b.Loop() {
			Fingerprint(g)
		}
	})
	b.Run("format", func(b *testing.B) {
		for b.Loop() {
			Format(g)
		}
	})
}
