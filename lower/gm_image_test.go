package lower

import (
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// reluChain is x -> relu five times at O0: one kernel per relu, intermediates in the
// workspace, so a run reads GM it wrote itself.
func reluChain(t *testing.T) *Executable {
	t.Helper()
	bl := core.NewBuilder("chain")
	v := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{64, 64}})
	for range 5 {
		var err error
		v, err = bl.Op("relu", []core.Value{v}, nil, core.Location{})
		require.NoError(t, err)
	}
	bl.Output(v)
	exe, err := Compile(bl.Graph(), Options{Chip: presets(t)[0], Verify: true, OptLevel: O0})
	require.NoError(t, err)
	return exe
}

func TestRepeatedRunsOnRecycledImagesMatchTheReference(t *testing.T) {
	exe := reluChain(t)
	g := exe.graph
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := make([]*core.Array, 4)
	for i := range inputs {
		inputs[i] = randomArray(rng, g.Type(g.Params[0]))
	}
	check := func(in *core.Array) {
		want, err := core.Interpret(g, []*core.Array{in})
		require.NoError(t, err)
		got, _, err := exe.Run([][]byte{in.Bytes()})
		require.NoError(t, err)
		assert.Equal(t, want[0].Bytes(), got[0])
	}
	for range 3 {
		for _, in := range inputs {
			check(in)
		}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { check(inputs[i%len(inputs)]) })
	}
	wg.Wait()
}

func TestRecycledImageIsClearedOutsideTheParams(t *testing.T) {
	exe := reluChain(t)
	param := exe.exec.Buffers[exe.exec.Blocks.Tiles.Params[0]]
	reused := false
	for range 20 {
		gm := exe.images.get(exe)
		for i := range gm {
			if i >= param.Offset && i < param.Offset+param.Bytes {
				continue // a run copies its input over these
			}
			if gm[i] != 0 {
				t.Fatalf("byte %d of a recycled image is %#x, not 0", i, gm[i])
			}
		}
		for i := range gm {
			gm[i] = 0xAB
		}
		first := unsafe.SliceData(gm)
		exe.images.put(gm)
		again := exe.images.get(exe)
		reused = reused || unsafe.SliceData(again) == first
		exe.images.put(again)
	}
	assert.True(t, reused, "a finished run's image serves the next run")
}
