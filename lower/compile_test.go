package lower

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// randomArray fills an array with values in [-1, 1) (small integers for int types),
// already rounded to its dtype.
func randomArray(rng *rand.Rand, t core.TensorType) *core.Array {
	a := core.NewArray(t)
	for i := range a.Data {
		v := rng.Float64()*2 - 1
		switch {
		case t.DType.IsInt():
			v = float64(rng.IntN(9) - 4)
		case t.DType == dtype.Bool:
			v = float64(rng.IntN(2))
		}
		a.Data[i] = dtype.Round(t.DType, v)
	}
	return a
}

// tolerance is the allowed |device - reference| for an element whose reference value
// is ref, in a result reduced over k products. Elementwise ops are exact (k = 0): both
// sides compute in wide precision and round once. Matmul accumulates in fp32 on the
// device and exactly in the reference; the fp32 error (about k * 2^-24 * sum|a*b|,
// bounded here by k * 2^-24 * k for inputs in [-1, 1]) can flip the final rounding to
// the output dtype by one unit in the last place.
func tolerance(dt dtype.DType, ref float64, k int) float64 {
	if k == 0 || dt.IsInt() {
		return 0
	}
	ulp := map[dtype.DType]float64{dtype.Float32: 0x1p-23, dtype.Float16: 0x1p-10, dtype.BFloat16: 0x1p-7}[dt]
	return ulp*math.Abs(ref) + float64(k*k)*0x1p-24 + 1e-30
}

// randomInputs gives every param of g random values, as arrays and as bytes.
func randomInputs(g *core.Graph) ([]*core.Array, [][]byte) {
	rng := rand.New(rand.NewPCG(1, uint64(len(g.Nodes))))
	var ins []*core.Array
	var raw [][]byte
	for _, p := range g.Params {
		a := randomArray(rng, g.Type(p))
		ins = append(ins, a)
		raw = append(raw, a.Bytes())
	}
	return ins, raw
}

// chipGraph is g as the session hands it to the compiler: its int64 values (the
// indices of argmax, argsort, topk) narrowed to int32 by core.NarrowInt64.
func chipGraph(t testing.TB, g *core.Graph) *core.Graph {
	t.Helper()
	if !core.HasInt64(g) {
		return g
	}
	ng, _, err := core.NarrowInt64(g)
	require.NoError(t, err)
	return ng
}

// compileAndCompare compiles g for chip, runs it on random inputs and checks every
// output against the reference interpreter.
func compileAndCompare(t *testing.T, chip *device.Chip, g *core.Graph, k int) *RunStats {
	t.Helper()
	g = chipGraph(t, g)
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	ins, raw := randomInputs(g)
	want, err := core.Interpret(g, ins)
	require.NoError(t, err)
	got, stats, err := exe.Run(raw)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i, w := range want {
		g := core.ArrayFromBytes(w.Type, got[i])
		// An epilogue rounds the product before adding to it: one rounding of a value
		// as large as the largest output, besides the result's own.
		scale := maxAbs(w.Data)
		for j := range w.Data {
			d := math.Abs(g.Data[j] - w.Data[j])
			tol := tolerance(w.Type.DType, w.Data[j], k) + tolerance(w.Type.DType, scale, k)
			if !(d <= tol) && !(math.IsNaN(g.Data[j]) && math.IsNaN(w.Data[j])) {
				t.Fatalf("output %d element %d: device %v, reference %v (tolerance %g)", i, j, g.Data[j], w.Data[j], tol)
			}
		}
	}
	return stats
}

func matmulGraph(t *testing.T, dt dtype.DType, a, b core.Shape, attrs core.Attrs, relu bool) *core.Graph {
	t.Helper()
	bl := core.NewBuilder("mm")
	x := bl.Param("a", core.TensorType{DType: dt, Shape: a})
	w := bl.Param("b", core.TensorType{DType: dt, Shape: b})
	y, err := bl.Op("matmul", []core.Value{x, w}, attrs, core.Location{})
	require.NoError(t, err)
	if relu {
		y, err = bl.Op("relu", []core.Value{y}, nil, core.Location{})
		require.NoError(t, err)
	}
	bl.Output(y)
	return bl.Graph()
}

func presets(t *testing.T) []*device.Chip {
	var chips []*device.Chip
	for _, name := range []string{"tiny", "a2"} {
		c, err := device.Preset(name)
		require.NoError(t, err)
		chips = append(chips, c)
	}
	return chips
}

func TestMatmulMatchesReference(t *testing.T) {
	cases := []struct {
		dt    dtype.DType
		a, b  core.Shape
		attrs core.Attrs
		relu  bool
		inner int
	}{
		{dtype.Float16, core.Shape{1, 1}, core.Shape{1, 1}, nil, false, 1},
		{dtype.Float16, core.Shape{17, 33}, core.Shape{33, 65}, nil, true, 33},
		{dtype.Float32, core.Shape{17, 33}, core.Shape{33, 65}, nil, false, 33},
		{dtype.BFloat16, core.Shape{17, 33}, core.Shape{33, 65}, nil, true, 33},
		{dtype.Float16, core.Shape{300, 520}, core.Shape{520, 130}, nil, true, 520},
		{dtype.Float16, core.Shape{40, 70}, core.Shape{50, 70}, core.Attrs{"transpose_b": true}, false, 70},
		{dtype.Float16, core.Shape{70, 40}, core.Shape{70, 50}, core.Attrs{"transpose_a": true}, false, 70},
		{dtype.Int8, core.Shape{20, 100}, core.Shape{100, 30}, nil, false, 100},
		{dtype.Float16, core.Shape{3, 0}, core.Shape{0, 5}, nil, false, 0},
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s%v@%v%v", chip.Name, c.dt, c.a, c.b, c.attrs), func(t *testing.T) {
				stats := compileAndCompare(t, chip, matmulGraph(t, c.dt, c.a, c.b, c.attrs, c.relu), c.inner)
				require.Positive(t, stats.Cycles)
			})
		}
	}
}

func TestElementwiseMatchesReferenceExactly(t *testing.T) {
	cases := []struct {
		op   string
		a, b core.TensorType
	}{
		{"add", core.TensorType{DType: dtype.Float16, Shape: core.Shape{17, 33}}, core.TensorType{DType: dtype.Float16, Shape: core.Shape{17, 33}}},
		{"mul", core.TensorType{DType: dtype.BFloat16, Shape: core.Shape{5, 300}}, core.TensorType{DType: dtype.BFloat16, Shape: core.Shape{300}}},
		{"add", core.TensorType{DType: dtype.Float32, Shape: core.Shape{3, 1, 5}}, core.TensorType{DType: dtype.Float32, Shape: core.Shape{4, 1}}},
		{"add", core.TensorType{DType: dtype.Float16, Shape: core.Shape{64, 70}}, core.TensorType{DType: dtype.Float32, Shape: core.Shape{64, 70}}},
		{"mul", core.TensorType{DType: dtype.Int32, Shape: core.Shape{7}}, core.TensorType{DType: dtype.Int32, Shape: core.Shape{}}},
		{"add", core.TensorType{DType: dtype.Float32, Shape: core.Shape{1, 1}}, core.TensorType{DType: dtype.Float32, Shape: core.Shape{1, 1}}},
		{"add", core.TensorType{DType: dtype.Float32, Shape: core.Shape{0, 4}}, core.TensorType{DType: dtype.Float32, Shape: core.Shape{4}}},
		{"add", core.TensorType{DType: dtype.Float16, Shape: core.Shape{300, 700}}, core.TensorType{DType: dtype.Float16, Shape: core.Shape{300, 700}}},
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s_%s_%s", chip.Name, c.op, c.a, c.b), func(t *testing.T) {
				bl := core.NewBuilder("ew")
				x := bl.Param("x", c.a)
				y := bl.Param("y", c.b)
				z, err := bl.Op(c.op, []core.Value{x, y}, nil, core.Location{})
				require.NoError(t, err)
				r, err := bl.Op("relu", []core.Value{z}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(z)
				bl.Output(r)
				compileAndCompare(t, chip, bl.Graph(), 0)
			})
		}
	}
}

var registerUnlowered sync.Once

// An op the device cannot run must be refused at compile time with an error naming it
// and pointing at the user's line: there is no silent host fallback.
func TestOpsWithoutLoweringAreRefusedClearly(t *testing.T) {
	registerUnlowered.Do(func() {
		core.Register(&core.OpDef{Name: "test_unlowered", Arity: 1,
			Infer: func(in []core.TensorType, _ core.Attrs) (core.TensorType, *core.Error) { return in[0], nil },
			Eval:  func(in []*core.Array, _ core.Attrs, out *core.Array) { copy(out.Data, in[0].Data) }})
	})
	chip := presets(t)[0]
	for _, name := range core.OpNames() {
		if _, ok := lowerings[name]; ok {
			continue
		}
		if _, ok := expandedOps[name]; ok {
			continue // rewritten into lowered ops; tested with them
		}
		def, _ := core.LookupOp(name)
		bl := core.NewBuilder("unlowered")
		var ins []core.Value
		for i := 0; i < def.Arity; i++ {
			ins = append(ins, bl.Param(fmt.Sprintf("x%d", i), core.TensorType{DType: dtype.Float32, Shape: core.Shape{4, 4}}))
		}
		loc := core.Location{File: "model.py", Line: 7}
		v, err := bl.Op(name, ins, nil, loc)
		if err != nil {
			continue // this op does not take these inputs; nothing to compile
		}
		bl.Output(v)
		_, err = Compile(chipGraph(t, bl.Graph()), Options{Chip: chip, Verify: true})
		if err == nil && core.IsComposite(name) {
			continue // every primitive it decomposes into has a lowering
		}
		var ce *core.Error
		require.ErrorAs(t, err, &ce, name)
		require.Equal(t, core.CompileError, ce.Kind)
		if core.IsComposite(name) {
			require.Regexp(t, "has no lowering|cannot run on the device yet", ce.Message, name) // names the primitive it decomposes into
		} else {
			require.Contains(t, ce.Message, name)
		}
		require.Equal(t, 7, ce.Loc.Line)
	}
}

func TestPassTableOrderIsChecked(t *testing.T) {
	require.NoError(t, checkPassTable(passTable))
	bad := []Pass{{Name: "b", Required: true, After: []string{"a"}}, {Name: "a", Required: true}}
	require.ErrorContains(t, checkPassTable(bad), `"b" must run after "a"`)
	require.ErrorContains(t, checkPassTable([]Pass{{Name: "x", Required: true, After: []string{"nope"}}}), "unknown pass")
	require.ErrorContains(t, checkPassTable([]Pass{{Name: "x", Required: true}, {Name: "x", Required: true}}), "twice")
}

func TestWorkspaceIsReusedByLiveness(t *testing.T) {
	chip := presets(t)[0]
	bl := core.NewBuilder("chain")
	typ := core.TensorType{DType: dtype.Float32, Shape: core.Shape{64, 64}}
	v := bl.Param("x", typ)
	for i := 0; i < 5; i++ {
		var err error
		v, err = bl.Op("relu", []core.Value{v}, nil, core.Location{})
		require.NoError(t, err)
	}
	bl.Output(v)
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: chip, Verify: true, OptLevel: O0}) // one kernel per relu
	require.NoError(t, err)
	eg := exe.Exec()
	require.Equal(t, 4*roundUp(typ.Bytes(), gmAlign), eg.WorkspaceNoReuse)
	require.Equal(t, 2*roundUp(typ.Bytes(), gmAlign), eg.WorkspaceBytes, "a chain needs only two live intermediates at a time")
	compileAndCompare(t, chip, g, 0)
}

func TestBlocksAreBalanced(t *testing.T) {
	chip := presets(t)[0]
	g := matmulGraph(t, dtype.Float16, core.Shape{300, 64}, core.Shape{64, 130}, nil, false)
	exe, err := Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	k := exe.Exec().Blocks.Kernels[0]
	require.Len(t, k.Blocks, chip.Cores(k.Core))
	lo, hi := len(k.Blocks[0]), len(k.Blocks[0])
	for _, b := range k.Blocks {
		lo, hi = min(lo, len(b)), max(hi, len(b))
	}
	require.LessOrEqual(t, hi-lo, 1)
}

func TestDumpShowsEveryLevel(t *testing.T) {
	chip := presets(t)[0]
	exe, err := Compile(matmulGraph(t, dtype.Float16, core.Shape{17, 33}, core.Shape{33, 65}, nil, true), Options{Chip: chip, Verify: true, Dump: true})
	require.NoError(t, err)
	d := exe.Dump()
	for _, want := range []string{"graph mm", "tilegraph mm", "blockgraph mm", "execgraph mm", "tmatmul", "trelu"} {
		require.Contains(t, d, want)
	}
	require.Len(t, exe.PassDumps(), len(passTable))
}

// A tensor read twice by one op (x + x, x @ x) is bound once: the kernel's params must
// not alias.
func TestRepeatedInputIsOneParam(t *testing.T) {
	chip := presets(t)[0]
	bl := core.NewBuilder("twice")
	x := bl.Param("x", core.TensorType{DType: dtype.Float16, Shape: core.Shape{40, 40}})
	s, err := bl.Op("add", []core.Value{x, x}, nil, core.Location{})
	require.NoError(t, err)
	m, err := bl.Op("matmul", []core.Value{s, s}, nil, core.Location{})
	require.NoError(t, err)
	bl.Output(m)
	compileAndCompare(t, chip, bl.Graph(), 40)
}

func TestBatchMatmulMatchesReference(t *testing.T) {
	f16 := func(s ...int) core.TensorType { return core.TensorType{DType: dtype.Float16, Shape: s} }
	cases := []struct {
		a, b  core.TensorType
		attrs core.Attrs
	}{
		{f16(3, 17, 33), f16(3, 33, 20), nil},
		{f16(2, 1, 9, 40), f16(3, 40, 18), nil},                          // batch dims broadcast
		{f16(4, 40, 9), f16(40, 18), core.Attrs{"transpose_a": true}},    // b shared by every batch
		{f16(2, 9, 40), f16(2, 18, 40), core.Attrs{"transpose_b": true}}, // attention-style q @ k^T
	}
	for _, chip := range presets(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s@%s%v", chip.Name, c.a, c.b, c.attrs), func(t *testing.T) {
				bl := core.NewBuilder("bmm")
				x := bl.Param("a", c.a)
				y := bl.Param("b", c.b)
				z, err := bl.Op("batch_matmul", []core.Value{x, y}, c.attrs, core.Location{})
				require.NoError(t, err)
				bl.Output(z)
				compileAndCompare(t, chip, bl.Graph(), 40)
			})
		}
	}
}
