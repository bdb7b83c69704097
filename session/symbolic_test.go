package session

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
)

func symType(t *testing.T, text string) core.TensorType {
	t.Helper()
	typ, err := core.ParseTensorType(text)
	require.NoError(t, err)
	return typ
}

func tracedInput(t *testing.T, text string) *Tensor {
	t.Helper()
	p, err := NewPlaceholder(symType(t, text))
	require.NoError(t, err)
	return p
}

// relu(x @ w + b) over x of shape [batch, 4]: traced once, specialised per batch size.
func TestSymbolicExecutorSpecialisesPerBinding(t *testing.T) {
	cc := &countingCompiler{Compiler: Reference()}
	s := New(cc)
	x := tracedInput(t, "f32[batch,4]")
	w := tensorOf(t, []int{4, 2}, 1, 0, 0, 1, 1, 0, 0, 1)
	b := tensorOf(t, []int{2}, 10, 20)
	loc := core.Location{File: "model.py", Line: 3}
	mm, err := Apply("matmul", []*Tensor{x, w}, nil, loc)
	require.NoError(t, err)
	assert.Equal(t, "f32[batch,2]", mm.Type().String())
	y, err := Apply("add", []*Tensor{mm, b}, nil, loc)
	require.NoError(t, err)
	r, err := Apply("relu", []*Tensor{y}, nil, loc)
	require.NoError(t, err)
	assert.ErrorContains(t, s.Realize(r), "symbolic shape [batch,2], so it has no data")

	ex, err := s.NewExecutor("layer", []*Tensor{x}, []*Tensor{r})
	require.NoError(t, err)
	assert.True(t, ex.IsSymbolic())
	assert.Equal(t, int64(0), cc.n.Load(), "nothing is compiled before a run")
	assert.Contains(t, ex.GraphText(), "%in0: f32[batch,4]")
	assert.Contains(t, ex.Dump(), "specialised for each binding")

	for _, n := range []int{1, 3, 1, 3} {
		in := tensorOf(t, []int{n, 4}, seq(4*n, 1)...)
		outs, err := ex.Run([]*Tensor{in})
		require.NoError(t, err)
		require.Len(t, outs, 1)
		assert.Equal(t, f32Type(n, 2).String(), outs[0].Type().String())
		got := values(t, s, outs[0])
		vals := seq(4*n, 1)
		for i := 0; i < n; i++ {
			assert.Equal(t, max(vals[i*4]+vals[i*4+2]+10, 0), got[i*2])
			assert.Equal(t, max(vals[i*4+1]+vals[i*4+3]+20, 0), got[i*2+1])
		}
	}
	assert.Equal(t, 2, ex.NumCompiled(), "one program per binding")
	assert.Equal(t, int64(2), cc.n.Load())
	assert.Contains(t, ex.Dump(), "specialised for batch=3")

	_, err = ex.Run([]*Tensor{tensorOf(t, []int{2, 5}, seq(10, 1)...)})
	ce := coreErr(t, err)
	assert.Equal(t, core.ShapeError, ce.Kind)
	assert.Contains(t, ce.Message, "axis 1 must be 4")
}

func TestSymbolicExecutorChecksBindings(t *testing.T) {
	s := New(Reference())
	a := tracedInput(t, "f32[batch,16]")
	b := tracedInput(t, "f32[batch,k]")
	w := tensorOf(t, []int{8, 3}, seq(24, 1)...)
	loc := core.Location{File: "model.py", Line: 9}
	sum, err := Apply("add", []*Tensor{a, a}, nil, loc)
	require.NoError(t, err)
	mm, err := Apply("matmul", []*Tensor{b, w}, nil, loc)
	require.NoError(t, err)
	ex, err := s.NewExecutor("two", []*Tensor{a, b}, []*Tensor{sum, mm})
	require.NoError(t, err)
	require.Len(t, ex.Constraints(), 1)
	assert.Equal(t, "k == 8", ex.Constraints()[0].String())

	_, err = ex.Run([]*Tensor{tensorOf(t, []int{4, 16}, seq(64, 1)...), tensorOf(t, []int{8, 8}, seq(64, 1)...)})
	ce := coreErr(t, err)
	assert.Equal(t, "batch is 4 from input 0 but 8 from input 1", ce.Message)

	_, err = ex.Run([]*Tensor{tensorOf(t, []int{2, 16}, seq(32, 1)...), tensorOf(t, []int{2, 6}, seq(12, 1)...)})
	ce = coreErr(t, err)
	assert.Equal(t, "k is 6, but matmul needs it equal to 8", ce.Message)
	assert.Equal(t, 9, ce.Loc.Line)

	outs, err := ex.Run([]*Tensor{tensorOf(t, []int{2, 16}, seq(32, 1)...), tensorOf(t, []int{2, 8}, seq(16, 1)...)})
	require.NoError(t, err)
	assert.Equal(t, "f32[2,16]", outs[0].Type().String())
	assert.Equal(t, "f32[2,3]", outs[1].Type().String())
}

func TestSymbolicExecutorRejectsUnbindableSymbols(t *testing.T) {
	s := New(Reference())
	x := tracedInput(t, "f32[n]")
	d, err := core.ParseDims("m")
	require.NoError(t, err)
	z, err := Apply("full", nil, core.Attrs{"shape": d}, core.Location{})
	require.NoError(t, err)
	y, err := Apply("add", []*Tensor{x, x}, nil, core.Location{})
	require.NoError(t, err)
	_, err = s.NewExecutor("f", []*Tensor{x}, []*Tensor{y, z})
	assert.ErrorContains(t, err, "symbol m appears in the traced program but in no input's shape")
}

// Several threads running one symbolic executor on a few sizes compile each size once.
func TestSymbolicExecutorIsSafeForConcurrentRuns(t *testing.T) {
	cc := &countingCompiler{Compiler: Reference()}
	s := New(cc)
	x := tracedInput(t, "f32[n]")
	y, err := Apply("mul", []*Tensor{x, x}, nil, core.Location{})
	require.NoError(t, err)
	ex, err := s.NewExecutor("sq", []*Tensor{x}, []*Tensor{y})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			n := 1 + g%3
			outs, err := ex.Run([]*Tensor{tensorOf(t, []int{n}, seq(n, 1)...)})
			if assert.NoError(t, err) {
				assert.Equal(t, n, outs[0].Type().Shape[0])
			}
		}(g)
	}
	wg.Wait()
	assert.Equal(t, 3, ex.NumCompiled())
	assert.Equal(t, int64(3), cc.n.Load())
}

func TestLayoutsOnSessionTensors(t *testing.T) {
	s := New(Reference())
	x := tensorOf(t, []int{1, 2, 2, 2}, seq(8, 1)...)
	tagged, err := s.WithLayout(x, core.Layout{Kind: core.NCHW})
	require.NoError(t, err)
	assert.Equal(t, "f32[1,2,2,2]@NCHW", tagged.Type().String())
	_, err = s.WithLayout(tensorOf(t, []int{2}, 1, 2), core.Layout{Kind: core.NHWC})
	assert.ErrorContains(t, err, "layout NHWC needs a 4-D shape")

	y, err := Apply("layout_transform", []*Tensor{tagged}, core.Attrs{"layout": "NHWC"}, core.Location{})
	require.NoError(t, err)
	assert.Equal(t, "f32[1,2,2,2]@NHWC", y.Type().String())
	vals := seq(8, 1) // x[0, c, h, w] = vals[c*4 + h*2 + w] goes to y[0, h, w, c]
	assert.Equal(t, []float32{vals[0], vals[4], vals[1], vals[5], vals[2], vals[6], vals[3], vals[7]}, values(t, s, y))

	_, err = Apply("add", []*Tensor{tagged, y}, nil, core.Location{})
	assert.ErrorContains(t, err, "operand 1 has layout NHWC but operand 0 has layout NCHW")

	// An executor traced for an NCHW input takes NCHW or untagged data, not NHWC.
	in := tracedInput(t, "f32[1,2,2,2]@NCHW")
	r, err := Apply("relu", []*Tensor{in}, nil, core.Location{})
	require.NoError(t, err)
	ex, err := s.NewExecutor("f", []*Tensor{in}, []*Tensor{r})
	require.NoError(t, err)
	outs, err := ex.Run([]*Tensor{x})
	require.NoError(t, err)
	assert.Equal(t, "f32[1,2,2,2]@NCHW", outs[0].Type().String())
	_, err = ex.Run([]*Tensor{y})
	assert.ErrorContains(t, err, "input 0 has layout NHWC, the executor was traced for NCHW")
}
