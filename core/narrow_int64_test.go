package core

import (
	"encoding/binary"
	"fmt"
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
	assert.Equal(t, Int64Input{Param: 0, Op: "add", Node: s, Loc: loc}, plan.Inputs[0])

	ins, nerr := plan.Narrow([][]byte{int64Bytes(-2147483648, 5, 2147483647), nil})
	require.Nil(t, nerr)
	assert.Equal(t, []float64{-2147483648, 5, 2147483647}, dtype.Decode(dtype.Int32, ins[0], 3))
	require.Len(t, plan.Checks, 1, "the add's int64 result is checked")
	assert.Equal(t, Int64Check{Output: 3, Op: "add", Node: s, Loc: loc}, plan.Checks[0])
	assert.Len(t, ng.Outputs, 4)
	_, werr := plan.Widen([][]byte{dtype.Encode(dtype.Int32, []float64{-7, 8}), dtype.Encode(dtype.Int32, []float64{2}), {1, 2, 3, 4}, {1}})
	require.NotNil(t, werr, "a set check is the error")
	assert.Equal(t, loc, werr.Loc)
	outs, werr := plan.Widen([][]byte{dtype.Encode(dtype.Int32, []float64{-7, 8}), dtype.Encode(dtype.Int32, []float64{2}), {1, 2, 3, 4}, {0}})
	require.Nil(t, werr)
	require.Len(t, outs, 3, "the checks' outputs are dropped")
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

// Every checked op, on the reference interpreter: the narrowed run is an error exactly
// when numpy's int64 result leaves int32, at the op's line, and otherwise gives
// numpy's result.
func TestNarrowInt64ChecksResultsThatLeaveInt32(t *testing.T) {
	const hi, lo = 1<<31 - 1, -(1 << 31)
	type tc struct {
		op    string
		attrs Attrs
		in    [][]float64 // int64 inputs (one 1-d tensor each); a float32 input for cast
		want  []float64   // numpy's int64 result; nil: it leaves int32
	}
	cases := []tc{
		{"add", nil, [][]float64{{hi - 5, -3}, {5, lo + 3}}, []float64{hi, lo}},
		{"add", nil, [][]float64{{hi - 5, 0}, {6, 0}}, nil},
		{"add", nil, [][]float64{{0, lo}, {0, -1}}, nil},
		{"sub", nil, [][]float64{{lo + 1, 7}, {1, 9}}, []float64{lo, -2}},
		{"sub", nil, [][]float64{{lo + 1, 7}, {2, 9}}, nil},
		{"mul", nil, [][]float64{{46341, -46340}, {46340, 46341}}, []float64{2147441940, -2147441940}},
		{"mul", nil, [][]float64{{46341, 1}, {46341, 1}}, nil},
		{"mul", nil, [][]float64{{-1, 3}, {lo, 5}}, nil},
		{"mul", nil, [][]float64{{65536, 1}, {65536, 1}}, nil}, // 2^32: wraps to 0
		{"neg", nil, [][]float64{{lo + 1, hi}}, []float64{hi, -hi}},
		{"neg", nil, [][]float64{{lo, 0}}, nil},
		{"abs", nil, [][]float64{{lo}}, nil},
		{"pow", nil, [][]float64{{2, -2, 7}, {30, 31, -1}}, []float64{1 << 30, lo, 0}},
		{"pow", nil, [][]float64{{2, 0}, {31, -3}}, nil},
		{"pow", nil, [][]float64{{3, 0}, {40, -3}}, nil},
		{"floor_divide", nil, [][]float64{{lo, 5}, {1, 0}}, []float64{lo, 0}},
		{"floor_divide", nil, [][]float64{{lo, 5}, {-1, 2}}, nil},
		{"sum", nil, [][]float64{{hi, hi, lo, lo + 1}}, []float64{-1}},
		{"sum", nil, [][]float64{{hi, 1}}, nil},
		{"sum", nil, [][]float64{{hi, hi, hi, hi, -hi, -hi, -hi, 1}}, nil},
		{"cumsum", nil, [][]float64{{hi, -hi, hi}}, []float64{hi, 0, hi}},
		{"cumsum", nil, [][]float64{{hi, 1, -5}}, nil},
		{"prod", nil, [][]float64{{1 << 15, 1 << 15, -2}}, []float64{lo}},
		{"prod", nil, [][]float64{{1 << 15, 1 << 15, 2}}, nil},
		{"cast", Attrs{"dtype": "int64"}, [][]float64{{2147483520, -2147483648, 3.9}}, []float64{2147483520, lo, 3}},
		{"cast", Attrs{"dtype": "int64"}, [][]float64{{0x1p31}}, nil},
		{"cast", Attrs{"dtype": "int64"}, [][]float64{{-0x1p31 - 256}}, nil},
	}
	loc := Location{File: "model.py", Line: 4}
	for _, c := range cases {
		b := NewBuilder("g")
		var params []Value
		var args [][]byte
		for i, vals := range c.in {
			dt := dtype.Int64
			if c.op == "cast" {
				dt = dtype.Float32
			}
			params = append(params, b.Param(fmt.Sprintf("x%d", i), TensorType{DType: dt, Shape: Shape{len(vals)}}))
			args = append(args, dtype.Encode(dt, vals))
		}
		y, err := b.Op(c.op, params, c.attrs, loc)
		require.NoError(t, err, c.op)
		b.Output(y)
		ng, plan, err := NarrowInt64(b.Graph())
		require.NoError(t, err, c.op)
		require.Len(t, plan.Checks, 1, c.op)
		ins, nerr := plan.Narrow(args)
		require.Nil(t, nerr)
		arrays := make([]*Array, len(ins))
		for i, p := range ng.Params {
			arrays[i] = ArrayFromBytes(ng.Type(p), ins[i])
		}
		res, err := Interpret(ng, arrays)
		require.NoError(t, err, c.op)
		raw := make([][]byte, len(res))
		for i, r := range res {
			raw[i] = r.Bytes()
		}
		outs, werr := plan.Widen(raw)
		if c.want == nil {
			require.NotNil(t, werr, "%s %v: leaves int32", c.op, c.in)
			assert.Contains(t, werr.Message, c.op+": an int64 result leaves int32's range")
			assert.Equal(t, loc, werr.Loc)
			continue
		}
		require.Nil(t, werr, "%s %v", c.op, c.in)
		assert.Equal(t, dtype.Encode(dtype.Int64, c.want), outs[0], "%s %v", c.op, c.in)
	}
}
