package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/lower"
)

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig(`{"opt_level": 0, "disable_passes": ["cse"], "memory_pool_bytes": 4096, "chip": "tiny"}`)
	require.NoError(t, err)
	assert.Equal(t, Config{OptLevel: lower.O0, DisabledPasses: []string{"cse"}, MemoryPoolBytes: 4096, Device: "tiny"}, c)
	for _, text := range []string{"", "null", "{}"} {
		c, err = ParseConfig(text)
		require.NoError(t, err)
		assert.Equal(t, Config{}, c, "%q is the default", text)
	}
	for text, msg := range map[string]string{
		`{"opt_level": 7}`:                  "level 7 does not exist",
		`{"opt": 1}`:                        `unknown field "opt"`,
		`{"disable_passes": ["fuse"]}`:      "no pass of that name",
		`{"disable_passes": ["decompose"]}`: "needs it to produce a program",
		`{"memory_pool_bytes": -1}`:         "positive number of bytes",
	} {
		_, err := ParseConfig(text)
		assert.Equal(t, core.ValueError, coreErr(t, err).Kind, text)
		assert.ErrorContains(t, err, msg, text)
	}
}

// Programs compiled with different options are different cache entries; the order of
// disabled passes does not matter.
func TestConfigKey(t *testing.T) {
	a := Config{DisabledPasses: []string{"cse", "dce"}}
	b := Config{DisabledPasses: []string{"dce", "cse", "dce"}}
	assert.Equal(t, a.Key(), b.Key())
	assert.NotEqual(t, Config{}.Key(), Config{OptLevel: lower.O0}.Key())
	assert.Equal(t, Config{}.Key(), Config{OptLevel: lower.DefaultOptLevel}.Key(), "the zero level is the default one")
	assert.NotEqual(t, Config{}.Key(), Config{MemoryPoolBytes: 1 << 20}.Key())
}

func TestExecutorWithConfig(t *testing.T) {
	s := New(Devices())
	x, err := NewPlaceholder(f32Type(64, 64))
	require.NoError(t, err)
	y := x
	for range 3 {
		y, err = Apply("exp", []*Tensor{y}, nil, core.Location{File: "m.py", Line: 7})
		require.NoError(t, err)
	}
	ex, err := s.NewExecutorWith("chain", []*Tensor{x}, []*Tensor{y}, Config{OptLevel: lower.O0, Device: "TINY"})
	require.NoError(t, err)
	assert.Equal(t, "tiny", ex.Device())
	m, ok := ex.MemoryPlan()
	require.True(t, ok)
	assert.Equal(t, 4*16384, m.PeakBytes)

	_, err = s.NewExecutorWith("chain", []*Tensor{x}, []*Tensor{y}, Config{OptLevel: lower.O0, Device: "tiny", MemoryPoolBytes: 20000})
	ce := coreErr(t, err)
	assert.Equal(t, core.CompileError, ce.Kind)
	assert.Contains(t, ce.Message, "needs 65536 bytes")
	assert.Equal(t, 7, ce.Loc.Line, "the error points at the user's code")

	_, err = s.NewExecutorWith("chain", []*Tensor{x}, []*Tensor{y}, Config{Device: "a9"})
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind)
}
