package calib

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// topKOracle is the first k values of each row in descending order and their
// columns, ties by column (the kernel's merges are stable), from a plain sort.
func topKOracle(x []float64, rows, cols, k int) ([]float64, []int32) {
	vals := make([]float64, 0, rows*k)
	idx := make([]int32, 0, rows*k)
	for r := range rows {
		cs := make([]int, cols)
		for c := range cs {
			cs[c] = c
		}
		row := x[r*cols : (r+1)*cols]
		sort.SliceStable(cs, func(i, j int) bool { return row[cs[i]] > row[cs[j]] })
		for _, c := range cs[:k] {
			vals = append(vals, row[c])
			idx = append(idx, int32(c))
		}
	}
	return vals, idx
}

// The kernel stores each row's top k values and their columns, for f32 and f16
// rows with repeated values (ties keep column order), on several cores.
func TestTopKKernelComputesTheTopK(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.Float32, dtype.Float16} {
		k := 1000
		if dt == dtype.Float16 {
			k = 1008 // a row of an f16 tile is a multiple of 32 bytes, as in the published row
		}
		tk := TopK{DType: dt, Rows: 16, ValidCol: 1024, Col: 1280, K: k, Cores: 4}
		rng := rand.New(rand.NewPCG(3, 4))
		x := make([]float64, tk.Rows*tk.ValidCol)
		for i := range x {
			x[i] = dtype.Round(dt, float64(rng.IntN(4000))/64-30)
		}
		st, vb, ib, err := RunTopK(a2(t), tk, dtype.Encode(dt, x), device.RunOptions{})
		require.NoError(t, err, "%s", dt)
		assert.Equal(t, 4, st.ActiveCores)
		wantV, wantI := topKOracle(x, tk.Rows, tk.ValidCol, tk.K)
		require.Equal(t, wantV, dtype.Decode(dt, vb, len(wantV)), "%s values", dt)
		gotI := dtype.Decode(dtype.Int32, ib, len(wantI))
		for i, w := range wantI {
			require.Equal(t, float64(w), gotI[i], "%s index %d", dt, i)
		}
	}
}

func TestTopKMergeRuns(t *testing.T) {
	assert.Equal(t, []int{32, 128, 256}, TopK{ValidCol: 1024, Col: 1280}.mergeRuns())
	assert.Equal(t, []int{32, 128}, TopK{ValidCol: 512, Col: 512}.mergeRuns())
	_, err := TopK{DType: dtype.Float32, Rows: 6, ValidCol: 1024, Col: 1280, K: 10, Cores: 4}.Program()
	require.ErrorContains(t, err, "rows % (2 x cores)")
	_, err = TopK{DType: dtype.Int32, Rows: 8, ValidCol: 1024, Col: 1280, K: 10, Cores: 4}.Program()
	require.ErrorContains(t, err, "f32 or f16")
}

// A timing-only run of a published row takes the time of a full one.
func TestTopKNoValuesKeepsTheTiming(t *testing.T) {
	tk := TopK{DType: dtype.Float32, Rows: 96, ValidCol: 1024, Col: 1280, K: 1000, Cores: 48}
	full, _, _, err := RunTopK(a2(t), tk, nil, device.RunOptions{})
	require.NoError(t, err)
	timed, _, _, err := RunTopK(a2(t), tk, nil, device.RunOptions{NoValues: true})
	require.NoError(t, err)
	assert.Equal(t, full.Cycles, timed.Cycles)
	assert.Equal(t, full.PipeBusy, timed.PipeBusy)
	kernelBusy := float64(timed.PipeBusy[isa.PipeV]) / float64(timed.KernelCycles*int64(timed.ActiveCores))
	assert.Greater(t, kernelBusy, 0.5, "the kernel is sort-bound")
}

// The sensitivity table computes the start and end constants' rows from the preset's
// run: that equals running again.
func TestOverheadRowsEqualARun(t *testing.T) {
	chip := a2(t)
	tk := TopK{DType: dtype.Float32, Rows: 192, ValidCol: 1024, Col: 1280, K: 1000, Cores: 48}
	c := Case{Name: "topk", TopK: &tk}
	base, err := c.Simulate(chip)
	require.NoError(t, err)
	for _, k := range device.TimingConstants() {
		if !k.Overhead {
			continue
		}
		changed := chip.Clone()
		k.Set(changed, 2*k.Get(chip)+100)
		want, err := c.Simulate(changed)
		require.NoError(t, err)
		got, ok := withOverhead(changed, base)
		require.True(t, ok)
		assert.InDelta(t, want.Seconds()*1e3, got, 1e-12, "%s", k.Name)
	}
}
