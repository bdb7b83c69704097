package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

func TestPresetNames(t *testing.T) {
	require.Equal(t, []string{"a2", "a5", "tiny"}, PresetNames())
	for _, n := range PresetNames() {
		c, err := Preset(n)
		require.NoError(t, err, n)
		require.NoError(t, c.Validate(), n)
		assert.Equal(t, n, c.Name)
	}
}

func TestPresetA2MatchesPublishedFigures(t *testing.T) {
	c := preset(t, "a2")
	assert.Equal(t, 24, c.Cores(isa.Cube))
	assert.Equal(t, 48, c.Cores(isa.Vector))
	assert.Equal(t, 0, c.Cores(isa.CoreInvalid))
	assert.Equal(t, 1.85e9, c.ClockHz)
	for loc, kb := range map[isa.Location]int{isa.Mat: 512, isa.Left: 64, isa.Right: 64, isa.Acc: 128, isa.Vec: 192, isa.Bias: 1} {
		assert.Equal(t, kb*1024, c.Capacity(loc), loc.String())
	}
	assert.Equal(t, 32, c.Alignment(isa.Mat))
	assert.Equal(t, 512, c.Alignment(isa.Left))
	assert.Equal(t, 512, c.Alignment(isa.Right))
	assert.Equal(t, 64, c.Alignment(isa.Acc))
	assert.Equal(t, 32, c.Alignment(isa.Vec))
	assert.Equal(t, 4096, c.CubeMACsPerCycle(dtype.Float16))
	assert.Equal(t, 4096, c.CubeMACsPerCycle(dtype.BFloat16))
	assert.Equal(t, 8192, c.CubeMACsPerCycle(dtype.Int8))
	assert.Equal(t, 2048, c.CubeMACsPerCycle(dtype.Float32))
	assert.Equal(t, 256, c.VectorBytesPerCycle)
	assert.Equal(t, 32, c.GMReadBytesPerCycle)
	assert.Equal(t, 512, c.L1ToL0ABytesPerCycle)
	assert.Equal(t, 256, c.L1ToL0BBytesPerCycle)
	assert.Equal(t, 64, c.UBToGMBytesPerCycle)
	assert.Equal(t, 8, c.FlagEventIDs)
	// Peak fp16 of the part: 24 x 4096 x 2 x 1.85e9, about 364 TFLOPS.
	assert.InDelta(t, 364e12, float64(c.CubeCores*c.CubeMACsPerCycle(dtype.Float16)*2)*c.ClockHz, 1e12)
	assert.InDelta(t, 1e-3, c.Seconds(1_850_000), 1e-12)
}

func TestPresetSplitArchitecture(t *testing.T) {
	c := preset(t, "tiny")
	assert.Equal(t, 2, c.Cores(isa.Cube))
	assert.Equal(t, 4, c.Cores(isa.Vector))
	for _, loc := range []isa.Location{isa.Mat, isa.Left, isa.Right, isa.Acc, isa.Bias} {
		assert.True(t, c.HasLocation(isa.Cube, loc), loc.String())
		assert.False(t, c.HasLocation(isa.Vector, loc), loc.String())
	}
	assert.True(t, c.HasLocation(isa.Vector, isa.Vec))
	assert.False(t, c.HasLocation(isa.Cube, isa.Vec))
	assert.True(t, HasPipe(isa.Cube, isa.PipeMTE1))
	assert.False(t, HasPipe(isa.Cube, isa.PipeV))
	assert.True(t, HasPipe(isa.Vector, isa.PipeMTE3))
	assert.False(t, HasPipe(isa.Vector, isa.PipeM))
	// tiny is small enough that tests must tile.
	assert.Less(t, c.Capacity(isa.Vec), preset(t, "a2").Capacity(isa.Vec))
}

func TestPresetIsAFreshCopy(t *testing.T) {
	a := preset(t, "a2")
	a.Buffers[isa.Vec] = Buffer{Bytes: 1, Align: 1}
	a.CubeCores = 1
	b := preset(t, "a2")
	assert.Equal(t, 192*1024, b.Capacity(isa.Vec))
	assert.Equal(t, 24, b.CubeCores)
}

func TestPresetUnknown(t *testing.T) {
	_, err := Preset("910z")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"910z"`)
	assert.Contains(t, err.Error(), "a2, a5, tiny")
	c, err := Preset(" A2 ")
	require.NoError(t, err)
	assert.Equal(t, "a2", c.Name)
}

func TestChipValidate(t *testing.T) {
	var nilChip *Chip
	require.Error(t, nilChip.Validate())
	for name, edit := range map[string]func(*Chip){
		"GMReadBytesPerCycle": func(c *Chip) { c.GMReadBytesPerCycle = 0 },
		"ClockHz":             func(c *Chip) { c.ClockHz = 0 },
		"FlagEventIDs":        func(c *Chip) { c.FlagEventIDs = -1 },
		"IssueCycles":         func(c *Chip) { c.IssueCycles = -1 },
		"vec":                 func(c *Chip) { c.Buffers[isa.Vec] = Buffer{Bytes: 0, Align: 32} },
		"power of two":        func(c *Chip) { c.Buffers[isa.Left] = Buffer{Bytes: 1024, Align: 48} },
	} {
		c := preset(t, "tiny")
		edit(c)
		err := c.Validate()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), name)
	}
}
