package core

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// specialValues are the inputs where algebraic shortcuts usually go wrong.
func specialValues(dt dtype.DType, n int) []float64 {
	vals := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1, -1, 0.5, -2.5, 127, -128, 3e38, 65504}
	if !dt.IsFloat() {
		vals = []float64{0, 1, -1, 127, -128, 5, -7, 1 << 30, -(1 << 31)}
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = dtype.Round(dt, vals[i%len(vals)])
	}
	return out
}

// sameBits compares results bit for bit, -0.0 against 0.0 included; NaNs are equal.
func sameBits(t *testing.T, want, got []*Array) {
	t.Helper()
	require.Len(t, got, len(want))
	for k := range want {
		require.True(t, want[k].Type.Equal(got[k].Type), "output %d: %s, want %s", k, got[k].Type, want[k].Type)
		for i, w := range want[k].Data {
			g := got[k].Data[i]
			if math.IsNaN(w) && math.IsNaN(g) {
				continue
			}
			require.Equal(t, math.Float64bits(w), math.Float64bits(g), "output %d element %d: %v, want %v", k, i, g, w)
		}
	}
}

func interpretWithSpecials(t *testing.T, g *Graph) []*Array {
	t.Helper()
	var ins []*Array
	for k, p := range g.Params {
		a := NewArray(g.Type(p))
		vals := specialValues(a.Type.DType, len(a.Data)+5*k)
		copy(a.Data, vals[5*k:]) // each param pairs other specials with the others'
		ins = append(ins, a)
	}
	out, err := Interpret(g, ins)
	require.NoError(t, err)
	return out
}

type opt struct {
	name string
	run  func(*Graph) (*Graph, error)
}

var graphOpts = []opt{
	{"simplify", SimplifyAlgebra},
	{"cse", func(g *Graph) (*Graph, error) { return EliminateCommonSubexpressions(g), nil }},
	{"dce", func(g *Graph) (*Graph, error) { return EliminateDeadCode(g), nil }},
}

// Each rewrite case is a graph and the number of op nodes (params excluded) it must
// have after simplify, CSE and DCE; the values must not change by a bit.
func TestGraphOptimisationsAreExact(t *testing.T) {
	cases := []struct {
		name, text string
		ops        int
	}{
		{"mul-one", `graph g(%x: f16[13]) {
  %1 = full() {dtype="float16", shape=[], value=1.0} : f16[]
  %2 = mul(%x, %1) : f16[13]
  %3 = mul(%1, %2) : f16[13]
  return %3
}`, 0},
		{"mul-one of another dtype keeps the promotion", `graph g(%x: f16[13]) {
  %1 = full() {dtype="float32", shape=[], value=1.0} : f32[]
  %2 = mul(%x, %1) : f32[13]
  return %2
}`, 2},
		{"mul-one that broadcasts keeps the shape", `graph g(%x: f32[13]) {
  %1 = full() {dtype="float32", shape=[2,13], value=1.0} : f32[2,13]
  %2 = mul(%x, %1) : f32[2,13]
  return %2
}`, 2},
		{"add -0.0 is x, add +0.0 is not", `graph g(%x: f32[13]) {
  %1 = full() {dtype="float32", shape=[], value=-0.0} : f32[]
  %2 = full() {dtype="float32", shape=[], value=0.0} : f32[]
  %3 = add(%x, %1) : f32[13]
  %4 = add(%3, %2) : f32[13]
  return %4
}`, 2},
		{"integer add zero", `graph g(%x: i8[9]) {
  %1 = full() {dtype="int8", shape=[], value=0.0} : i8[]
  %2 = add(%1, %x) : i8[9]
  return %2
}`, 0},
		{"sub +0.0 is x, sub -0.0 is not", `graph g(%x: bf16[13]) {
  %1 = full() {dtype="bfloat16", shape=[], value=0.0} : bf16[]
  %2 = full() {dtype="bfloat16", shape=[], value=-0.0} : bf16[]
  %3 = sub(%x, %1) : bf16[13]
  %4 = sub(%3, %2) : bf16[13]
  %5 = sub(%1, %4) : bf16[13]
  return %5
}`, 4},
		{"div one", `graph g(%x: f32[13]) {
  %1 = full() {dtype="float32", shape=[], value=1.0} : f32[]
  %2 = div(%x, %1) : f32[13]
  %3 = div(%1, %2) : f32[13]
  return %3
}`, 2},
		{"neg neg wraps back", `graph g(%x: i8[9]) {
  %1 = neg(%x) : i8[9]
  %2 = neg(%1) : i8[9]
  %3 = neg(%2) : i8[9]
  %4 = neg(%3) : i8[9]
  return %4
}`, 0},
		{"idempotent", `graph g(%x: f32[13], %y: i8[9]) {
  %2 = abs(%x) : f32[13]
  %3 = abs(%2) : f32[13]
  %4 = relu(%3) : f32[13]
  %5 = relu(%4) : f32[13]
  %6 = floor(%5) : f32[13]
  %7 = floor(%6) : f32[13]
  %8 = abs(%y) : i8[9]
  %9 = abs(%8) : i8[9]
  return %7, %9
}`, 4},
		{"same operands", `graph g(%x: f32[13], %c: bool[13]) {
  %2 = maximum(%x, %x) : f32[13]
  %3 = minimum(%2, %2) : f32[13]
  %4 = where(%c, %3, %3) : f32[13]
  %5 = logical_and(%c, %c) : bool[13]
  %6 = logical_or(%5, %5) : bool[13]
  %7 = logical_not(%6) : bool[13]
  %8 = logical_not(%7) : bool[13]
  %9 = logical_and(%x, %x) : bool[13]
  return %4, %8, %9
}`, 1},
		{"identity views", `graph g(%x: f32[2,3]) {
  %1 = cast(%x) {dtype="float32"} : f32[2,3]
  %2 = reshape(%1) {shape=[2,3]} : f32[2,3]
  %3 = broadcast_to(%2) {shape=[2,3]} : f32[2,3]
  %4 = transpose(%3) {perm=[0,1]} : f32[2,3]
  %5 = slice(%4) {starts=[0,0], stops=[2,3], steps=[1,1]} : f32[2,3]
  %6 = concat(%5) {axis=0} : f32[2,3]
  %7 = slice(%6) {starts=[1,0], stops=[-1,3], steps=[-1,1]} : f32[2,3]
  return %7
}`, 1},
		{"casts through a wider dtype", `graph g(%x: f16[13], %b: bf16[13], %i: i32[9], %c: i8[9]) {
  %4 = cast(%x) {dtype="float32"} : f32[13]
  %5 = cast(%4) {dtype="float16"} : f16[13]
  %6 = cast(%b) {dtype="float32"} : f32[13]
  %7 = cast(%6) {dtype="int8"} : i8[13]
  %8 = cast(%x) {dtype="bfloat16"} : bf16[13]
  %9 = cast(%8) {dtype="float32"} : f32[13]
  %10 = cast(%i) {dtype="float32"} : f32[9]
  %11 = cast(%10) {dtype="int32"} : i32[9]
  %12 = cast(%c) {dtype="float16"} : f16[9]
  %13 = cast(%12) {dtype="bool"} : bool[9]
  return %5, %7, %9, %11, %13
}`, 6},
		{"view chains", `graph g(%x: f32[2,3,4]) {
  %1 = reshape(%x) {shape=[6,4]} : f32[6,4]
  %2 = reshape(%1) {shape=[4,6]} : f32[4,6]
  %3 = reshape(%2) {shape=[2,3,4]} : f32[2,3,4]
  %4 = transpose(%3) {perm=[2,0,1]} : f32[4,2,3]
  %5 = transpose(%4) {perm=[0,2,1]} : f32[4,3,2]
  %6 = transpose(%5) {perm=[]} : f32[2,3,4]
  %7 = transpose(%3) {perm=[1,0,2]} : f32[3,2,4]
  %8 = transpose(%7) {perm=[0,2,1]} : f32[3,4,2]
  return %6, %8
}`, 1},
		{"cse merges repeats, not params", `graph g(%x: f32[13], %y: f32[13]) {
  %2 = exp(%x) : f32[13]
  %3 = exp(%x) : f32[13]
  %4 = exp(%y) : f32[13]
  %5 = add(%2, %3) : f32[13]
  %6 = add(%3, %2) : f32[13]
  %7 = mul(%5, %6) : f32[13]
  return %7, %4
}`, 4},
		{"cse swaps the operands of commutative ops only", `graph g(%x: f32[13], %y: f32[13]) {
  %2 = mul(%x, %y) : f32[13]
  %3 = mul(%y, %x) : f32[13]
  %4 = maximum(%x, %y) : f32[13]
  %5 = maximum(%y, %x) : f32[13]
  %6 = sub(%x, %y) : f32[13]
  %7 = sub(%y, %x) : f32[13]
  %8 = less(%x, %y) : bool[13]
  %9 = less(%y, %x) : bool[13]
  return %2, %3, %4, %5, %6, %7, %8, %9
}`, 6},
		{"cse tells -0.0 from 0.0", `graph g(%x: f32[13]) {
  %1 = full() {dtype="float32", shape=[], value=0.0} : f32[]
  %2 = full() {dtype="float32", shape=[], value=-0.0} : f32[]
  %3 = mul(%x, %1) : f32[13]
  %4 = mul(%x, %2) : f32[13]
  return %3, %4
}`, 4},
		{"dce", `graph g(%x: f32[13], %unused: f32[13]) {
  %2 = exp(%x) : f32[13]
  %3 = log(%unused) : f32[13]
  %4 = add(%2, %3) : f32[13]
  return %2
}`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Parse(tc.text)
			require.NoError(t, err)
			want := interpretWithSpecials(t, g)
			for _, o := range graphOpts {
				g, err = o.run(g)
				require.NoError(t, err, o.name)
				require.NoError(t, Verify(g), "after %s", o.name)
				sameBits(t, want, interpretWithSpecials(t, g))
			}
			require.Equal(t, tc.ops, len(g.Nodes)-len(g.Params), "ops left:\n%s", Format(g))
		})
	}
}

// A node that replaces others keeps the location of the user's call it stands for.
func TestRewritesKeepLocations(t *testing.T) {
	b := NewBuilder("g")
	x := b.Param("x", TensorType{DType: dtype.Float32, Shape: Shape{2, 3, 4}})
	at := func(line int) Location { return Location{File: "model.py", Line: line} }
	t1, err := b.Op("transpose", []Value{x}, Attrs{"perm": []int64{1, 0, 2}}, at(1))
	require.NoError(t, err)
	t2, err := b.Op("transpose", []Value{t1}, Attrs{"perm": []int64{0, 2, 1}}, at(2))
	require.NoError(t, err)
	e1, err := b.Op("exp", []Value{t2}, nil, at(3))
	require.NoError(t, err)
	e2, err := b.Op("exp", []Value{t2}, nil, at(4))
	require.NoError(t, err)
	s, err := b.Op("add", []Value{e1, e2}, nil, at(5))
	require.NoError(t, err)
	b.Output(s)
	g, err := SimplifyAlgebra(b.Graph())
	require.NoError(t, err)
	g = EliminateDeadCode(EliminateCommonSubexpressions(g))
	var lines []int
	for _, n := range g.Nodes[1:] {
		lines = append(lines, n.Loc.Line)
	}
	require.Equal(t, []int{2, 3, 5}, lines, "the composed transpose is the outer one's; CSE keeps the first exp\n%s", Format(g))
}
