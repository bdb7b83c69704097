package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// Multi-head attention with q, k and v sliced from one projection and moved to
// [batch, heads, seq, dim]: the slices, reshapes and transposes are read in place by
// the attention kernel (one task), with the reference's values; the text forms carry
// the views.
func TestViewsFoldIntoMatrixKernels(t *testing.T) {
	const b, s, h, d = 2, 40, 3, 16
	for _, chip := range presets(t) {
		t.Run(chip.Name, func(t *testing.T) {
			bl := core.NewBuilder("mha")
			qkv := bl.Param("qkv", core.TensorType{DType: dtype.Float16, Shape: core.Shape{b, s, 3 * h * d}})
			op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
				v, err := bl.Op(name, in, attrs, core.Location{})
				require.NoError(t, err)
				return v
			}
			heads := func(i int) core.Value {
				x := op("slice", core.Attrs{"starts": []int64{0, 0, int64(i * h * d)}, "stops": []int64{b, s, int64((i + 1) * h * d)}, "steps": []int64{1, 1, 1}}, qkv)
				x = op("reshape", core.Attrs{"shape": []int64{b, s, h, d}}, x)
				return op("transpose", core.Attrs{"perm": []int64{0, 2, 1, 3}}, x)
			}
			q, k, v := heads(0), heads(1), heads(2)
			bl.Output(op("scaled_dot_product_attention", core.Attrs{"is_causal": true}, q, k, v))
			// A batch_matmul reading a transposed view as its transposed operand.
			bl.Output(op("batch_matmul", core.Attrs{"transpose_b": true}, q, k))
			g := bl.Graph()
			exe, err := Compile(g, Options{Chip: chip, Verify: true})
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{"flash_attention", "batch_matmul"}, taskOps(exe))
			// The same bytes as the program that copies the views out first.
			plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fold-views": true}})
			require.NoError(t, err)
			_, raw := randomInputs(g)
			got, _, err := exe.Run(raw)
			require.NoError(t, err)
			want, _, err := plain.Run(raw)
			require.NoError(t, err)
			require.Equal(t, want, got)

			tg := exe.Exec().Blocks.Tiles
			require.Contains(t, tg.Format(), " view offset=")
			back, err := ParseTileGraph(tg.Format())
			require.NoError(t, err)
			require.Equal(t, tg.Format(), back.Format())

			assert.Greater(t, len(taskOps(plain)), 2)
		})
	}
}

// A view some other kernel reads is computed as before.
func TestViewsWithOtherReadersStay(t *testing.T) {
	chip := presets(t)[1]
	bl := core.NewBuilder("mixed")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{32, 48}})
	tr, err := bl.Op("transpose", []core.Value{x}, nil, core.Location{})
	require.NoError(t, err)
	mm, err := bl.Op("matmul", []core.Value{tr, x}, nil, core.Location{})
	require.NoError(t, err)
	e, err := bl.Op("exp", []core.Value{tr}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(mm)
	bl.Output(e)
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	assert.Contains(t, taskOps(exe), "transpose")
	compileAndCompare(t, chip, g, 32)
}

func TestReshapeView(t *testing.T) {
	m := affineMap{offset: 5, strides: []int{384, 1}} // [40, 128] columns of a [40, 384] row
	r, ok := reshapeView(m, core.Shape{40, 128}, core.Shape{40, 4, 32})
	require.True(t, ok)
	assert.Equal(t, affineMap{offset: 5, strides: []int{384, 32, 1}}, r)
	_, ok = reshapeView(m, core.Shape{40, 128}, core.Shape{5120}) // rows are not adjacent
	assert.False(t, ok)
	r, ok = reshapeView(affineMap{strides: []int{8, 1}}, core.Shape{4, 8}, core.Shape{1, 32, 1})
	require.True(t, ok)
	assert.Equal(t, []int{0, 1, 0}, r.strides)
}

// Multi-head attention's transpose back to [batch, seq, heads, dim] is made by the
// attention kernel's stores; the reshape merging the heads is then an alias.
func TestAttentionStoresHeadsLast(t *testing.T) {
	const b, s, h, d = 2, 40, 3, 16
	for _, chip := range presets(t) {
		t.Run(chip.Name, func(t *testing.T) {
			bl := core.NewBuilder("heads")
			typ := core.TensorType{DType: dtype.Float16, Shape: core.Shape{b, h, s, d}}
			q, k, v := bl.Param("q", typ), bl.Param("k", typ), bl.Param("v", typ)
			op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
				x, err := bl.Op(name, in, attrs, core.Location{})
				require.NoError(t, err)
				return x
			}
			a := op("scaled_dot_product_attention", core.Attrs{"is_causal": true}, q, k, v)
			a = op("transpose", core.Attrs{"perm": []int64{0, 2, 1, 3}}, a)
			bl.Output(op("reshape", core.Attrs{"shape": []int64{b, s, h * d}}, a))
			g := bl.Graph()
			exe, err := Compile(g, Options{Chip: chip, Verify: true})
			require.NoError(t, err)
			assert.Equal(t, []string{"flash_attention"}, taskOps(exe))
			plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fold-attention-transpose": true}})
			require.NoError(t, err)
			assert.Equal(t, []string{"flash_attention", "transpose"}, taskOps(plain))
			_, raw := randomInputs(g)
			got, _, err := exe.Run(raw)
			require.NoError(t, err)
			want, _, err := plain.Run(raw)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}
