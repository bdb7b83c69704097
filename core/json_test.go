package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JSON form names, types and attributes nodes as the text form prints them, and
// adds the user's line, which the text leaves out.
func TestExportJSONMatchesTheText(t *testing.T) {
	g, err := Parse(`graph f(%x: f16[4,8]) {
  %1 = exp(%x) : f16[4,8]
  %2 = sum(%1) {axis=[1], keepdims=true} : f16[4,1]
  return %2
}`)
	require.NoError(t, err)
	g.Nodes[2].Loc = Location{File: "model.py", Line: 12, Func: "f", Scope: "main@3;f@12"}
	j := ExportJSON(g)
	require.Len(t, j.Nodes, 3)
	assert.Equal(t, NodeJSON{ID: 0, Name: "%x", Op: "param", Inputs: []int{}, Type: "f16[4,8]", DType: "f16", Shape: "[4,8]",
		Layout: "ND", Bytes: 64}, j.Nodes[0])
	s := j.Nodes[2]
	assert.Equal(t, "%2", s.Name)
	assert.Equal(t, []int{1}, s.Inputs)
	assert.Equal(t, "[1]", s.Attrs["axis"])
	assert.Equal(t, "true", s.Attrs["keepdims"])
	assert.Equal(t, "f16[4,1]", s.Type)
	assert.Equal(t, 8, s.Bytes)
	assert.True(t, s.Output)
	assert.Equal(t, "main@3;f@12", s.Loc.Scope)
	assert.Contains(t, Format(g), "%2 = sum(%1) "+printedAttrs(g.Nodes[2]).String())
}
