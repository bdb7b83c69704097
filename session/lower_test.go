package session

import (
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// f16Tensor builds a concrete float16 tensor from float32 values (rounded).
func f16Tensor(t *testing.T, shape []int, vals []float32) *Tensor {
	t.Helper()
	bits := make([]uint16, len(vals))
	for i, v := range vals {
		bits[i] = dtype.Float32ToFloat16(v)
	}
	x, err := FromHost(dtype.Float16, shape, nil, unsafe.Pointer(&bits[0]))
	require.NoError(t, err)
	return x
}

func f16Values(t *testing.T, s *Session, x *Tensor) []float64 {
	t.Helper()
	require.NoError(t, s.Realize(x))
	return core.ArrayFromBytes(x.Type(), x.Data()).Data
}

// The real pipeline agrees with the reference interpreter on an eager MLP layer and on
// an executor, and reports simulated time.
func TestLoweringMatchesReference(t *testing.T) {
	build := func() *Tensor {
		x := f16Tensor(t, []int{17, 40}, seq(17*40, 0.01))
		w := f16Tensor(t, []int{24, 40}, seq(24*40, -0.003))
		b := f16Tensor(t, []int{24}, seq(24, 0.1))
		xw, err := Apply("matmul", []*Tensor{x, w}, core.Attrs{"transpose_b": true}, core.Location{})
		require.NoError(t, err)
		y, err := Apply("add", []*Tensor{xw, b}, nil, core.Location{})
		require.NoError(t, err)
		r, err := Apply("relu", []*Tensor{y}, nil, core.Location{})
		require.NoError(t, err)
		return r
	}
	for _, dev := range []string{"a2", "tiny"} {
		sim, ref := New(Lowering()), New(Reference())
		require.NoError(t, sim.SetDevice(dev))
		got, want := f16Values(t, sim, build()), f16Values(t, ref, build())
		require.Len(t, got, len(want))
		for i := range want {
			// fp32 accumulation and two fp16 roundings against the exact reference.
			assert.InDelta(t, want[i], got[i], 2e-3*math.Abs(want[i])+1e-3, "%s: element %d", dev, i)
		}
		st, ok := sim.LastStats()
		require.True(t, ok)
		assert.Positive(t, st.Cycles, dev)
		assert.Positive(t, st.Seconds, dev)
		assert.Positive(t, st.Tasks, dev)
	}
}

func TestLoweringDevices(t *testing.T) {
	s := New(Lowering())
	assert.Equal(t, DefaultDevice, s.Device())
	require.NoError(t, s.SetDevice(" Tiny "))
	assert.Equal(t, "tiny", s.Device(), "names are canonical")
	err := s.SetDevice("h100")
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind)
	assert.Equal(t, "tiny", s.Device())
}

func TestLoweringExecutor(t *testing.T) {
	s := New(Lowering())
	x, err := NewPlaceholder(core.TensorType{DType: dtype.Float16, Shape: core.Shape{8, 16}})
	require.NoError(t, err)
	w := f16Tensor(t, []int{16, 8}, seq(128, 0.02))
	y, err := Apply("matmul", []*Tensor{x, w}, nil, core.Location{})
	require.NoError(t, err)
	ex, err := s.NewExecutor("layer", []*Tensor{x}, []*Tensor{y})
	require.NoError(t, err)
	assert.Contains(t, ex.Dump(), "matmul")
	in := f16Tensor(t, []int{8, 16}, seq(128, 0.01))
	outs, err := ex.Run([]*Tensor{in})
	require.NoError(t, err)
	ref := New(Reference())
	direct, err := Apply("matmul", []*Tensor{in, w}, nil, core.Location{})
	require.NoError(t, err)
	want := f16Values(t, ref, direct)
	got := f16Values(t, s, outs[0])
	for i := range want {
		assert.InDelta(t, want[i], got[i], 2e-3*math.Abs(want[i])+1e-3, "element %d", i)
	}
	st, ok := ex.LastStats()
	require.True(t, ok)
	assert.Positive(t, st.Cycles)
}
