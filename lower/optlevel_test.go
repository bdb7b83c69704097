package lower

import (
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

func opsOf(g *core.Graph) []string {
	var ops []string
	for _, n := range g.Nodes {
		if n.Op != core.OpParam {
			ops = append(ops, n.Op)
		}
	}
	return ops
}

// Constants fold into fulls (any size), varying ones stay computed, and a graph of
// constants only needs no GM read at all.
func TestFoldConstants(t *testing.T) {
	g, err := core.Parse(`graph g(%x: f32[64,64]) {
  %1 = full() {dtype="float32", shape=[], value=2.0} : f32[]
  %2 = full() {dtype="float32", shape=[64,1], value=3.0} : f32[64,1]
  %3 = mul(%1, %2) : f32[64,1]
  %4 = broadcast_to(%3) {shape=[64,64]} : f32[64,64]
  %5 = exp(%4) : f32[64,64]
  %6 = iota() {shape=[64,64], axis=1} : i32[64,64]
  %7 = cast(%6) {dtype="float32"} : f32[64,64]
  %8 = sum(%7) {axis=[1], keepdims=true} : f32[64,1]
  %9 = add(%x, %5) : f32[64,64]
  %10 = add(%9, %7) : f32[64,64]
  %11 = add(%10, %8) : f32[64,64]
  return %11
}`)
	require.NoError(t, err)
	folded, err := foldConstants(g)
	require.NoError(t, err)
	folded = core.EliminateDeadCode(folded)
	require.Equal(t, []string{"full", "iota", "cast", "full", "add", "add", "add"}, opsOf(folded), core.Format(folded))
	require.Equal(t, float64(float32(2016)), folded.Nodes[4].Attrs.Float("value", 0), "sum of 0..63:\n%s", core.Format(folded))
	require.Equal(t, float64(float32(403.4287934927351)), folded.Nodes[1].Attrs.Float("value", 0), "exp(6) rounded to f32")
	compileAndCompare(t, tinyChip(t), g, 0)
}

// A uniform result of a data-dependent error is not folded: the error is the run's.
func TestFoldConstantsLeavesErrorsToTheRun(t *testing.T) {
	g, err := core.Parse(`graph g(%x: f32[4]) {
  %1 = full() {dtype="int32", shape=[4], value=9.0} : i32[4]
  %2 = index_select(%x, %1) {axis=0} : f32[4]
  return %2
}`)
	require.NoError(t, err)
	folded, err := foldConstants(g)
	require.NoError(t, err)
	require.Equal(t, []string{"full", "index_select"}, opsOf(folded))
}

func TestOptLevelsChooseThePasses(t *testing.T) {
	bl := core.NewBuilder("g")
	x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{16, 64}})
	op := func(name string, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, nil, core.Location{})
		require.NoError(t, err)
		return v
	}
	a, b := op("exp", x), op("exp", x) // CSE makes them one
	op("log", x)                       // dead
	bl.Output(op("relu", op("add", a, b)))
	g := bl.Graph()
	ran := func(o Options) []string {
		o.Chip, o.Verify = tinyChip(t), true
		exe, err := Compile(g, o)
		require.NoError(t, err)
		return taskOps(exe)
	}
	require.Equal(t, []string{"exp", "exp", "log", "add", "relu"}, ran(Options{OptLevel: O0}))
	require.Equal(t, []string{"exp", "add", "relu"}, ran(Options{OptLevel: O1}))
	require.Equal(t, []string{"fused"}, ran(Options{}), "the default is O2: fusion (the shared exp too)")
	require.Equal(t, ran(Options{}), ran(Options{OptLevel: O3}))
	require.Equal(t, []string{"exp", "exp", "add", "relu"}, ran(Options{OptLevel: O1, Disabled: map[string]bool{"cse": true}}))
	for _, l := range []OptLevel{O0, O1, O2, O3} {
		compileAndCompareWith(t, g, Options{OptLevel: l})
	}
}

func TestOptionErrorsListTheChoices(t *testing.T) {
	g := matmulGraph(t, dtype.Float16, core.Shape{16, 16}, core.Shape{16, 16}, nil, false)
	compileErr := func(o Options) *core.Error {
		o.Chip = tinyChip(t)
		_, err := Compile(g, o)
		var ce *core.Error
		require.ErrorAs(t, err, &ce)
		return ce
	}
	e := compileErr(Options{Disabled: map[string]bool{"fusion": true}})
	require.Contains(t, e.Message, `no pass of that name`)
	require.Contains(t, e.Suggestions[0], "simplify, cse, dce, split-constants, sink-reshapes, fuse-projections, fuse-rows, fuse-elementwise")
	require.NotContains(t, e.Suggestions[0], "decompose")
	e = compileErr(Options{Disabled: map[string]bool{"tile": true}})
	require.Contains(t, e.Message, `cannot disable pass "tile"`)
	e = compileErr(Options{OptLevel: O3 + 1})
	require.Contains(t, e.Message, "OptLevel")
	_, err := OptLevelOf(4)
	require.ErrorContains(t, err, "level 4 does not exist")
	l, err := OptLevelOf(0)
	require.NoError(t, err)
	require.Equal(t, "O0", l.String())
	require.Equal(t, "O2", OptLevel(0).String())
}

// The memory plan is reported, and a pool smaller than it is refused with the size
// the program needs.
func TestMemoryPlanAndPool(t *testing.T) {
	bl := core.NewBuilder("g")
	typ := core.TensorType{DType: dtype.Float32, Shape: core.Shape{64, 64}} // 16 KiB
	v := bl.Param("x", typ)
	for range 4 {
		var err error
		v, err = bl.Op("exp", []core.Value{v}, nil, core.Location{})
		require.NoError(t, err)
	}
	bl.Output(v)
	g := bl.Graph()
	exe, err := Compile(g, Options{Chip: tinyChip(t), OptLevel: O0})
	require.NoError(t, err)
	m := exe.MemoryPlan()
	require.Equal(t, MemoryPlan{InputBytes: 16384, OutputBytes: 16384, WorkspaceBytes: 2 * 16384, WorkspaceNoReuseBytes: 3 * 16384, PeakBytes: 4 * 16384}, m)
	require.Contains(t, exe.Dump(), "peak 65536 bytes: inputs 16384, constants 0, outputs 16384, workspace 32768 (49152 without reuse)")

	_, err = Compile(g, Options{Chip: tinyChip(t), OptLevel: O0, MemoryPoolBytes: 65536})
	require.NoError(t, err, "a pool of exactly the peak is enough")
	_, err = Compile(g, Options{Chip: tinyChip(t), OptLevel: O0, MemoryPoolBytes: 65535})
	var ce *core.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, core.CompileError, ce.Kind)
	require.Contains(t, ce.Message, "needs 65536 bytes of device memory, but the memory pool holds 65535")
	require.Contains(t, ce.Suggestions[0], "at least 65536")
	fused, err := Compile(g, Options{Chip: tinyChip(t), MemoryPoolBytes: 32768})
	require.NoError(t, err, "fused, the chain needs no workspace")
	require.Equal(t, 0, fused.MemoryPlan().WorkspaceBytes)
}

// compileAndCompareWith compiles g with o (for the tiny preset unless o names a chip),
// runs it on random inputs and requires the reference interpreter's bytes.
func compileAndCompareWith(t *testing.T, g *core.Graph, o Options) {
	t.Helper()
	if o.Chip == nil {
		o.Chip = tinyChip(t)
	}
	o.Verify = true
	exe, err := Compile(g, o)
	require.NoError(t, err)
	ins, raw := randomInputs(g)
	want, err := core.Interpret(g, ins)
	require.NoError(t, err)
	got, _, err := exe.Run(raw)
	require.NoError(t, err)
	for i, w := range want {
		require.Equal(t, w.Bytes(), got[i], "output %d at %s", i, o.OptLevel)
	}
}

func TestPassTableLevels(t *testing.T) {
	require.NoError(t, checkPassTable(passTable))
	bad := []Pass{{Name: "a", Required: true}, {Name: "b", After: []string{"a"}}}
	require.ErrorContains(t, checkPassTable(bad), `"b": an optional pass names the lowest level`)
	bad[1].MinLevel = O1
	require.NoError(t, checkPassTable(bad))
	bad[0].MinLevel = O2
	require.ErrorContains(t, checkPassTable(bad), `"a"`)
}

// A varying constant that a matmul reads, or that is a result, is carried as data (no
// task computes it); one that a pointwise op reads stays computed, inside the fused
// kernel.
func TestVaryingConstantsBecomeDataWhereAKernelWouldComputeThem(t *testing.T) {
	g, err := core.Parse(`graph g(%x: f32[8,16]) {
  %1 = iota() {shape=[16,4], axis=0} : i32[16,4]
  %2 = cast(%1) {dtype="float32"} : f32[16,4]
  %3 = full() {dtype="float32", shape=[], value=0.5} : f32[]
  %4 = mul(%2, %3) : f32[16,4]
  %5 = matmul(%x, %4) {transpose_a=false, transpose_b=false} : f32[8,4]
  %6 = iota() {shape=[8,16], axis=1} : i32[8,16]
  %7 = cast(%6) {dtype="float32"} : f32[8,16]
  %8 = add(%x, %7) : f32[8,16]
  %9 = iota() {shape=[3,5], axis=1} : i32[3,5]
  return %5, %8, %9
}`)
	require.NoError(t, err)
	chip := tinyChip(t)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, OptLevel: O0})
	require.NoError(t, err)
	require.Len(t, taskOps(exe), 9)
	exe, err = Compile(g, Options{Chip: chip, Verify: true})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"matmul", "fused"}, taskOps(exe), "the matmul's operand and the iota result are data")
	m := exe.MemoryPlan()
	require.Equal(t, 2*512, m.ConstantBytes, "two constants, each in a 512-byte buffer")
	require.Equal(t, 512, m.InputBytes)
	compileAndCompare(t, chip, g, 16)
}
