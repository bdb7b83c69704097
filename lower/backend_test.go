package lower

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
)

// TestBackendReuseMatchesCompile checks that the backend pass, which compiles each
// shape of program once and runs in parallel, returns for every block exactly what
// compiling that block alone returns: on a GPT layer, the golden graphs and random
// graphs.
func TestBackendReuseMatchesCompile(t *testing.T) {
	a2, err := device.Preset("a2")
	require.NoError(t, err)
	check := func(g *core.Graph, chip *device.Chip) {
		exe, err := Compile(g, Options{Chip: chip})
		require.NoError(t, err)
		for _, task := range exe.exec.Tasks {
			for i, p := range task.Programs {
				want, err := device.Compile(chip, p)
				require.NoError(t, err)
				if got := task.Machine[i]; !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: the backend pass's machine program differs from device.Compile's:\n%s\nwant\n%s", p.Name, got, want)
				}
			}
		}
	}
	check(gptDecoderGraph(t, 1), a2)
	files, err := filepath.Glob("testdata/golden/*.graph")
	require.NoError(t, err)
	for _, f := range files {
		g, err := core.Parse(readFile(t, f))
		require.NoError(t, err)
		check(g, tinyChip(t))
	}
	for seed := range uint64(20) {
		check(randomGraph(t, seed, seed%2 == 0), a2)
	}
}
