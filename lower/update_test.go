package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// cacheUpdateGraph writes a [heads, 1, hd] row into a [heads, T, hd] cache at a start
// given as an input, and returns the cache (and, with read, its sum too).
func cacheUpdateGraph(t *testing.T, dt dtype.DType, heads, T, hd int, read bool) *core.Graph {
	b := core.NewBuilder("cache_update")
	cache := b.Param("cache", core.TensorType{DType: dt, Shape: core.Shape{heads, T, hd}})
	row := b.Param("row", core.TensorType{DType: dt, Shape: core.Shape{heads, 1, hd}})
	pos := b.Param("pos", core.TensorType{DType: dtype.Int32, Shape: core.Shape{}})
	out, err := b.Op("slice_update", []core.Value{cache, row, pos}, core.Attrs{"axes": []int64{1}}, core.Location{File: "decode.py", Line: 7})
	require.NoError(t, err)
	b.Output(out)
	if read {
		s, err := b.Op("sum", []core.Value{out}, core.Attrs{"axis": []int64{1}}, core.Location{})
		require.NoError(t, err)
		b.Output(s)
	}
	return b.Graph()
}

func int32Bytes(v int) []byte {
	a := core.NewArray(core.TensorType{DType: dtype.Int32, Shape: core.Shape{}})
	a.Data[0] = float64(v)
	return a.Bytes()
}

// gmBytes sums the bytes the run's tasks moved to and from GM.
func gmBytes(st *RunStats) (read, written int64) {
	for _, tr := range st.Tasks {
		read += tr.Stats.GMBytesRead
		written += tr.Stats.GMBytesWritten
	}
	return read, written
}

func TestSliceUpdateInPlaceMovesOnlyTheUpdate(t *testing.T) {
	for _, chip := range presets(t) {
		for _, dt := range []dtype.DType{dtype.Float32, dtype.Float16, dtype.Int8} {
			heads, T, hd := 3, 37, 24
			g := cacheUpdateGraph(t, dt, heads, T, hd, false)
			ins, raw := randomInputs(g)
			for _, pos := range []int{0, 11, T - 1} {
				raw[2] = int32Bytes(pos)
				ins[2] = core.ArrayFromBytes(g.Type(g.Params[2]), raw[2])
				want, err := core.Interpret(g, ins)
				require.NoError(t, err)
				for _, donate := range []bool{true, false} {
					opts := Options{Chip: chip, Verify: true}
					if donate {
						opts.Donate = []int{0}
					}
					exe, err := Compile(g, opts)
					require.NoError(t, err)
					outs, st, err := exe.Run(raw)
					require.NoError(t, err)
					assert.Equal(t, want[0].Bytes(), outs[0], "%s %s pos %d donate %v", chip.Name, dt, pos, donate)
					rd, wr := gmBytes(st)
					update := int64(heads * hd * dt.Size())
					cache := int64(heads * T * hd * dt.Size())
					if donate {
						// The row is read and stored once; the start is 4 bytes per block.
						assert.Equal(t, update, wr, "%s %s: only the row is stored", chip.Name, dt)
						assert.Less(t, rd, update+int64(4*chip.VectorCores)+1)
						assert.Len(t, exe.Exec().Tasks, 1)
						assert.Equal(t, exe.Exec().Buffers[exe.Exec().Blocks.Tiles.Outputs[0]], exe.Exec().Buffers[exe.Exec().Blocks.Tiles.Params[0]],
							"the result is the donated input's buffer")
					} else {
						assert.GreaterOrEqual(t, wr, cache+update, "%s %s: without donation the cache is copied", chip.Name, dt)
						assert.Len(t, exe.Exec().Tasks, 2)
					}
				}
			}
		}
	}
}

func TestSliceUpdateOfAReadInputCopiesEvenWhenDonated(t *testing.T) {
	chip := preset(t, "tiny")
	b := core.NewBuilder("two_reads")
	x := b.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{5, 8}})
	u := b.Param("u", core.TensorType{DType: dtype.Float32, Shape: core.Shape{2, 8}})
	pos := b.Param("pos", core.TensorType{DType: dtype.Int32, Shape: core.Shape{}})
	y, err := b.Op("slice_update", []core.Value{x, u, pos}, core.Attrs{"axes": []int64{0}}, core.Location{})
	require.NoError(t, err)
	z, err := b.Op("add", []core.Value{x, y}, nil, core.Location{}) // reads the old x after the update
	require.NoError(t, err)
	b.Output(z)
	g := b.Graph()
	ins, raw := randomInputs(g)
	raw[2] = int32Bytes(3)
	ins[2] = core.ArrayFromBytes(g.Type(g.Params[2]), raw[2])
	want, err := core.Interpret(g, ins)
	require.NoError(t, err)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Donate: []int{0}})
	require.NoError(t, err)
	outs, _, err := exe.Run(raw)
	require.NoError(t, err)
	assert.Equal(t, want[0].Bytes(), outs[0])
}

func TestSliceUpdateChainsInPlaceOnAnIntermediate(t *testing.T) {
	chip := preset(t, "tiny")
	b := core.NewBuilder("chain")
	x := b.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{6, 5, 7}})
	u := b.Param("u", core.TensorType{DType: dtype.Float32, Shape: core.Shape{2, 5, 3}})
	p0 := b.Param("p0", core.TensorType{DType: dtype.Int32, Shape: core.Shape{}})
	p1 := b.Param("p1", core.TensorType{DType: dtype.Int32, Shape: core.Shape{}})
	e, err := b.Op("exp", []core.Value{x}, nil, core.Location{})
	require.NoError(t, err)
	y, err := b.Op("slice_update", []core.Value{e, u, p0, p1}, core.Attrs{"axes": []int64{0, -1}}, core.Location{})
	require.NoError(t, err)
	y2, err := b.Op("slice_update", []core.Value{y, u, p1, p0}, core.Attrs{"axes": []int64{2, 0}}, core.Location{})
	require.NoError(t, err)
	b.Output(y2)
	g := b.Graph()
	ins, raw := randomInputs(g)
	raw[2], raw[3] = int32Bytes(4), int32Bytes(1)
	ins[2] = core.ArrayFromBytes(g.Type(g.Params[2]), raw[2])
	ins[3] = core.ArrayFromBytes(g.Type(g.Params[3]), raw[3])
	want, err := core.Interpret(g, ins)
	require.NoError(t, err)
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	assert.Len(t, exe.Exec().Tasks, 3, "exp, then two updates in its bytes")
	text := exe.Exec().Format(true)
	back, err := ParseExecGraph(text)
	require.NoError(t, err, "the execution graph's text parses back")
	assert.Equal(t, text, back.Format(true))
	outs, _, err := exe.Run(raw)
	require.NoError(t, err)
	assert.InDeltaSlice(t, want[0].Data, core.ArrayFromBytes(g.Type(y2), outs[0]).Data, 1e-6)
}

func TestSliceUpdateStartOutsideNamesTheLine(t *testing.T) {
	chip := preset(t, "tiny")
	g := cacheUpdateGraph(t, dtype.Float32, 2, 9, 8, false)
	_, raw := randomInputs(g)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Donate: []int{0}})
	require.NoError(t, err)
	for _, pos := range []int{9, -1, 1 << 20} {
		raw[2] = int32Bytes(pos)
		_, _, err = exe.Run(raw)
		require.Error(t, err, "pos %d", pos)
		var ce *core.Error
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, ce.Error(), "outside the axis of size 9", "pos %d", pos)
		assert.Equal(t, 7, ce.Loc.Line)
	}
}

func TestSliceUpdateRanksAndAxes(t *testing.T) {
	chip := preset(t, "tiny")
	cases := []struct {
		x, u   core.Shape
		axes   []int64
		starts []int
	}{
		{core.Shape{77}, core.Shape{5}, []int64{0}, []int{72}},
		{core.Shape{1}, core.Shape{1}, []int64{0}, []int{0}},
		{core.Shape{9, 300}, core.Shape{9, 257}, []int64{1}, []int{43}},              // rows wider than a tile
		{core.Shape{2, 3, 5, 7}, core.Shape{2, 1, 2, 7}, []int64{2, 1}, []int{3, 2}}, // starts out of axis order
		{core.Shape{4, 6}, core.Shape{4, 6}, nil, nil},                               // the whole of x
	}
	for _, tc := range cases {
		b := core.NewBuilder("ranks")
		x := b.Param("x", core.TensorType{DType: dtype.Float16, Shape: tc.x})
		u := b.Param("u", core.TensorType{DType: dtype.Float16, Shape: tc.u})
		in := []core.Value{x, u}
		for i := range tc.starts {
			in = append(in, b.Param(fmt.Sprintf("s%d", i), core.TensorType{DType: dtype.Int32, Shape: core.Shape{}}))
		}
		y, err := b.Op("slice_update", in, core.Attrs{"axes": tc.axes}, core.Location{})
		require.NoError(t, err)
		b.Output(y)
		g := b.Graph()
		ins, raw := randomInputs(g)
		for i, s := range tc.starts {
			raw[2+i] = int32Bytes(s)
			ins[2+i] = core.ArrayFromBytes(g.Type(g.Params[2+i]), raw[2+i])
		}
		want, err := core.Interpret(g, ins)
		require.NoError(t, err)
		for _, donate := range [][]int{nil, {0}} {
			exe, err := Compile(g, Options{Chip: chip, Verify: true, Donate: donate})
			require.NoError(t, err)
			outs, _, err := exe.Run(raw)
			require.NoError(t, err)
			assert.Equal(t, want[0].Bytes(), outs[0], "x %v update %v donate %v", tc.x, tc.u, donate)
		}
	}
}
