package core

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

func int64Bytes(vs ...int64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func TestNarrowInt64ComputesInInt32AndWidensTheResults(t *testing.T) {
	b := NewBuilder("g")
	x := b.Param("x", TensorType{DType: dtype.Int64, Shape: Shape{3}})
	f := b.Param("f", TensorType{DType: dtype.Float32, Shape: Shape{3}})
	loc := Location{File: "user.py", Line: 7}
	s, err := b.Op("add", []Value{x, x}, nil, loc)
	require.NoError(t, err)
	am, err := b.Op("argmax", []Value{f}, nil, loc)
	require.NoError(t, err)
	b.Output(s)
	b.Output(am)
	b.Output(f)
	g := b.Graph()
	require.True(t, HasInt64(g))
	assert.Equal(t, dtype.Int64, g.Type(am).DType, "indices are int64, like numpy's")

	ng, plan, err := NarrowInt64(g)
	require.NoError(t, err)
	assert.False(t, HasInt64(ng))
	require.NoError(t, Verify(ng))
	assert.Equal(t, []bool{true, true, false}, plan.Outputs)
	require.Len(t, plan.Inputs, 1)
	assert.Equal(t, Int64Input{Param: 0, Op: "add", Loc: loc}, plan.Inputs[0])

	ins, nerr := plan.Narrow([][]byte{int64Bytes(-2147483648, 5, 2147483647), nil})
	require.Nil(t, nerr)
	assert.Equal(t, []float64{-2147483648, 5, 2147483647}, dtype.Decode(dtype.Int32, ins[0], 3))
	outs := plan.Widen([][]byte{dtype.Encode(dtype.Int32, []float64{-7, 8}), dtype.Encode(dtype.Int32, []float64{2}), {1, 2, 3, 4}})
	assert.Equal(t, int64Bytes(-7, 8), outs[0])
	assert.Equal(t, int64Bytes(2), outs[1])
	assert.Equal(t, []byte{1, 2, 3, 4}, outs[2], "other outputs are left alone")

	_, nerr = plan.Narrow([][]byte{int64Bytes(1, 2147483648, 0), nil})
	require.NotNil(t, nerr)
	assert.Equal(t, ValueError, nerr.Kind)
	assert.Contains(t, nerr.Message, "add: an int64 input holds the value 2147483648 (at flat index 1)")
	assert.Equal(t, loc, nerr.Loc)
	assert.NotEmpty(t, nerr.Suggestions)
}

func TestNarrowInt64CastsInputsOnlyCastsReadOnTheHost(t *testing.T) {
	b := NewBuilder("g")
	x := b.Param("x", TensorType{DType: dtype.Int64, Shape: Shape{2}})
	c, err := b.Op("cast", []Value{x}, Attrs{"dtype": "float32"}, Location{})
	require.NoError(t, err)
	y, err := b.Op("mul", []Value{c, c}, nil, Location{})
	require.NoError(t, err)
	b.Output(y)
	ng, plan, err := NarrowInt64(b.Graph())
	require.NoError(t, err)
	assert.Equal(t, dtype.Float32, ng.Type(ng.Params[0]).DType)
	ins, nerr := plan.Narrow([][]byte{int64Bytes(1<<40+1, -3)})
	require.Nil(t, nerr, "values past int32 are fine: they are converted, not computed on")
	assert.Equal(t, []float64{1 << 40, -3}, dtype.Decode(dtype.Float32, ins[0], 2))
}

func TestNarrowInt64ChecksInt64Constants(t *testing.T) {
	b := NewBuilder("g")
	v, err := b.Op("full", nil, Attrs{"value": float64(1 << 33), "dtype": "int64", "shape": []int64{2}}, Location{Line: 3})
	require.NoError(t, err)
	b.Output(v)
	_, _, err = NarrowInt64(b.Graph())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not fit int32")
}
