package lower

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
)

// max, min, maximum and minimum give NaN when any input is NaN, infinities included
// (Go's math.Max(NaN, +Inf) is +Inf, which the simulator once inherited).
func TestMinMaxPropagateNaNPastInfinities(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	rows := [][]float64{{1, nan, -inf, 2}, {-inf, nan, 1, 2}, {nan, -inf, 3, 4}, {1, 2, -inf, nan}, {inf, nan, 0, 0}, {nan, inf, 0, 0}}
	text := `graph g(%x: f32[6,4], %y: f32[4]) {
  %2 = max(%x) {axis=[1]} : f32[6]
  %3 = min(%x) {axis=[1]} : f32[6]
  %4 = max(%x) {axis=[0]} : f32[4]
  %5 = min(%x) {axis=[0]} : f32[4]
  %6 = maximum(%x, %y) : f32[6,4]
  %7 = minimum(%x, %y) : f32[6,4]
  return %2, %3, %4, %5, %6, %7
}`
	g, err := core.Parse(text)
	require.NoError(t, err)
	x := core.NewArray(g.Type(g.Params[0]))
	for i, r := range rows {
		copy(x.Data[i*4:], r)
	}
	y := core.NewArray(g.Type(g.Params[1]))
	copy(y.Data, []float64{inf, -inf, nan, 0})
	want, err := core.Interpret(g, []*core.Array{x, y})
	require.NoError(t, err)
	for _, level := range []OptLevel{O0, O2} {
		got := runAt(t, tinyChip(t), g, level, [][]byte{x.Bytes(), y.Bytes()})
		for k := range want {
			require.Equal(t, want[k].Bytes(), got[k].Bytes(), "output %d at %s: %v, want %v", k, level, got[k].Data, want[k].Data)
		}
	}
}
