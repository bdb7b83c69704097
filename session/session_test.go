package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

func f32Type(shape ...int) core.TensorType {
	return core.TensorType{DType: dtype.Float32, Shape: core.Shape(shape)}
}

// tensorOf builds a concrete f32 tensor from values in row-major order.
func tensorOf(t *testing.T, shape []int, vals ...float32) *Tensor {
	t.Helper()
	x, err := FromHost(dtype.Float32, shape, nil, unsafe.Pointer(&vals[0]))
	require.NoError(t, err)
	return x
}

func values(t *testing.T, s *Session, x *Tensor) []float32 {
	t.Helper()
	out := make([]float32, x.Type().Shape.NumElements())
	if len(out) == 0 {
		require.NoError(t, s.Realize(x))
		return out
	}
	require.NoError(t, s.CopyOut(x, unsafe.Pointer(&out[0]), nil))
	return out
}

func seq(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)*scale - 3
	}
	return v
}

func coreErr(t *testing.T, err error) *core.Error {
	t.Helper()
	var ce *core.Error
	require.True(t, errors.As(err, &ce), "want *core.Error, got %T: %v", err, err)
	return ce
}

// countingCompiler wraps a compiler and counts compilations.
type countingCompiler struct {
	Compiler
	n atomic.Int64
}

func (c *countingCompiler) Compile(g *core.Graph, device string, cfg Config) (Program, error) {
	c.n.Add(1)
	return c.Compiler.Compile(g, device, cfg)
}

func TestApplyInfersTypeAndKeepsPending(t *testing.T) {
	a := tensorOf(t, []int{2, 3}, seq(6, 1)...)
	b := tensorOf(t, []int{3}, 1, 2, 3)
	c, err := Apply("add", []*Tensor{a, b}, nil, core.Location{})
	require.NoError(t, err)
	assert.True(t, c.IsPending())
	assert.Equal(t, "f32[2,3]", c.Type().String())
	assert.Nil(t, c.Data())

	m, err := Apply("matmul", []*Tensor{a, a}, core.Attrs{"transpose_b": true}, core.Location{})
	require.NoError(t, err)
	assert.Equal(t, "f32[2,2]", m.Type().String())
}

func TestApplyShapeErrorCarriesLocation(t *testing.T) {
	a := tensorOf(t, []int{17, 33}, seq(17*33, 1)...)
	b := tensorOf(t, []int{34, 65}, seq(34*65, 1)...)
	loc := core.Location{File: "user.py", Line: 42, Func: "model"}
	_, err := Apply("matmul", []*Tensor{a, b}, nil, loc)
	ce := coreErr(t, err)
	assert.Equal(t, core.ShapeError, ce.Kind)
	assert.Equal(t, loc, ce.Loc)
	assert.Contains(t, ce.Message, "[17,33]")
	assert.Contains(t, ce.Message, "[34,65]")
}

func TestApplyRejectsBadCalls(t *testing.T) {
	a := tensorOf(t, []int{2}, 1, 2)
	_, err := Apply("no_such_op", []*Tensor{a}, nil, core.Location{Line: 3})
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind)
	_, err = Apply("add", []*Tensor{a, nil}, nil, core.Location{})
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind)
	_, err = Apply("matmul", []*Tensor{a, a}, core.Attrs{"transpose_b": int64(1)}, core.Location{})
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind)
}

func TestRealizeComputesAndDropsInputs(t *testing.T) {
	s := New(Reference())
	a := tensorOf(t, []int{2, 2}, 1, -2, 3, -4)
	b := tensorOf(t, []int{2, 2}, 10, 20, 30, 40)
	sum, err := Apply("add", []*Tensor{a, b}, nil, core.Location{})
	require.NoError(t, err)
	r, err := Apply("relu", []*Tensor{sum}, nil, core.Location{})
	require.NoError(t, err)
	p, err := Apply("mul", []*Tensor{r, a}, nil, core.Location{})
	require.NoError(t, err)
	assert.Equal(t, []float32{11, -36, 99, -144}, values(t, s, p))
	assert.False(t, p.IsPending())
	_, _, o := p.state()
	assert.Nil(t, o, "a realised tensor drops its recipe and inputs")
	assert.True(t, sum.IsPending(), "intermediates stay lazy")
	assert.Equal(t, []float32{11, 18, 33, 36}, values(t, s, sum))
}

func TestMatmulTransposeB(t *testing.T) {
	s := New(Reference())
	a := tensorOf(t, []int{2, 3}, 1, 2, 3, 4, 5, 6)
	b := tensorOf(t, []int{2, 3}, 1, 0, 1, 0, 1, 0)
	m, err := Apply("matmul", []*Tensor{a, b}, core.Attrs{"transpose_b": true}, core.Location{})
	require.NoError(t, err)
	assert.Equal(t, []float32{4, 2, 10, 5}, values(t, s, m))
}

func TestCompileCacheKeyedByStructure(t *testing.T) {
	cc := &countingCompiler{Compiler: Reference()}
	s := New(cc)
	build := func(x, y float32) *Tensor {
		a := tensorOf(t, []int{2}, x, y)
		b := tensorOf(t, []int{2}, y, x)
		c, err := Apply("add", []*Tensor{a, b}, nil, core.Location{Line: int(x)})
		require.NoError(t, err)
		return c
	}
	assert.Equal(t, []float32{3, 3}, values(t, s, build(1, 2)))
	assert.Equal(t, []float32{11, 11}, values(t, s, build(5, 6)))
	assert.EqualValues(t, 1, cc.n.Load(), "same structure, different data and locations: one compile")
	info := s.CacheInfo()
	assert.Equal(t, 1, info.Compiles)
	assert.Equal(t, 1, info.Hits)
	assert.Equal(t, 1, info.Entries)

	require.NoError(t, s.SetDevice("tiny"))
	assert.Equal(t, []float32{3, 3}, values(t, s, build(1, 2)))
	assert.EqualValues(t, 2, cc.n.Load(), "another device compiles again")

	a := tensorOf(t, []int{3}, 1, 2, 3)
	c, err := Apply("mul", []*Tensor{a, a}, nil, core.Location{})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 4, 9}, values(t, s, c))
	assert.EqualValues(t, 3, cc.n.Load(), "another structure compiles again")
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newCompileCache(2)
	mk := func() (Program, error) { return &referenceProgram{}, nil }
	for _, k := range []string{"a", "b", "a", "c", "b"} {
		_, err := c.get(k, mk)
		require.NoError(t, err)
	}
	info := c.info()
	assert.Equal(t, 2, info.Entries)
	assert.Equal(t, 4, info.Compiles) // a, b, c, then b again after eviction
	assert.Equal(t, 1, info.Hits)
}

type failingCompiler struct {
	referenceCompiler
	panics bool
	n      atomic.Int64
}

func (f *failingCompiler) Compile(*core.Graph, string, Config) (Program, error) {
	f.n.Add(1)
	if f.panics {
		panic("boom")
	}
	return nil, core.Errorf(core.CompileError, "cannot tile this")
}

func TestCompileErrorsAreReportedAndNotCached(t *testing.T) {
	for _, panics := range []bool{false, true} {
		fc := &failingCompiler{panics: panics}
		s := New(fc)
		a := tensorOf(t, []int{2}, 1, 2)
		loc := core.Location{File: "m.py", Line: 7}
		c, err := Apply("add", []*Tensor{a, a}, nil, loc)
		require.NoError(t, err)
		ce := coreErr(t, s.Realize(c))
		if panics {
			assert.Equal(t, core.InternalError, ce.Kind)
			assert.Contains(t, ce.Message, "boom")
		} else {
			assert.Equal(t, core.CompileError, ce.Kind)
		}
		assert.Equal(t, loc, ce.Loc)
		assert.True(t, c.IsPending())
		require.Error(t, s.Realize(c))
		assert.EqualValues(t, 2, fc.n.Load(), "failures are retried, not cached")
		assert.Equal(t, 0, s.CacheInfo().Entries)
	}
}

func TestRealizePlaceholderIsAnError(t *testing.T) {
	s := New(Reference())
	p, err := NewPlaceholder(f32Type(2))
	require.NoError(t, err)
	assert.Equal(t, core.ValueError, coreErr(t, s.Realize(p)).Kind)
	c, err := Apply("relu", []*Tensor{p}, nil, core.Location{})
	require.NoError(t, err)
	ce := coreErr(t, s.Realize(c))
	assert.Equal(t, core.ValueError, ce.Kind)
	assert.Contains(t, ce.Message, "p.compile")
}

func TestConcurrentRealize(t *testing.T) {
	cc := &countingCompiler{Compiler: Reference()}
	s := New(cc)
	a := tensorOf(t, []int{4, 4}, seq(16, 0.5)...)
	shared, err := Apply("mul", []*Tensor{a, a}, nil, core.Location{})
	require.NoError(t, err)
	top, err := Apply("add", []*Tensor{shared, a}, nil, core.Location{})
	require.NoError(t, err)
	want := make([]float32, 16)
	for i, v := range seq(16, 0.5) {
		want[i] = v*v + v
	}

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			// Everyone realises the same tensor, and each also its own tensor that
			// shares the pending input with the others.
			mine, err := Apply("relu", []*Tensor{shared}, nil, core.Location{Line: g})
			if err != nil {
				errs <- err
				return
			}
			for _, x := range []*Tensor{top, mine, shared} {
				out := make([]float32, 16)
				if err := s.CopyOut(x, unsafe.Pointer(&out[0]), nil); err != nil {
					errs <- err
					return
				}
				if x == top {
					for i := range out {
						if out[i] != want[i] {
							errs <- fmt.Errorf("goroutine %d: top[%d] = %v, want %v", g, i, out[i], want[i])
							return
						}
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// top, shared, relu(mul(a,a)) and, once shared is concrete, relu(param).
	assert.LessOrEqual(t, cc.n.Load(), int64(4), "each structure compiled once")
}

func TestExecutor(t *testing.T) {
	cc := &countingCompiler{Compiler: Reference()}
	s := New(cc)
	x, err := NewPlaceholder(f32Type(2, 2))
	require.NoError(t, err)
	w := tensorOf(t, []int{2, 2}, 1, 2, 3, 4) // captured constant
	xw, err := Apply("matmul", []*Tensor{x, w}, nil, core.Location{})
	require.NoError(t, err)
	y, err := Apply("relu", []*Tensor{xw}, nil, core.Location{})
	require.NoError(t, err)
	ex, err := s.NewExecutor("f", []*Tensor{x}, []*Tensor{y, x, w, y})
	require.NoError(t, err)
	assert.Equal(t, 4, ex.NumOutputs())
	assert.EqualValues(t, 1, cc.n.Load())
	assert.NotEmpty(t, ex.Dump())

	for _, in := range [][]float32{{1, 0, 0, 1}, {-1, 0, 0, 2}} {
		xt := tensorOf(t, []int{2, 2}, in...)
		outs, err := ex.Run([]*Tensor{xt})
		require.NoError(t, err)
		require.Len(t, outs, 4)
		want := make([]float32, 4)
		wv := []float32{1, 2, 3, 4}
		for i := 0; i < 2; i++ {
			for j := 0; j < 2; j++ {
				v := in[2*i]*wv[j] + in[2*i+1]*wv[2+j]
				want[2*i+j] = max(v, 0)
			}
		}
		assert.Equal(t, want, values(t, s, outs[0]))
		assert.Equal(t, in, values(t, s, outs[1]))
		assert.Equal(t, wv, values(t, s, outs[2]))
		assert.Equal(t, want, values(t, s, outs[3]))
	}
	assert.EqualValues(t, 1, cc.n.Load(), "an executor compiles once")
	_, ok := ex.LastStats()
	assert.True(t, ok)

	// A pending input is realised first.
	one := tensorOf(t, []int{2, 2}, 1, 0, 0, 1)
	twice, err := Apply("add", []*Tensor{one, one}, nil, core.Location{})
	require.NoError(t, err)
	outs, err := ex.Run([]*Tensor{twice})
	require.NoError(t, err)
	assert.Equal(t, []float32{2, 4, 6, 8}, values(t, s, outs[0]))

	_, err = ex.Run([]*Tensor{tensorOf(t, []int{4}, 1, 2, 3, 4)})
	assert.Equal(t, core.ShapeError, coreErr(t, err).Kind)
	i32, err := Zeros(core.TensorType{DType: dtype.Int32, Shape: core.Shape{2, 2}})
	require.NoError(t, err)
	_, err = ex.Run([]*Tensor{i32})
	assert.Equal(t, core.DTypeError, coreErr(t, err).Kind)
	_, err = ex.Run(nil)
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind)
}

func TestExecutorRejectsBadTraces(t *testing.T) {
	s := New(Reference())
	x, _ := NewPlaceholder(f32Type(2))
	other, _ := NewPlaceholder(f32Type(2))
	c := tensorOf(t, []int{2}, 1, 2)
	y, err := Apply("add", []*Tensor{x, other}, nil, core.Location{})
	require.NoError(t, err)
	_, err = s.NewExecutor("f", []*Tensor{x}, []*Tensor{y})
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind, "a placeholder that is not an input")
	_, err = s.NewExecutor("f", []*Tensor{x}, nil)
	assert.Error(t, err)
	_, err = s.NewExecutor("f", []*Tensor{x, x}, []*Tensor{x})
	assert.Error(t, err)
	_, err = s.NewExecutor("f", []*Tensor{c}, []*Tensor{c})
	assert.Error(t, err, "inputs must be placeholders")
}

func TestZerosAndFromBytes(t *testing.T) {
	s := New(Reference())
	z, err := Zeros(f32Type(2, 3))
	require.NoError(t, err)
	assert.Equal(t, make([]float32, 6), values(t, s, z))
	_, err = Zeros(core.TensorType{DType: dtype.Invalid, Shape: core.Shape{1}})
	assert.Equal(t, core.DTypeError, coreErr(t, err).Kind)
	_, err = Zeros(f32Type(2, -1))
	assert.Equal(t, core.ShapeError, coreErr(t, err).Kind)
	_, err = Zeros(f32Type(1<<30, 1<<30))
	assert.Equal(t, core.MemoryError, coreErr(t, err).Kind)
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(2.5))
	x, err := FromBytes(f32Type(2), b)
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 2.5}, values(t, s, x))
	_, err = FromBytes(f32Type(3), b)
	assert.Error(t, err)
}
