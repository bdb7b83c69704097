package lower

import (
	"fmt"
	"testing"
	"time"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// BenchmarkAttentionRoofline compiles fp16 attention [1, heads, seq, 128] for the a2
// preset and runs it timing-only (times do not depend on values), reporting the
// simulated time, the roofline and their ratio. The roofline is the larger of the two
// products at the cube's peak (causal: the blocks on or below the diagonal, about half)
// and q, k, v and the output crossing HBM once.
//
//	go test ./lower -run '^$' -bench AttentionRoofline -benchtime 1x
func BenchmarkAttentionRoofline(b *testing.B) {
	for _, size := range []struct{ heads, seq int }{{32, 4096}, {8, 1024}} {
		for _, causal := range []bool{false, true} {
			b.Run(fmt.Sprintf("h%d_s%d_causal=%v", size.heads, size.seq, causal), func(b *testing.B) {
				chip, err := device.Preset("a2")
				if err != nil {
					b.Fatal(err)
				}
				c := attentionCase{q: core.Shape{1, size.heads, size.seq, 128}, dt: dtype.Float16, causal: causal}
				c.k, c.v = c.q, c.q
				var st *device.TaskStats
				for range b.N {
					start := time.Now()
					exe, err := Compile(c.graph(b), Options{Chip: chip})
					if err != nil {
						b.Fatal(err)
					}
					compiled := time.Since(start)
					if len(exe.exec.Tasks) != 1 {
						b.Fatalf("%d tasks, want one", len(exe.exec.Tasks))
					}
					if st, err = runMixedTimingOnly(exe, exe.exec.Tasks[0]); err != nil {
						b.Fatal(err)
					}
					b.Logf("compile %v, simulation %v", compiled, time.Since(start)-compiled)
				}
				simMS := float64(st.Cycles) / chip.ClockHz * 1e3
				roof := attentionRoofline(chip, size.heads, size.seq, 128, causal)
				b.ReportMetric(simMS, "sim_ms")
				b.ReportMetric(roof, "roofline_ms")
				b.ReportMetric(roof/simMS, "roofline_frac")
				busy := func(p isa.Pipe) float64 { return float64(st.PipeBusy[p]) / float64(st.Cycles*int64(chip.CubeCores)) }
				b.ReportMetric(busy(isa.PipeM), "cube_busy")
				// summed over the AI core's cube and vector cores: above 1 means more than one
				// of them keeps the pipe busy
				for _, p := range []isa.Pipe{isa.PipeMTE2, isa.PipeMTE1, isa.PipeM, isa.PipeFIX, isa.PipeV, isa.PipeMTE3} {
					b.Logf("%s busy %.3f per AI core", p, busy(p))
				}
			})
		}
	}
}

// attentionRoofline is max(cube time of the two products at peak, compulsory HBM time).
func attentionRoofline(chip *device.Chip, heads, seq, d int, causal bool) float64 {
	pairs := float64(seq) * float64(seq)
	if causal {
		pairs = float64(seq) * float64(seq+1) / 2
	}
	macs := 2 * float64(heads) * pairs * float64(d)
	perCycle := float64(chip.CubeM*chip.CubeK*chip.CubeN) * float64(chip.CubeCores)
	cube := macs / perCycle / chip.ClockHz
	bytes := 4 * float64(heads) * float64(seq) * float64(d) * 2
	hbm := bytes / (float64(chip.HBMBytesPerCycle) * chip.ClockHz)
	return max(cube, hbm) * 1e3
}

// runMixedTimingOnly runs a mixed task without values.
func runMixedTimingOnly(exe *Executable, task *Task) (*device.TaskStats, error) {
	gm := make([]byte, exe.exec.GMBytes)
	addrs := make([]int, len(task.Args))
	for j, a := range task.Args {
		addrs[j] = exe.exec.Buffers[a].Offset
	}
	return runTask(exe.chip, gm, task, addrs, device.RunOptions{NoValues: true})
}
