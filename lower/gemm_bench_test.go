package lower

import (
	"fmt"
	"testing"

	"pypto/device"
	"pypto/dtype"
)

// BenchmarkGEMM compiles fp16 GEMMs for a2 and runs them timing-only, reporting the
// simulated time, the cube's busy ratio and its ratio to the roofline 2mnk / peak:
//
//	go test ./lower -run '^$' -bench GEMM -benchtime 1x
func BenchmarkGEMM(b *testing.B) {
	chip, err := device.Preset("a2")
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range [][3]int{{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {6144, 6144, 6144}, {256, 256, 16384}} {
		m, n, k := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			for b.Loop() {
				exe, err := Compile(gemmGraph(dtype.Float16, m, n, k), Options{Chip: chip})
				if err != nil {
					b.Fatal(err)
				}
				f, err := runTimingOnly(exe)
				if err != nil {
					b.Fatal(err)
				}
				roofline := float64(m) * float64(n) * float64(k) / float64(chip.CubeMACsPerCycle(dtype.Float16)*chip.CubeCores)
				b.ReportMetric(chip.Seconds(f.cycles)*1e3, "sim_ms")
				b.ReportMetric(f.cubeBusy, "cube_busy")
				b.ReportMetric(roofline/float64(f.cycles), "of_roofline")
				b.ReportMetric(float64(f.tasks), "tasks")
				b.Logf("%v: %s", s, exe.exec.Blocks.Tiles.Ops[0].Reason)
			}
		})
	}
}
