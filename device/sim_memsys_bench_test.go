package device

import (
	"syscall"
	"testing"
	"time"

	"pypto/dtype"
	"pypto/isa"
)

// BenchmarkMemSysStream runs the memory system alone on a row kernel's GM stream
// (a2): 4 x 4096 f32 tiles loaded from one 64 MB array and stored to another by 48
// cores in turn, as softmax and layer norm over 4096^2 do. It reports host time per
// L2 line looked up, wall and CPU.
func BenchmarkMemSysStream(b *testing.B) {
	chip := preset(b, "a2")
	const rows, cols, tileRows, cores = 4096, 4096, 4, 48
	sz := rows * cols * 4
	cs := make([]*coreSim, cores)
	for i := range cs {
		cs[i] = &coreSim{chip: chip}
	}
	lines := 0
	cpu0 := cpuTime()
	for b.Loop() {
		m := newMemSystem(chip, 2*sz, nil)
		now := int64(chip.StartCycles())
		for t := 0; t < rows/tileRows; t++ {
			c := cs[t%cores]
			o := Operand{Kind: isa.KindGM, DType: dtype.Float32, GM: isa.GMView{Offset: t * tileRows * cols, Rows: tileRows, Cols: cols, RowStride: cols, ColStride: 1}}
			m.load(c, 0, o, now, false, 0)
			m.store(c, sz, o, now+20, 100)
			now += 40
		}
		lines = int(m.hits + m.misses)
		m.release("", false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*lines), "ns/line")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/float64(2*lines), "cpu-ns/line")
}

// cpuTime is the process's user and system CPU time: on a loaded host it measures
// the work better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
