package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// heads_last gives the transpose of the plain result, exactly.
func TestFlashAttentionHeadsLastIsTheTranspose(t *testing.T) {
	typ := TensorType{DType: dtype.Float32, Shape: Shape{2, 3, 5, 4}}
	build := func(headsLast bool) *Graph {
		b := NewBuilder("fa")
		q, k, v := b.Param("q", typ), b.Param("k", typ), b.Param("v", typ)
		a, err := b.Op("flash_attention", []Value{q, k, v}, Attrs{"is_causal": true, "heads_last": headsLast}, Location{})
		require.NoError(t, err)
		if !headsLast {
			a, err = b.Op("transpose", []Value{a}, Attrs{"perm": []int64{0, 2, 1, 3}}, Location{})
			require.NoError(t, err)
		}
		b.Output(a)
		return b.Graph()
	}
	var ins []*Array
	for i := range 3 {
		a := NewArray(typ)
		for j := range a.Data {
			a.Data[j] = float64((j*7+i*3)%11) / 5
		}
		ins = append(ins, a)
	}
	want, err := Interpret(build(false), ins)
	require.NoError(t, err)
	got, err := Interpret(build(true), ins)
	require.NoError(t, err)
	require.Equal(t, Shape{2, 5, 3, 4}, got[0].Type.Shape)
	require.Equal(t, want[0].Data, got[0].Data)
}
