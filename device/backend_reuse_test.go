package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// gmHazardProgram stores a tile to x at offset at and loads back a window starting
// load elements further, which overlaps the store when load < 8.
func gmHazardProgram(name string, at, load int) *isa.Program {
	b := newProg(name, isa.Vector)
	x := b.param(name+"_x", dtype.Float32, 256)
	t0 := b.tile(name+"_t0", isa.Vec, dtype.Float32, 8, 8)
	t1 := b.tile(name+"_t1", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(t0), view(x, at, 8, 8, 8))
	b.op(isa.TSTORE, view(x, at, 1, 8, 8), tl(t0))
	b.op(isa.TLOAD, tl(t1), view(x, at+load, 2, 4, 8))
	return b.p
}

func TestCompilerReusesOnlyWhatCompileWouldReturn(t *testing.T) {
	chip := preset(t, "tiny")
	c := NewCompiler(chip)
	for _, p := range []*isa.Program{
		gmHazardProgram("first", 0, 4),
		gmHazardProgram("shifted", 64, 4),  // same shape: reused with its own views and names
		gmHazardProgram("disjoint", 64, 8), // the load no longer overlaps the store: one flag fewer
		gmHazardProgram("disjoint_shifted", 128, 8),
	} {
		want, err := Compile(chip, p)
		require.NoError(t, err)
		got, err := c.Compile(p)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%s", p.Name)
	}
	assert.Len(t, c.shapes, 2, "one entry per shape")

	// Errors that depend on the GM offsets or the names are found for every program.
	outside := gmHazardProgram("outside", 250, 4)
	clash := gmHazardProgram("clash", 0, 4)
	clash.Tiles[1].Name = clash.Tiles[0].Name
	for _, p := range []*isa.Program{outside, clash} {
		_, want := Compile(chip, p)
		require.Error(t, want)
		_, got := c.Compile(p)
		assert.Equal(t, want, got)
	}
}

func TestSameShapeComparesSharedListsWithGMViews(t *testing.T) {
	// b's last load shares a's operand list (same raw offset), but b's first views of x
	// start elsewhere, so the load's offset relative to them differs: another shape.
	a := gmHazardProgram("a", 0, 4)
	b := gmHazardProgram("b", 64, 4)
	b.Body[2].Args = a.Body[2].Args
	_, baseA, ok := shapeHash(a)
	require.True(t, ok)
	_, baseB, ok := shapeHash(b)
	require.True(t, ok)
	same, _ := sameShape(a, baseA, b, baseB)
	assert.False(t, same)
}
