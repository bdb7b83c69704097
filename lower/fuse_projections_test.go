package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// attentionBlock is the attention half of a transformer layer over x [s, hidden]:
// q, k and v projections with biases, split into heads and fed to attention (the
// registry op, or the chain written by hand when byHand), merged and returned.
func attentionBlock(t *testing.T, dt dtype.DType, s, hidden, heads int, byHand bool) *core.Graph {
	bl := core.NewBuilder("attn")
	typ := func(shape ...int) core.TensorType { return core.TensorType{DType: dt, Shape: shape} }
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
	hd := hidden / heads
	x := bl.Param("x", typ(s, hidden))
	split := func(v core.Value) core.Value {
		v = op("reshape", core.Attrs{"shape": []int64{int64(s), int64(heads), int64(hd)}}, v)
		return op("transpose", core.Attrs{"perm": []int64{1, 0, 2}}, v)
	}
	var qkv []core.Value
	for _, name := range []string{"q", "k", "v"} {
		w, b := bl.Param("w"+name, typ(hidden, hidden)), bl.Param("b"+name, typ(hidden))
		qkv = append(qkv, split(op("linear", nil, x, w, b)))
	}
	var a core.Value
	if byHand {
		scale := op("full", core.Attrs{"value": 0.25, "dtype": dt.LongName(), "shape": []int64{}})
		sc := op("mul", nil, op("batch_matmul", core.Attrs{"transpose_b": true}, qkv[0], qkv[1]), scale)
		a = op("batch_matmul", nil, op("softmax", nil, op("add", nil, sc, bl.Param("mask", typ(s, s)))), qkv[2])
	} else {
		a = op("scaled_dot_product_attention", core.Attrs{"is_causal": true}, qkv...)
	}
	a = op("reshape", core.Attrs{"shape": []int64{int64(s), int64(hidden)}}, op("transpose", core.Attrs{"perm": []int64{1, 0, 2}}, a))
	bl.Output(a)
	return bl.Graph()
}

// The q, k and v projections of attention become one matmul of the concatenated
// weights with the concatenated biases in its epilogue; the concatenations are the
// inputs packed in GM (no task) and the three slices are read in place by the
// attention kernel. The values are the unfused program's bytes and the reference's, on
// every preset, edge tiles included.
func TestQKVProjectionsAreOneMatmul(t *testing.T) {
	for _, chip := range presets(t) {
		for _, c := range []struct {
			s, hidden, heads int
			byHand           bool
		}{{64, 256, 4, false}, {40, 256, 2, true}} {
			t.Run(fmt.Sprintf("%s/%dx%d_h%d_%v", chip.Name, c.s, c.hidden, c.heads, c.byHand), func(t *testing.T) {
				g := attentionBlock(t, dtype.Float16, c.s, c.hidden, c.heads, c.byHand)
				exe, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				require.Equal(t, []string{"fused_matmul", "flash_attention"}, taskOps(exe))
				packed := 0
				for _, tt := range exe.Exec().Blocks.Tiles.Tensors {
					if len(tt.Pieces) > 0 {
						packed++
					}
				}
				require.Equal(t, 2, packed, "the weights and the biases")
				plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-projections": true}})
				require.NoError(t, err)
				require.Equal(t, []string{"fused_matmul", "fused_matmul", "fused_matmul", "flash_attention"}, taskOps(plain))
				requireSameOutputs(t, g, exe, plain)
				if !c.byHand { // the registry op's tolerance (the chain's scores are rounded to f16 first)
					compileAndCompare(t, chip, g, c.hidden)
				}
				text := exe.Exec().Format(true)
				back, err := ParseExecGraph(text)
				require.NoError(t, err)
				require.Equal(t, text, back.Format(true))
				require.NoError(t, back.Verify(chip))
			})
		}
	}
}

// Projections read by anything but matrix kernels stay apart: their slices would be
// copies. So do projections whose weights or biases end inside a GM granule: their
// concatenation would be a copy too.
func TestProjectionsStayApartWhereSlicesWouldCopy(t *testing.T) {
	chip := preset(t, "a2")
	bl := core.NewBuilder("two")
	f16 := func(shape ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: shape} }
	x := bl.Param("x", f16(64, 64))
	w1, w2 := bl.Param("w1", f16(64, 64)), bl.Param("w2", f16(64, 64))
	a, err := bl.Op("matmul", []core.Value{x, w1}, core.Attrs{"transpose_b": true}, core.Location{})
	require.NoError(t, err)
	b, err := bl.Op("matmul", []core.Value{x, w2}, core.Attrs{"transpose_b": true}, core.Location{})
	require.NoError(t, err)
	y, err := bl.Op("add", []core.Value{a, b}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	exe, err := Compile(bl.Graph(), Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.Equal(t, []string{"matmul", "fused_matmul"}, taskOps(exe))
	compileAndCompare(t, chip, bl.Graph(), 64)

	g := attentionBlock(t, dtype.Float16, 40, 96, 3, true) // biases of 192 bytes
	exe, err = Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.Equal(t, []string{"fused_matmul", "fused_matmul", "fused_matmul", "flash_attention"}, taskOps(exe))
}

// A concat of inputs along their first axis is their bytes in GM: no task, values
// read in place, a donated input or a piece that ends inside a GM granule excepted
// (then the concat is a kernel of its own).
func TestConcatOfInputsIsPacked(t *testing.T) {
	chip := preset(t, "tiny")
	for _, c := range []struct {
		rows   []int
		donate []int
		packed bool
	}{{[]int{4, 12, 3}, nil, true}, {[]int{3, 4}, nil, false}, {[]int{4, 4}, []int{1}, false}} {
		t.Run(fmt.Sprint(c.rows, c.donate), func(t *testing.T) {
			bl := core.NewBuilder("pack")
			var ins []core.Value
			for i, r := range c.rows {
				ins = append(ins, bl.Param(fmt.Sprintf("w%d", i), core.TensorType{DType: dtype.Float32, Shape: core.Shape{r, 32}}))
			}
			w, err := bl.Op("concat", ins, nil, core.Location{})
			require.NoError(t, err)
			x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{8, 32}})
			y, err := bl.Op("matmul", []core.Value{x, w}, core.Attrs{"transpose_b": true}, core.Location{})
			require.NoError(t, err)
			bl.Output(y)
			g := bl.Graph()
			exe, err := Compile(g, Options{Chip: chip, Verify: true, Donate: c.donate})
			require.NoError(t, err)
			if c.packed {
				require.Equal(t, []string{"matmul"}, taskOps(exe))
			} else {
				require.Contains(t, taskOps(exe), "concat")
			}
			compileAndCompare(t, chip, g, 32)
		})
	}
}

// A row-wise op on one projection (a padded program's where(keep, v, 0)) joins the
// fused product's epilogue, kept to that projection's columns: the three projections
// stay one matmul, with the unfused program's bytes and the reference's values.
func TestRowWiseOpOfAProjectionJoinsTheEpilogue(t *testing.T) {
	for _, chip := range presets(t) {
		bl := core.NewBuilder("rows")
		f16 := func(shape ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: shape} }
		op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
			v, err := bl.Op(name, in, attrs, core.Location{})
			require.NoError(t, err)
			return v
		}
		x := bl.Param("x", f16(40, 256))
		var p []core.Value
		for _, name := range []string{"q", "k", "v"} {
			p = append(p, op("linear", nil, x, bl.Param("w"+name, f16(256, 256)), bl.Param("b"+name, f16(256))))
		}
		keep := bl.Param("keep", core.TensorType{DType: dtype.Bool, Shape: core.Shape{40, 1}})
		v := op("where", nil, keep, p[2], op("full", core.Attrs{"value": 0.0, "dtype": "float16", "shape": []int64{}}))
		bl.Output(op("matmul", core.Attrs{"transpose_b": true}, p[0], p[1]))
		bl.Output(op("matmul", nil, v, bl.Param("m", f16(256, 32))))
		g := bl.Graph()
		exe, err := Compile(g, Options{Chip: chip, Verify: true})
		require.NoError(t, err)
		matrix := 0 // the projections' one matmul and the two outputs' (tiny's UB leaves the epilogue a kernel of its own)
		for _, o := range taskOps(exe) {
			if o == "matmul" || o == "fused_matmul" {
				matrix++
			}
		}
		require.Equal(t, 3, matrix, "%s: %v", chip.Name, taskOps(exe))
		plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-projections": true}})
		require.NoError(t, err)
		require.Less(t, len(taskOps(exe)), len(taskOps(plain)))
		requireSameOutputs(t, g, exe, plain)
		compileAndCompare(t, chip, g, 256)
	}
}
