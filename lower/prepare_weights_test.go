package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// With the convolution's weight and bias marked as weights, their conversions (the
// weight's transpose to the fractal layout, the bias's cast) run in the first run
// only: later runs with the same weight bytes skip them, move only the convolution
// kernel's bytes, take less simulated time and give the same bytes as a program that
// prepares nothing. New weight bytes are prepared again; a run without values never
// leaves prepared bytes that a run with values uses.
func TestPreparedWeightsRunOnce(t *testing.T) {
	for _, chip := range presets(t) {
		for i, cs := range []struct{ n, c, h, o, k int }{{2, 24, 9, 40, 3}, {3, 32, 6, 48, 1}} {
			t.Run(fmt.Sprintf("%s/%d", chip.Name, i), func(t *testing.T) {
				g := residualGraph(t, cs.n, cs.c, cs.h, cs.o, cs.k, false) // params x, w, b, r
				prep, err := Compile(g, Options{Chip: chip, Verify: true, Weights: []int{1, 2}})
				require.NoError(t, err)
				plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"prepare-weights": true}})
				require.NoError(t, err)
				require.Zero(t, plain.MemoryPlan().PreparedBytes)
				require.Positive(t, prep.MemoryPlan().PreparedBytes)
				back, err := ParseTileGraph(prep.Exec().Blocks.Tiles.Format())
				require.NoError(t, err, "the marks' text form parses back")
				require.Equal(t, prep.Exec().Blocks.Tiles.Format(), back.Format())

				_, raw := randomInputs(g)
				want, _, err := plain.Run(raw)
				require.NoError(t, err)
				first, st1, err := prep.Run(raw)
				require.NoError(t, err)
				require.Equal(t, want, first)
				require.Zero(t, st1.Skipped, "the first run prepares the weights")
				second, st2, err := prep.Run(raw)
				require.NoError(t, err)
				require.Equal(t, want, second, "the kept preparation gives the same bytes")
				require.Equal(t, len(prep.Exec().Tasks)-1, st2.Skipped, "only the convolution's kernel runs")
				require.Equal(t, st2.Ran(), 1)
				require.Less(t, st2.Cycles, st1.Cycles)
				require.Less(t, footprint(st2), footprint(st1))
				x, w, b, r := int64(len(raw[0])), int64(len(raw[1])), int64(len(raw[2])), int64(len(raw[3]))
				require.LessOrEqual(t, footprint(st2), x+r+int64(len(want[0]))+
					int64(prep.MemoryPlan().PreparedBytes), "the kernel reads x, r and the prepared weights and writes y")
				require.Greater(t, footprint(st1), footprint(st2)+w+b-1, "the first run also reads w and b")

				// New weights: prepared again, and right.
				raw2 := append([][]byte(nil), raw...)
				raw2[1] = append([]byte(nil), raw[1]...)
				raw2[1][0] ^= 0x40
				want2, _, err := plain.Run(raw2)
				require.NoError(t, err)
				got2, st3, err := prep.Run(raw2)
				require.NoError(t, err)
				require.Zero(t, st3.Skipped)
				require.Equal(t, want2, got2)
				// The old weights are still kept.
				_, st4, err := prep.Run(raw)
				require.NoError(t, err)
				require.Equal(t, len(prep.Exec().Tasks)-1, st4.Skipped)
			})
		}
	}
}

// A run that computes no values prepares nothing a run with values may use.
func TestPreparedWeightsNeedValues(t *testing.T) {
	chip := presets(t)[1]
	g := residualGraph(t, 2, 24, 9, 40, 3, false)
	prep, err := Compile(g, Options{Chip: chip, Weights: []int{1, 2}})
	require.NoError(t, err)
	_, raw := randomInputs(g)
	_, st, err := prep.RunWith(raw, device.RunOptions{NoValues: true})
	require.NoError(t, err)
	require.Zero(t, st.Skipped)
	_, st, err = prep.RunWith(raw, device.RunOptions{NoValues: true})
	require.NoError(t, err)
	require.Positive(t, st.Skipped, "timing runs share their preparation")
	want, err := Compile(g, Options{Chip: chip, Disabled: map[string]bool{"prepare-weights": true}})
	require.NoError(t, err)
	exp, _, err := want.Run(raw)
	require.NoError(t, err)
	got, st, err := prep.Run(raw)
	require.NoError(t, err)
	require.Zero(t, st.Skipped, "values are computed, weights included")
	require.Equal(t, exp, got)
}

// Weights that are not params, or that the program may overwrite, are refused.
func TestPreparedWeightsOptions(t *testing.T) {
	chip := presets(t)[0]
	g := residualGraph(t, 1, 8, 4, 8, 1, false)
	_, err := Compile(g, Options{Chip: chip, Weights: []int{4}})
	require.ErrorContains(t, err, "Weights names param 4, but the graph has 4 params")
	_, err = Compile(g, Options{Chip: chip, Weights: []int{1}, Donate: []int{1}})
	require.ErrorContains(t, err, "both a weight")
}

// A tensor computed from nothing but written in place later (a zeroed buffer a
// slice_update fills, as a gradient accumulator is) changes during the run, so it is
// not prepared: every run starts from its zeros again.
func TestWrittenInPlaceIsNotPrepared(t *testing.T) {
	b := core.NewBuilder("fill")
	row := b.Param("row", core.TensorType{DType: dtype.Float32, Shape: core.Shape{1, 8}})
	pos := b.Param("pos", core.TensorType{DType: dtype.Int32, Shape: core.Shape{}})
	zeros, err := b.Op("full", nil, core.Attrs{"shape": []int64{4, 8}, "value": 0.0, "dtype": "float32"}, core.Location{})
	require.NoError(t, err)
	upd, err := b.Op("slice_update", []core.Value{zeros, row, pos}, core.Attrs{"axes": []int64{0}}, core.Location{})
	require.NoError(t, err)
	out, err := b.Op("exp", []core.Value{upd}, nil, core.Location{}) // the buffer is an intermediate
	require.NoError(t, err)
	b.Output(out)
	g := b.Graph()
	exe, err := Compile(g, Options{Chip: presets(t)[1], Verify: true})
	require.NoError(t, err)
	for _, tk := range exe.Exec().Tasks {
		require.False(t, exe.Exec().WeightPrep(tk), "task %s", tk.Name)
	}
	ins, raw := randomInputs(g)
	for _, p := range []int{0, 2, 3} {
		raw[1] = int32Bytes(p)
		ins[1] = core.ArrayFromBytes(g.Type(g.Params[1]), raw[1])
		want, err := core.Interpret(g, ins)
		require.NoError(t, err)
		got, _, err := exe.Run(raw)
		require.NoError(t, err)
		require.Equal(t, want[0].Bytes(), got[0], "pos %d: only this run's row is set", p)
	}
}
