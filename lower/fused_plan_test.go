package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// instrCounts counts the instructions of each opcode in the PTO programs of exe.
func instrCounts(exe *Executable) map[isa.Opcode]int {
	n := map[isa.Opcode]int{}
	for _, t := range exe.Exec().Tasks {
		for _, p := range t.Programs {
			for _, in := range p.Body {
				n[in.Op]++
			}
		}
	}
	return n
}

// A linear layer's bias and tanh-form gelu run in the matmul's epilogue: one mixed
// task, with the unfused program's bytes and the reference's values, edge tiles
// included. The gelu body's constants are immediates and its intermediates share a
// few slots.
func TestGeluEpilogueIsOneKernel(t *testing.T) {
	for _, chip := range presets(t) {
		for _, c := range []struct {
			m, k, n int
			dt      dtype.DType
		}{{130, 70, 300, dtype.Float16}, {64, 96, 256, dtype.BFloat16}, {40, 32, 48, dtype.Float32}} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d_%s", chip.Name, c.m, c.k, c.n, c.dt), func(t *testing.T) {
				bl := core.NewBuilder("mlp")
				x := bl.Param("x", core.TensorType{DType: c.dt, Shape: core.Shape{c.m, c.k}})
				w := bl.Param("w", core.TensorType{DType: c.dt, Shape: core.Shape{c.n, c.k}})
				b := bl.Param("b", core.TensorType{DType: c.dt, Shape: core.Shape{c.n}})
				l, err := bl.Op("linear", []core.Value{x, w, b}, nil, core.Location{})
				require.NoError(t, err)
				y, err := bl.Op("gelu", []core.Value{l}, core.Attrs{"approximate": "tanh"}, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				g := bl.Graph()
				fused, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				require.Equal(t, []string{"fused_matmul"}, taskOps(fused))
				require.Zero(t, instrCounts(fused)[isa.TEXPANDS], "the constants are immediates")
				body := fused.Exec().Blocks.Tiles.Ops[0].Attrs
				plan, _, err := planBody(body)
				require.NoError(t, err)
				require.LessOrEqual(t, plan.slotCount(), 5, "slots shared by liveness")
				plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-epilogue": true, "fuse-elementwise": true}})
				require.NoError(t, err)
				require.Greater(t, len(taskOps(plain)), 2)
				requireSameOutputs(t, g, fused, plain)
				compileAndCompare(t, chip, g, c.k)
			})
		}
	}
}

// Constants as immediates and shared slots give the bytes of the unfused program,
// also for a constant that one step reads as a tile (c - x has no immediate form
// with the constant first), values read by several steps, and converted operands.
func TestFusedBodyImmediatesAndSlotsAreExact(t *testing.T) {
	chip := presets(t)[0]
	for _, dt := range []dtype.DType{dtype.Float32, dtype.Float16, dtype.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			bl := core.NewBuilder("consts")
			x := bl.Param("x", core.TensorType{DType: dt, Shape: core.Shape{19, 70}})
			h := bl.Param("h", core.TensorType{DType: dtype.Float16, Shape: core.Shape{70}})
			op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
				v, err := bl.Op(name, in, attrs, core.Location{})
				require.NoError(t, err)
				return v
			}
			c := op("full", core.Attrs{"value": 0.3, "dtype": dt.LongName(), "shape": []int64{}})
			d := op("full", core.Attrs{"value": -1.7, "dtype": dt.LongName(), "shape": []int64{}})
			a := op("mul", nil, op("sub", nil, c, x), c)                 // c as a tile, then as an immediate
			m := op("maximum", nil, d, op("div", nil, x, d))             // immediates on both sides
			s := op("add", nil, op("mul", nil, a, m), op("neg", nil, a)) // a read twice
			bl.Output(op("add", nil, op("cast", core.Attrs{"dtype": "float32"}, s), h))
			g := bl.Graph()
			fused, err := Compile(g, Options{Chip: chip, Verify: true})
			require.NoError(t, err)
			require.Equal(t, []string{"fused"}, taskOps(fused))
			plain, err := Compile(g, Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-elementwise": true}})
			require.NoError(t, err)
			requireSameOutputs(t, g, fused, plain)
			compileAndCompare(t, chip, g, 0)
		})
	}
}

// requireSameOutputs runs two programs of g on the same random inputs and requires
// the same bytes of every output.
func requireSameOutputs(t *testing.T, g *core.Graph, a, b *Executable) {
	t.Helper()
	_, raw := randomInputs(g)
	x, _, err := a.Run(raw)
	require.NoError(t, err)
	y, _, err := b.Run(raw)
	require.NoError(t, err)
	require.Equal(t, y, x)
}
