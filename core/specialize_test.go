package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const attentionText = `graph attn(%q: f16[batch,seq,64], %k: f16[batch,seq,64], %bias: f16[seq]) {
  %3 = batch_matmul(%q, %k) {transpose_a=false, transpose_b=true} : f16[batch,seq,seq]
  %4 = add(%3, %bias) : f16[batch,seq,seq]
  %5 = softmax(%4) {axis=-1} : f16[batch,seq,seq]
  %6 = reshape(%5) {shape=[batch*seq,seq]} : f16[batch*seq,seq]
  return %6
}`

func TestBindSymbolsReadsSizesFromTheInputs(t *testing.T) {
	g := mustParse(t, attentionText)
	assert.Equal(t, []string{"batch", "seq"}, GraphSymbols(g))
	b, err := BindSymbols(g, []Shape{{4, 128, 64}, {4, 128, 64}, {128}})
	require.NoError(t, err)
	assert.Equal(t, "batch=4,seq=128", b.Key())

	_, err = BindSymbols(g, []Shape{{4, 128, 64}, {8, 128, 64}, {128}})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, ShapeError, e.Kind)
	assert.Equal(t, "batch is 4 from input 0 but 8 from input 1", e.Message)

	_, err = BindSymbols(g, []Shape{{4, 128, 32}, {4, 128, 64}, {128}})
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Message, "input 0 has shape [4,128,32], but the program was traced for shape [batch,seq,64]: axis 2 must be 64")

	_, err = BindSymbols(g, []Shape{{4, 128}, {4, 128, 64}, {128}})
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Message, "traced for 3-d inputs")
}

func TestBindSymbolsSolvesLinearDims(t *testing.T) {
	g := mustParse(t, `graph g(%x: f32[2*n+1], %y: f32[n,m]) {
  return %x, %y
}`)
	b, err := BindSymbols(g, []Shape{{7}, {3, 5}})
	require.NoError(t, err)
	assert.Equal(t, "m=5,n=3", b.Key())
	_, err = BindSymbols(g, []Shape{{9}, {3, 5}})
	assert.ErrorContains(t, err, "input 0: axis 0 is 9, but 2*n+1 is 7 with n=3")

	only := mustParse(t, `graph g(%x: f32[2*n+1]) {
  return %x
}`)
	b, err = BindSymbols(only, []Shape{{9}})
	require.NoError(t, err)
	assert.Equal(t, 4, b["n"])
	_, err = BindSymbols(only, []Shape{{8}})
	assert.ErrorContains(t, err, "input 0: axis 0 is 8, which 2*n+1 cannot be for any n")

	square := mustParse(t, `graph g(%x: f32[n*n]) {
  return %x
}`)
	_, err = BindSymbols(square, []Shape{{9}})
	assert.ErrorContains(t, err, "cannot tell n from the inputs")
}

func TestConstraintsNameTheSymbolAndBothValues(t *testing.T) {
	g := mustParse(t, `graph g(%x: f16[b,s], %w: f16[64,32]) {
  %2 = matmul(%x, %w) {transpose_a=false, transpose_b=false} : f16[b,32]
  %3 = topk_values(%2) {axis=0, k=3, largest=true} : f16[3,32]
  return %3
}`)
	g.Nodes[2].Loc = Location{File: "model.py", Line: 12}
	cons, err := GraphConstraints(g)
	require.NoError(t, err)
	require.Len(t, cons, 2)
	assert.Equal(t, "s == 64", cons[0].String())
	assert.Equal(t, "b >= 3", cons[1].String())
	assert.NoError(t, CheckConstraints(cons, Binding{"b": 5, "s": 64}))

	err = CheckConstraints(cons, Binding{"b": 5, "s": 48})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, ShapeError, e.Kind)
	assert.Equal(t, "s is 48, but matmul needs it equal to 64", e.Message)
	assert.Equal(t, 12, e.Loc.Line)
	assert.Contains(t, e.Causes[0], "the inner dimensions of [b,s] @ [64,32] are equal")

	err = CheckConstraints(cons, Binding{"b": 2, "s": 64})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "b is 2, but topk_values needs it at least 3", e.Message)

	two := Constraint{A: mustDim(t, "b*s"), B: mustDim(t, "t"), Rel: Equal, Op: "add"}
	e = two.Check(Binding{"b": 2, "s": 3, "t": 5})
	require.NotNil(t, e)
	assert.Equal(t, "b*s (with b=2, s=3) is 6 and t is 5, but add needs the first equal to the second", e.Message)
}

func TestSpecializeGivesTheConcreteGraph(t *testing.T) {
	g := mustParse(t, attentionText)
	sg, err := Specialize(g, Binding{"batch": 2, "seq": 5})
	require.NoError(t, err)
	assert.Equal(t, `graph attn(%q: f16[2,5,64], %k: f16[2,5,64], %bias: f16[5]) {
  %3 = batch_matmul(%q, %k) {transpose_a=false, transpose_b=true} : f16[2,5,5]
  %4 = add(%3, %bias) : f16[2,5,5]
  %5 = softmax(%4) {axis=-1} : f16[2,5,5]
  %6 = reshape(%5) {shape=[10,5]} : f16[10,5]
  return %6
}
`, Format(sg))
	assert.Empty(t, GraphSymbols(sg))
	_, err = DecomposeGraph(sg)
	assert.NoError(t, err)

	_, err = DecomposeGraph(g)
	assert.ErrorContains(t, err, "has symbolic dims ([batch seq]); specialise it")

	// A binding that breaks what an op needs is that op's own error, at its location.
	h := mustParse(t, `graph h(%x: f32[n]) {
  %1 = max(%x) {axis=[], keepdims=false} : f32[]
  return %1
}`)
	h.Nodes[1].Loc = Location{File: "m.py", Line: 4}
	_, err = Specialize(h, Binding{"n": 0})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Message, "max: cannot reduce axis 0 of shape [0]")
	assert.Equal(t, 4, e.Loc.Line)
	assert.Contains(t, e.Causes[len(e.Causes)-1], "this run binds n=0")
}

func TestSpecializedGraphsComputeWhatTheSymbolicGraphMeans(t *testing.T) {
	g := mustParse(t, `graph g(%x: f32[b,s]) {
  %1 = slice(%x) {starts=[0,1], steps=[1,2], stops=[b,s]} : f32[b,s//2]
  %2 = reshape(%1) {shape=[-1]} : f32[b*(s//2)]
  return %2
}`)
	sg, err := Specialize(g, Binding{"b": 2, "s": 5})
	require.NoError(t, err)
	x := &Array{Type: TensorType{DType: tF32, Shape: Shape{2, 5}}, Data: []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
	out, err := Interpret(sg, []*Array{x})
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 3, 6, 8}, out[0].Data)
}
