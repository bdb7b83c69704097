package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
)

func TestDecodeSymbolicListAttrs(t *testing.T) {
	a, err := decodeAttrs(`{"shape": ["batch*seq", 64, -1], "consts": ["2*3", 4]}`)
	require.NoError(t, err)
	dims, ok := a["shape"].([]core.Dim)
	require.True(t, ok, "%T", a["shape"])
	assert.Equal(t, "[batch*seq,64,-1]", core.DimsString(dims))
	assert.Equal(t, []int64{6, 4}, a["consts"], "lists without symbols stay integer lists")
	for _, bad := range []string{`{"shape": ["b+"]}`, `{"shape": [true]}`} {
		_, err := decodeAttrs(bad)
		assert.Error(t, err, bad)
	}
}

func TestTypeInfo(t *testing.T) {
	typ, err := parseType("f16[batch,seq+1,64]")
	require.NoError(t, err)
	assert.Equal(t, typeJSON{DType: 2, Shape: []any{"batch", "seq+1", 64}, Layout: "ND", Text: "f16[batch,seq+1,64]"}, typeInfo(typ))
	typ, err = parseType("f16[4,2,16,16]@NZ(30,60)")
	require.NoError(t, err)
	info := typeInfo(typ)
	assert.Equal(t, "NZ", info.Layout)
	assert.Equal(t, [2]int{30, 60}, [2]int{info.Rows, info.Cols})
	_, err = parseType("f16[2,3]@NCHW")
	assert.ErrorContains(t, err, "layout NCHW needs a 4-D shape")
	_, err = parseType("f16[2,")
	assert.Error(t, err)
}
