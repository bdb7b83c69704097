package lower

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// scaleKernel is y = 2x + 1 over a [64, 64] f32 tensor, 32 rows per block, each block a
// loop over tiles of 8 rows with a register offset (as p.range traces it).
func scaleKernel(blocks int) string {
	var b strings.Builder
	for blk := range blocks {
		fmt.Fprintf(&b, `kernel scale_b%d vector
param %%x: f32[%d]
param %%y: f32[%d]
reg %%i
reg %%off
tile %%t: vec f32[8x64]
  loop %%i, 4
    smul %%off, %%i, 512
    tload %%t, %%x[%%off+%d; 8x64; 64,1]
    tmuls %%t, %%t, 2
    tadds %%t, %%t, 1
    tstore %%y[%%off+%d; 8x64; 64,1], %%t
  endloop
end
`, blk, blocks*2048, blocks*2048, blk*2048, blk*2048)
	}
	return b.String()
}

func kernelGraph(t *testing.T, attrs core.Attrs, in ...core.TensorType) *core.Graph {
	t.Helper()
	bl := core.NewBuilder("k")
	var vals []core.Value
	for i, typ := range in {
		vals = append(vals, bl.Param(fmt.Sprintf("a%d", i), typ))
	}
	y, err := bl.Op("call_kernel", vals, attrs, core.Location{File: "model.py", Line: 3})
	require.NoError(t, err)
	bl.Output(y)
	return bl.Graph()
}

func TestCallKernelRunsTheUsersProgramsOnEveryChip(t *testing.T) {
	f32 := core.TensorType{DType: dtype.Float32, Shape: core.Shape{64, 64}}
	g := kernelGraph(t, core.Attrs{"name": "scale", "programs": scaleKernel(2), "grid": int64(2), "out_type": "f32[64,64]"}, f32)
	for _, chip := range presets(t) {
		compileAndCompare(t, chip, g, 0)
	}
	x := core.NewArray(f32)
	for i := range x.Data {
		x.Data[i] = float64(i % 7)
	}
	got, err := core.Interpret(g, []*core.Array{x})
	require.NoError(t, err)
	for i, v := range got[0].Data {
		require.Equal(t, 2*x.Data[i]+1, v, "element %d", i)
	}
}

// mixedKernel: the cube computes a @ b into L0C and pushes it to vector core 0, which
// applies relu and stores it; vector core 1 has nothing to do.
const mixedKernel = `kernel mm_c cube
param %a: f16[512]
param %b: f16[512]
param %y: f32[256]
tile %am: mat f16[16x32]
tile %bm: mat f16[32x16]
tile %al: left f16[16x32]
tile %br: right f16[32x16]
tile %acc: acc f32[16x16]
  tload %am, %a[0; 16x32; 32,1]
  tload %bm, %b[0; 32x16; 16,1]
  tmov %al, %am
  tmov %br, %bm
  tmatmul %acc, %al, %br
  tpush 0, %acc
end
kernel mm_v0 vector
param %a: f16[512]
param %b: f16[512]
param %y: f32[256]
tile %v: vec f32[16x16]
  tpop %v, 0
  tfree 0
  trelu %v, %v
  tstore %y[0; 16x16; 16,1], %v
end
kernel mm_v1 vector
param %a: f16[512]
param %b: f16[512]
param %y: f32[256]
end
`

func TestCallKernelGridLargerThanTheChipRunsBlocksInTurn(t *testing.T) {
	f32 := core.TensorType{DType: dtype.Float32, Shape: core.Shape{320, 64}}
	g := kernelGraph(t, core.Attrs{"name": "scale", "programs": scaleKernel(10), "grid": int64(10), "out_type": "f32[320,64]"}, f32)
	tiny, err := device.Preset("tiny")
	require.NoError(t, err)
	exe, err := Compile(g, Options{Chip: tiny, Verify: true})
	require.NoError(t, err)
	require.Len(t, exe.Exec().Tasks[0].Programs, 4) // 10 blocks on 4 vector cores
	compileAndCompare(t, tiny, g, 0)
}

func TestCallKernelMixedCubeAndVectorThroughQueues(t *testing.T) {
	a := core.TensorType{DType: dtype.Float16, Shape: core.Shape{16, 32}}
	b := core.TensorType{DType: dtype.Float16, Shape: core.Shape{32, 16}}
	g := kernelGraph(t, core.Attrs{"name": "mm", "programs": mixedKernel, "vectors": int64(2), "out_type": "f32[16,16]"}, a, b)
	for _, chip := range presets(t) {
		exe, err := Compile(g, Options{Chip: chip, Verify: true})
		require.NoError(t, err)
		require.Equal(t, 2, exe.Exec().Tasks[0].Vectors)
		compileAndCompare(t, chip, g, 32)
	}
}

func TestCallKernelErrorsNameTheKernelsLine(t *testing.T) {
	sources := `{"locs":[{"file":"k.py","line":7},{"file":"k.py","line":9}],"programs":[{"tiles":[0],"instrs":[1,1]}]}`
	big := "kernel big vector\nparam %x: f32[16384]\nparam %y: f32[16384]\ntile %t: vec f32[128x128]\n  tload %t, %x[0; 128x128; 128,1]\n  tstore %y[0; 128x128; 128,1], %t\nend\n"
	f32 := core.TensorType{DType: dtype.Float32, Shape: core.Shape{128, 128}}
	g := kernelGraph(t, core.Attrs{"name": "big", "programs": big, "out_type": "f32[128,128]", "sources": sources}, f32)
	tiny, err := device.Preset("tiny")
	require.NoError(t, err)
	_, err = Compile(g, Options{Chip: tiny, Verify: true})
	require.Error(t, err)
	ce := err.(*core.Error)
	require.Equal(t, core.CompileError, ce.Kind)
	require.Equal(t, 7, ce.Loc.Line)
	require.Contains(t, ce.Error(), "65536 bytes")
	require.Contains(t, ce.Error(), "vec 32768 bytes")

}

// The lowered levels of a kernel (mixed, with the user's programs in the attributes)
// print and parse back.
func TestCallKernelTextRoundTrip(t *testing.T) {
	a := core.TensorType{DType: dtype.Float16, Shape: core.Shape{16, 32}}
	b := core.TensorType{DType: dtype.Float16, Shape: core.Shape{32, 16}}
	g := kernelGraph(t, core.Attrs{"name": "mm", "programs": mixedKernel, "vectors": int64(2), "out_type": "f32[16,16]"}, a, b)
	chip := presets(t)[0]
	exe, err := Compile(g, Options{Chip: chip, Verify: true, StopAfter: "plan-exec"})
	require.NoError(t, err)
	text := exe.Exec().Format(true)
	require.Contains(t, text, "kind=kernel")
	back, err := ParseExecGraph(text)
	require.NoError(t, err)
	require.Equal(t, text, back.Format(true))
	require.NoError(t, back.Verify(chip))
}
