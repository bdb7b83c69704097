package session

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

var nextTestID = uint64(1 << 40)

// testID is a fresh external id (tests may run several times in one process).
func testID() uint64 { nextTestID++; return nextTestID }

// seenReleased accumulates what ReleasedExternals reported (it reports each id once).
var seenReleased = map[uint64]bool{}

// released reports whether id is among the externals released so far (collecting first).
func released(id uint64) bool {
	ids, _ := ReleasedExternals(true)
	for _, x := range ids {
		seenReleased[x] = true
	}
	return seenReleased[id]
}

func TestExternalMemoryIsReadWithoutACopy(t *testing.T) {
	s := New(Reference())
	mem := []float32{1, 2, 3, 4}
	x, err := FromExternal(dtype.Float32, []int{2, 2}, unsafe.Pointer(&mem[0]), testID())
	require.NoError(t, err)
	assert.Equal(t, unsafe.Pointer(&mem[0]), unsafe.Pointer(unsafe.SliceData(x.Data())))
	y, err := Apply("mul", []*Tensor{x, x}, nil, core.Location{})
	require.NoError(t, err)
	mem[3] = 10 // the owner's write is what the tensor reads
	assert.Equal(t, []float32{1, 4, 9, 100}, values(t, s, y))
}

func TestExternalMemoryStaysHeldByWhatSharesIt(t *testing.T) {
	s := New(Reference())
	mem := make([]float32, 6)
	idX, idArg := testID(), testID()
	x, err := FromExternal(dtype.Float32, []int{6}, unsafe.Pointer(&mem[0]), idX)
	require.NoError(t, err)
	in, err := NewPlaceholder(f32Type(6))
	require.NoError(t, err)
	sum, err := Apply("add", []*Tensor{in, x}, nil, core.Location{})
	require.NoError(t, err)
	// The executor keeps x's bytes as a bound constant and returns the input as is.
	ex, err := s.NewExecutor("f", []*Tensor{in}, []*Tensor{sum, in})
	require.NoError(t, err)
	assert.False(t, released(idX), "a compiled executor's constant is still referred to")
	argMem := make([]float32, 6)
	arg, err := FromExternal(dtype.Float32, []int{6}, unsafe.Pointer(&argMem[0]), idArg)
	require.NoError(t, err)
	outs, err := ex.Run([]*Tensor{arg})
	require.NoError(t, err)
	assert.Same(t, arg.Keep(), outs[1].Keep(), "a result sharing an input's external bytes holds their owner")
	assert.False(t, released(idArg))
	assert.False(t, released(idX))
	runtime.KeepAlive(outs)
	runtime.KeepAlive(ex)
	assert.True(t, released(idArg), "released once no result refers to it")
	assert.True(t, released(idX), "released with the executor")
}

func TestExternalMemoryMustBeAligned(t *testing.T) {
	mem := make([]byte, 16)
	_, err := FromExternal(dtype.Float32, []int{2}, unsafe.Pointer(&mem[1]), testID())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not aligned to the 4-byte elements")
}

func TestWrappingHeldMemoryAgainHoldsNothingNew(t *testing.T) {
	ReleasedExternals(true) // what earlier tests left is released before counting
	mem := make([]float32, 1024)
	ptr := unsafe.Pointer(&mem[0])
	a, err := FromExternal(dtype.Float32, []int{1024}, ptr, testID())
	require.NoError(t, err)
	externals.mu.Lock()
	since, live := externals.sinceGC, externals.live
	externals.mu.Unlock()
	// The same memory wrapped again (a tensor converted on every call) adds no bytes
	// towards the next forced collection, nor to the bytes reported held.
	b, err := FromExternal(dtype.Float32, []int{1024}, ptr, testID())
	require.NoError(t, err)
	externals.mu.Lock()
	assert.Equal(t, since, externals.sinceGC)
	assert.Equal(t, live, externals.live)
	externals.mu.Unlock()
	// A shorter range at the same address is another buffer's worth: counted.
	c, err := FromExternal(dtype.Float32, []int{512}, ptr, testID())
	require.NoError(t, err)
	externals.mu.Lock()
	assert.Equal(t, live+512*4, externals.live)
	externals.mu.Unlock()
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	_, after := ReleasedExternals(true)
	assert.Equal(t, live-1024*4, after, "both ranges released once nothing refers to them")
	runtime.KeepAlive(mem)
}
