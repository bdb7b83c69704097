package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// deterministicGraphs are programs whose bits the passes could change: a matmul with
// few output tiles and a long K (split-K candidates), row and column sums of rows of
// thousands, normalisations (row fusion) and attention (flash fusion).
func deterministicGraphs(t *testing.T) map[string]*core.Graph {
	f32 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float32, Shape: core.Shape(s)} }
	return map[string]*core.Graph{
		"matmul_long_k":  matmulGraph(t, dtype.Float16, core.Shape{16, 32768}, core.Shape{32768, 16}, nil, false),
		"matmul_f32":     matmulGraph(t, dtype.Float32, core.Shape{32, 2048}, core.Shape{2048, 48}, nil, true),
		"row_sum":        reduceGraph(t, "sum", f32(24, 3000), []int64{-1}, false),
		"col_sum":        reduceGraph(t, "sum", f32(1500, 40), []int64{0}, false),
		"softmax_f16":    rowGraph(t, "softmax", dtype.Float16, core.Shape{16, 1000}, 0, nil),
		"layer_norm_f32": rowGraph(t, "layer_norm", dtype.Float32, core.Shape{16, 700}, 2, nil),
		"attention": attentionCase{q: core.Shape{1, 2, 128, 64}, k: core.Shape{1, 2, 512, 64}, v: core.Shape{1, 2, 512, 64},
			dt: dtype.Float16, scale: 0.125}.graph(t),
	}
}

// With Options.Deterministic every level and both presets give the same bits (no
// split K, and the cube adds in increasing k whatever the tiles; reductions add in one
// order whatever the buffers). Without it, split K or fusion changes some of them (so the test shows what
// the option switches off).
func TestDeterministicGivesTheSameBitsAtEveryLevel(t *testing.T) {
	differs := 0
	for name, g := range deterministicGraphs(t) {
		var chipBits [][]byte
		for _, chipName := range []string{"tiny", "a2"} {
			chip, err := device.Preset(chipName)
			require.NoError(t, err)
			_, raw := randomInputs(g)
			run := func(level OptLevel, det bool) []byte {
				exe, err := Compile(g, Options{Chip: chip, Verify: true, OptLevel: level, Deterministic: det})
				require.NoError(t, err, "%s on %s at %s", name, chipName, level)
				out, _, err := exe.Run(raw)
				require.NoError(t, err)
				return out[0]
			}
			base := run(O0, true)
			if name == "matmul_long_k" && chipName == "a2" {
				exe, err := Compile(g, Options{Chip: chip})
				require.NoError(t, err)
				require.True(t, hasSplitK(exe), "the case splits K without Deterministic")
				exe, err = Compile(g, Options{Chip: chip, Deterministic: true})
				require.NoError(t, err)
				require.False(t, hasSplitK(exe), "and not with it")
			}
			for _, level := range []OptLevel{O1, O2, O3} {
				require.Equal(t, base, run(level, true), "%s on %s: %s differs from O0 under Deterministic", name, chipName, level)
				if fmt.Sprint(run(level, false)) != fmt.Sprint(base) {
					differs++
				}
			}
			chipBits = append(chipBits, base)
		}
		require.Equal(t, chipBits[0], chipBits[1], "%s: tiny and a2 differ under Deterministic", name)
	}
	require.Positive(t, differs, "without Deterministic some level changes some bits")
}
