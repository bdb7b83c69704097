package lower

import (
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// rowRoofline is the least time the row kernel of g can take on chip, in cycles: the
// larger of its vector work at the vector units' peak (every step of the fused body
// over its elements, in the widest dtype it touches, at VectorBytesPerCycle on every
// vector core) and its compulsory GM traffic (inputs and outputs once) at the HBM
// bandwidth.
func rowRoofline(t testing.TB, exe *Executable, chip *device.Chip) (vector, gm float64) {
	tg := exe.Exec().Blocks.Tiles
	for _, op := range tg.Ops {
		require.Equal(t, "fused_rows", op.Op, "the program is one row kernel")
		body, err := core.FusedBody(op.Attrs)
		require.NoError(t, err)
		for _, n := range body.Nodes {
			if n.Op == core.OpParam || n.Op == "reshape" {
				continue
			}
			elems, size := n.Type.Shape.NumElements(), n.Type.DType.Size()
			for _, x := range n.Inputs {
				elems = max(elems, body.Type(x).Shape.NumElements())
				size = max(size, body.Type(x).DType.Size())
			}
			vector += float64(elems*size) / float64(chip.VectorBytesPerCycle*chip.Cores(isa.Vector))
		}
		for _, in := range append(append([]int(nil), op.Inputs...), op.Output) {
			gm += float64(tg.Tensors[in].Type.Bytes()) / float64(chip.HBMBytesPerCycle)
		}
	}
	return vector, gm
}

// BenchmarkRowKernels runs softmax, log_softmax and the norms over 8192 x 4096 fp16
// on the a2 preset and reports the simulated time against the roofline (and the time
// without row fusion):
//
//	go test ./lower -run NONE -bench RowKernels -benchtime 1x
func BenchmarkRowKernels(b *testing.B) {
	chip, err := device.Preset("a2")
	require.NoError(b, err)
	shape := core.Shape{8192, 4096}
	cases := map[string]struct {
		op    string
		extra int
	}{"softmax": {"softmax", 0}, "layer_norm": {"layer_norm", 2}, "rms_norm": {"rms_norm", 1}, "log_softmax": {"log_softmax", 0}}
	for _, name := range []string{"softmax", "layer_norm", "rms_norm", "log_softmax"} {
		c := cases[name]
		b.Run(name, func(b *testing.B) {
			g := rowGraph(b, c.op, dtype.Float16, shape, c.extra, nil)
			exe, err := Compile(g, Options{Chip: chip})
			require.NoError(b, err)
			inputs := make([][]byte, len(g.Params))
			for i, p := range g.Params {
				inputs[i] = make([]byte, g.Type(p).Bytes())
			}
			var stats *RunStats
			for b.Loop() {
				_, stats, err = exe.Run(inputs)
				require.NoError(b, err)
			}
			plain, err := Compile(g, Options{Chip: chip, Disabled: map[string]bool{"fuse-rows": true}})
			require.NoError(b, err)
			_, plainStats, err := plain.Run(inputs)
			require.NoError(b, err)
			b.ReportMetric(float64(plainStats.Cycles)/chip.ClockHz*1e3, "unfused_ms")
			vector, gm := rowRoofline(b, exe, chip)
			roof := max(vector, gm)
			b.ReportMetric(float64(stats.Cycles)/chip.ClockHz*1e3, "sim_ms")
			b.ReportMetric(roof/chip.ClockHz*1e3, "roofline_ms")
			b.ReportMetric(vector/chip.ClockHz*1e3, "vector_ms")
			b.ReportMetric(gm/chip.ClockHz*1e3, "gm_ms")
			b.ReportMetric(roof/float64(stats.Cycles), "roofline_frac")
			b.Logf("%s: %s", name, exe.Exec().Blocks.Tiles.Ops[0].Reason)
		})
	}
}
