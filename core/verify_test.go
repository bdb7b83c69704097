package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// verifyBase is a valid graph the cases below break one rule at a time:
// %x, %w params; %2 = matmul(%x, %w); %3 = relu(%2); %4 = add(%3, %x).
func verifyBase(t *testing.T) *Graph {
	g, err := Parse(`graph v(%x: f32[2,2], %w: f32[2,2]) {
  %2 = matmul(%x, %w) : f32[2,2]
  %3 = relu(%2) : f32[2,2]
  %4 = add(%3, %x) : f32[2,2]
  return %4
}`)
	require.NoError(t, err)
	require.NoError(t, Verify(g))
	return g
}

func TestVerify(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(g *Graph)
		want   string // the whole message, so the node naming is checked too
	}{
		{"input defined later", func(g *Graph) { g.Nodes[3].Inputs[0] = 4 },
			"graph v: %3 = relu(%4) : f32[2,2]: input 0 refers to value 4, which is not defined before this node"},
		{"input refers to itself", func(g *Graph) { g.Nodes[3].Inputs[0] = 3 },
			"graph v: %3 = relu(%3) : f32[2,2]: input 0 refers to value 3, which is not defined before this node"},
		{"input out of range", func(g *Graph) { g.Nodes[3].Inputs[0] = -1 },
			"graph v: %3 = relu(%<bad value -1>) : f32[2,2]: input 0 refers to value -1, which is not defined before this node"},
		{"nil node", func(g *Graph) { g.Nodes[3] = nil }, "graph v: node 3 is nil"},
		{"param not listed", func(g *Graph) { g.Params = g.Params[:1] },
			"graph v: %w = param() : f32[2,2]: param node is not listed in the graph's parameters"},
		{"listed param is an op", func(g *Graph) { g.Params[1] = 3 },
			`graph v: %3 = relu(%2) : f32[2,2]: listed as parameter 1 but its op is "relu", not "param"`},
		{"listed param does not exist", func(g *Graph) { g.Params[1] = 9 },
			"graph v: parameter 1 refers to value 9, which does not exist"},
		{"param listed twice", func(g *Graph) { g.Params[1] = 0 },
			"graph v: %x = param() : f32[2,2]: listed twice among the parameters"},
		{"duplicate param name", func(g *Graph) { g.Nodes[1].Name = "x" },
			"graph v: %x = param() : f32[2,2]: parameter name is also used by node 0"},
		{"empty param name", func(g *Graph) { g.Nodes[1].Name = "" },
			`graph v: %"" = param() : f32[2,2]: parameter 1 has no name`},
		{"param with inputs", func(g *Graph) { g.Nodes[1].Inputs = []Value{0} },
			"graph v: %w = param(%x) : f32[2,2]: param node has inputs or attributes"},
		{"unknown op", func(g *Graph) { g.Nodes[3].Op = "frob" },
			`graph v: %3 = frob(%2) : f32[2,2]: op "frob" is not registered`},
		{"wrong arity", func(g *Graph) { g.Nodes[3].Inputs = []Value{2, 2} },
			"graph v: %3 = relu(%2, %2) : f32[2,2]: relu takes 1 inputs, node has 2"},
		{"unknown attribute", func(g *Graph) { g.Nodes[3].Attrs = Attrs{"alpha": 0.1} },
			"graph v: %3 = relu(%2) {alpha=0.1} : f32[2,2]: attribute alpha is not one relu declares"},
		{"attribute of the wrong type", func(g *Graph) { g.Nodes[2].Attrs["transpose_a"] = int64(1) },
			"graph v: %2 = matmul(%x, %w) {transpose_a=1, transpose_b=false} : f32[2,2]: attribute transpose_a has type int64, want bool"},
		{"attribute value of no text form", func(g *Graph) { g.Nodes[2].Attrs["transpose_a"] = 1 },
			"graph v: %2 = matmul(%x, %w) {transpose_a=<bad attr int>, transpose_b=false} : f32[2,2]: attribute transpose_a: attribute value of type int (want bool, int64, float64, string or []int64)"},
		{"wrong result type", func(g *Graph) { g.Nodes[3].Type = TensorType{DType: dtype.Float16, Shape: Shape{2, 2}} },
			"graph v: %3 = relu(%2) : f16[2,2]: node type is f16[2,2] but relu infers f32[2,2]"},
		{"wrong result shape", func(g *Graph) { g.Nodes[4].Type.Shape = Shape{4} },
			"graph v: %4 = add(%3, %x) : f32[4]: node type is f32[4] but add infers f32[2,2]"},
		{"op rejects its inputs", func(g *Graph) { g.Nodes[1].Type.Shape = Shape{3, 2} },
			"graph v: %2 = matmul(%x, %w) {transpose_a=false, transpose_b=false} : f32[2,2]: op rejects its inputs: matmul: inner dimensions do not match: a has shape [2,2] (k=2), b has shape [3,2] (k=3)"},
		{"invalid dtype", func(g *Graph) { g.Nodes[0].Type.DType = dtype.Invalid },
			"graph v: %x = param() : invalid[2,2]: invalid dtype invalid"},
		{"negative dimension", func(g *Graph) { g.Nodes[0].Type.Shape = Shape{-1, 2} },
			"graph v: %x = param() : f32[-1,2]: negative dimension in shape [-1,2]"},
		{"too many elements", func(g *Graph) { g.Nodes[0].Type.Shape = Shape{1 << 40, 1 << 40} },
			"graph v: %x = param() : f32[1099511627776,1099511627776]: shape [1099511627776,1099511627776] has too many elements"},
		{"no outputs", func(g *Graph) { g.Outputs = nil }, "graph v: graph has no outputs"},
		{"output out of range", func(g *Graph) { g.Outputs = append(g.Outputs, 5) },
			"graph v: output 1 refers to value 5, which does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := verifyBase(t)
			c.mutate(g)
			err := Verify(g)
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, InternalError, e.Kind)
			assert.Equal(t, c.want, e.Message)
		})
	}
}

func TestVerifyAccepts(t *testing.T) {
	t.Run("empty tensors with huge other dims", func(t *testing.T) {
		g := verifyBase(t)
		g.Nodes[0].Type.Shape = Shape{0, 1 << 62}
		g.Nodes[1].Type.Shape = Shape{1 << 62, 0}
		g.Nodes[2].Type.Shape = Shape{0, 0}
		g.Nodes[3].Type.Shape = Shape{0, 0}
		g.Nodes[4].Type.Shape = Shape{0, 0}
		g.Nodes[4].Inputs[1] = 3
		assert.NoError(t, Verify(g))
	})
	t.Run("params after ops, outputs repeated, partial attributes", func(t *testing.T) {
		b := NewBuilder("late")
		x := b.Param("x", f32(2, 2))
		m := mustOp(t, b, "matmul", nil, x, x)
		y := b.Param("y", f32(2, 2))
		b.Output(m)
		b.Output(m)
		b.Output(y)
		g := b.Graph()
		g.Nodes[m].Attrs = Attrs{"transpose_b": false}
		assert.NoError(t, Verify(g))
	})
	assert.EqualError(t, Verify(nil), "InternalError: verify: nil graph")
}
