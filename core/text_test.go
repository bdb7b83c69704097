package core

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// probeOp carries one attribute of every value type, so that the text form's attribute
// printing and parsing can be tested; it exists only in this test binary.
func init() {
	Register(&OpDef{
		Name: "text_probe", NoGrad: "a test op",
		Arity: 1,
		Attrs: []AttrSpec{{"alpha", 0.5}, {"axes", []int64{}}, {"mode", "none"}, {"n", int64(0)}},
		Doc:   "identity with attributes of every type (tests only)",
		Infer: func(in []TensorType, _ Attrs) (TensorType, *Error) { return in[0], nil },
		Eval:  func(in []*Array, _ Attrs, out *Array) { copy(out.Data, in[0].Data) },
	})
}

func mustOp(t testing.TB, b *Builder, name string, attrs Attrs, in ...Value) Value {
	t.Helper()
	v, err := b.Op(name, in, attrs, Location{})
	require.NoError(t, err)
	return v
}

func f16(dims ...int) TensorType { return TensorType{DType: dtype.Float16, Shape: Shape(dims)} }
func f32(dims ...int) TensorType { return TensorType{DType: dtype.Float32, Shape: Shape(dims)} }

const matmulReluText = `graph main(%x: f16[300,520], %w: f16[520,130]) {
  %2 = matmul(%x, %w) {transpose_a=false, transpose_b=false} : f16[300,130]
  %3 = relu(%2) : f16[300,130]
  return %3
}
`

func TestFormatBuiltGraph(t *testing.T) {
	b := NewBuilder("main")
	x, w := b.Param("x", f16(300, 520)), b.Param("w", f16(520, 130))
	b.Output(mustOp(t, b, "relu", nil, mustOp(t, b, "matmul", nil, x, w)))
	g := b.Graph()
	require.Equal(t, matmulReluText, Format(g))

	parsed, err := Parse(Format(g))
	require.NoError(t, err)
	assert.Equal(t, Format(g), Format(parsed))
	assert.Equal(t, len(g.Nodes), len(parsed.Nodes))
	assert.Equal(t, g.Params, parsed.Params)
	assert.Equal(t, g.Outputs, parsed.Outputs)
}

// The text is the compile-cache key: what is not structure must not change it.
func TestFormatIsAStructuralKey(t *testing.T) {
	build := func(loc Location, attrs Attrs, paramsFirst bool) string {
		b := NewBuilder("k")
		var x, y, r Value
		if paramsFirst {
			x, y = b.Param("x", f32(2, 2)), b.Param("y", f32(2, 2))
			r = mustOpAt(t, b, "matmul", attrs, loc, x, x)
		} else {
			x = b.Param("x", f32(2, 2))
			r = mustOpAt(t, b, "matmul", attrs, loc, x, x)
			y = b.Param("y", f32(2, 2))
		}
		b.Output(mustOpAt(t, b, "add", nil, loc, r, y))
		return Format(b.Graph())
	}
	want := build(Location{}, nil, true)
	assert.Equal(t, want, build(Location{File: "model.py", Line: 12, Func: "f"}, nil, true), "locations are not part of the text")
	assert.Equal(t, want, build(Location{}, Attrs{"transpose_a": false}, true), "explicit defaults print like implicit ones")
	assert.Equal(t, want, build(Location{}, nil, false), "where param nodes sit does not matter")
	assert.NotEqual(t, want, build(Location{}, Attrs{"transpose_b": true}, true))

	// Partial attributes on a hand-made node print completed as well.
	g, err := Parse(want)
	require.NoError(t, err)
	g.Nodes[2].Attrs = Attrs{}
	assert.Equal(t, want, Format(g))

	// The order of the signature is part of the structure.
	g.Params[0], g.Params[1] = g.Params[1], g.Params[0]
	assert.NotEqual(t, want, Format(g))
}

func mustOpAt(t testing.TB, b *Builder, name string, attrs Attrs, loc Location, in ...Value) Value {
	t.Helper()
	v, err := b.Op(name, in, attrs, loc)
	require.NoError(t, err)
	return v
}

func TestFormatParamsAfterOps(t *testing.T) {
	b := NewBuilder("late")
	x := b.Param("x", f32(3))
	r := mustOp(t, b, "relu", nil, x)
	y := b.Param("y", f32(3))
	b.Output(mustOp(t, b, "add", nil, r, y))
	want := "graph late(%x: f32[3], %y: f32[3]) {\n  %2 = relu(%x) : f32[3]\n  %3 = add(%2, %y) : f32[3]\n  return %3\n}\n"
	assert.Equal(t, want, Format(b.Graph()))
	g, err := Parse(want)
	require.NoError(t, err)
	assert.Equal(t, want, Format(g))
}

func TestFormatAttributeValues(t *testing.T) {
	b := NewBuilder("attrs")
	x := b.Param("x", f32(1))
	v := mustOp(t, b, "text_probe", Attrs{"alpha": math.Inf(-1), "axes": []int64{-1, 0, 3}, "mode": "a \"b\"\n", "n": int64(-7)}, x)
	w := mustOp(t, b, "text_probe", Attrs{"alpha": math.Copysign(0, -1)}, v)
	u := mustOp(t, b, "text_probe", Attrs{"alpha": 1e21}, w)
	b.Output(mustOp(t, b, "text_probe", Attrs{"alpha": math.NaN()}, u))
	text := Format(b.Graph())
	assert.Equal(t, `graph attrs(%x: f32[1]) {
  %1 = text_probe(%x) {alpha=-Inf, axes=[-1,0,3], mode="a \"b\"\n", n=-7} : f32[1]
  %2 = text_probe(%1) {alpha=-0.0, axes=[], mode="none", n=0} : f32[1]
  %3 = text_probe(%2) {alpha=1e+21, axes=[], mode="none", n=0} : f32[1]
  %4 = text_probe(%3) {alpha=NaN, axes=[], mode="none", n=0} : f32[1]
  return %4
}
`, text)
	g, err := Parse(text)
	require.NoError(t, err)
	assert.Equal(t, text, Format(g))
	assert.True(t, math.Signbit(g.Nodes[2].Attrs["alpha"].(float64)), "-0.0 keeps its sign")
	assert.Equal(t, []int64{-1, 0, 3}, g.Nodes[1].Attrs["axes"])
	assert.Equal(t, "a \"b\"\n", g.Nodes[1].Attrs["mode"])

	// A float attribute must be written as a float: 2 is an int64 and is rejected.
	_, err = Parse("graph g(%x: f32[1]) { %1 = text_probe(%x) {alpha=2} : f32[1] return %1 }")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "attribute alpha has type int64, want float64")
}

// Format must describe whatever it is given, since the verifier's messages use it.
func TestFormatMalformedGraphsDoesNotPanic(t *testing.T) {
	ok := func() *Graph {
		g, err := Parse(matmulReluText)
		require.NoError(t, err)
		return g
	}
	assert.Equal(t, "<nil graph>\n", Format(nil))
	for name, mutate := range map[string]func(g *Graph){
		"nil node":        func(g *Graph) { g.Nodes[2] = nil },
		"bad input":       func(g *Graph) { g.Nodes[3].Inputs[0] = 99 },
		"bad output":      func(g *Graph) { g.Outputs[0] = -1 },
		"bad param":       func(g *Graph) { g.Params[0] = 42 },
		"param is an op":  func(g *Graph) { g.Params[0] = 2 },
		"unlisted param":  func(g *Graph) { g.Params = g.Params[:1] },
		"bad attr type":   func(g *Graph) { g.Nodes[2].Attrs["transpose_a"] = 3 },
		"unknown attr":    func(g *Graph) { g.Nodes[2].Attrs["what"] = struct{}{} },
		"no outputs":      func(g *Graph) { g.Outputs = nil },
		"invalid dtype":   func(g *Graph) { g.Nodes[3].Type.DType = 0 },
		"empty graph":     func(g *Graph) { *g = Graph{} },
		"duplicate param": func(g *Graph) { g.Params[1] = g.Params[0] },
		"unknown op":      func(g *Graph) { g.Nodes[3].Op = "frob" },
	} {
		t.Run(name, func(t *testing.T) {
			g := ok()
			mutate(g)
			assert.NotPanics(t, func() { _ = Format(g) })
			if _, err := Parse(Format(g)); err == nil {
				assert.NoError(t, Verify(g), "a malformed graph must not print as a valid one")
			}
		})
	}
}

func TestParseErrorsAreValueErrors(t *testing.T) {
	_, err := Parse("graph g(%x: f32[2], %y: f32[3]) {\n  %2 = add(%x, %y) : f32[3]\n  return %2\n}")
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, ValueError, e.Kind)
	assert.Equal(t, "2:8: add: shapes [2] and [3] cannot be broadcast together", e.Message)
	assert.NotEmpty(t, e.Causes, "causes and suggestions of the inference error are kept")
	assert.NotEmpty(t, e.Suggestions)
}

// FuzzParse: Parse never panics, fails only with ValueErrors, and what it accepts
// verifies and round-trips through Format exactly.
func FuzzParse(f *testing.F) {
	for _, c := range readGolden(f) {
		f.Add(c.input)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != ValueError {
				t.Fatalf("Parse error is not a ValueError: %#v", err)
			}
			return
		}
		if err := Verify(g); err != nil {
			t.Fatalf("parsed graph does not verify: %v\n%s", err, src)
		}
		text := Format(g)
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("Format output does not parse: %v\n%s", err, text)
		}
		if got := Format(again); got != text {
			t.Fatalf("round trip changed the text:\n%s\n---\n%s", text, got)
		}
	})
}
