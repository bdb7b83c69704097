package calib

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

func a2(t *testing.T) *device.Chip {
	t.Helper()
	c, err := device.Preset("a2")
	require.NoError(t, err)
	return c
}

func TestGridSplitsTheTableSizesEvenly(t *testing.T) {
	for _, row := range Table {
		g := Published(row.MKN, 24)
		grid, err := g.Grid()
		require.NoError(t, err, "m=k=n=%d", row.MKN)
		assert.Equal(t, 24, grid.CoreRows*grid.CoreCols)
		assert.Equal(t, g.M, grid.CoreRows*grid.RegionRows*g.BaseM)
		assert.Equal(t, g.N, grid.CoreCols*grid.RegionCols*g.BaseN)
	}
	_, err := GEMM{M: 1000, K: 512, N: 512, BaseM: 128, BaseN: 256, BaseK: 64, StepK: 4, Cores: 4}.Grid()
	require.ErrorContains(t, err, "m % 128")
	_, err = GEMM{M: 128 * 5, K: 512, N: 256, BaseM: 128, BaseN: 256, BaseK: 64, StepK: 4, Cores: 4}.Grid()
	require.ErrorContains(t, err, "does not split evenly")
}

// The kernel computes C = A @ B: fp16 products accumulated in fp32, rounded once to
// fp16, on several tiles per core and several K loop trips.
func TestKernelComputesTheProduct(t *testing.T) {
	g := GEMM{M: 256, K: 1536, N: 512, BaseM: 128, BaseN: 256, BaseK: 64, StepK: 4, Cores: 2}
	rng := rand.New(rand.NewPCG(1, 2))
	a := make([]float64, g.M*g.K)
	b := make([]float64, g.K*g.N)
	for i := range a {
		a[i] = dtype.Round(dtype.Float16, rng.Float64()*2-1)
	}
	for i := range b {
		b[i] = dtype.Round(dtype.Float16, rng.Float64()*2-1)
	}
	st, c, err := Run(a2(t), g, dtype.Encode(dtype.Float16, a), dtype.Encode(dtype.Float16, b), device.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, st.Blocks)
	got := dtype.Decode(dtype.Float16, c, g.M*g.N)
	for i := range g.M {
		for j := range g.N {
			var want float64
			for k := range g.K {
				want += a[i*g.K+k] * b[k*g.N+j]
			}
			// fp32 accumulation error over 1536 terms, then one fp16 rounding.
			require.InDelta(t, want, got[i*g.N+j], 1e-3*math.Max(1, math.Abs(want)), "C[%d,%d]", i, j)
		}
	}
}

// A timing-only run takes exactly the time of a full one.
func TestNoValuesKeepsTheTiming(t *testing.T) {
	g := GEMM{M: 512, K: 1024, N: 512, BaseM: 128, BaseN: 256, BaseK: 64, StepK: 4, Cores: 4}
	full, _, err := Run(a2(t), g, nil, nil, device.RunOptions{})
	require.NoError(t, err)
	timed, _, err := Run(a2(t), g, nil, nil, device.RunOptions{NoValues: true})
	require.NoError(t, err)
	assert.Equal(t, full.Cycles, timed.Cycles)
	assert.Equal(t, full.PipeBusy, timed.PipeBusy)
	assert.Equal(t, full.L2Hits, timed.L2Hits)
	assert.Equal(t, full.GMBytesRead, timed.GMBytesRead)
	assert.Equal(t, full.GMBytesWritten, timed.GMBytesWritten)
}

// The published sizes run and keep the cube busy in the published range; the
// calibration figures themselves are reported by bench/calibrate.py.
func TestPublishedKernelSmallestRow(t *testing.T) {
	g := Published(1536, 24)
	st, _, err := Run(a2(t), g, nil, nil, device.RunOptions{NoValues: true})
	require.NoError(t, err)
	assert.Equal(t, 24, st.ActiveCores)
	assert.Greater(t, st.L2HitRate(), 0.5, "A and B panels are shared between cores through L2")
	busy := st.BusyRatio(isa.PipeM)
	assert.Greater(t, busy, 0.4)
	assert.Less(t, busy, 0.8)
}
