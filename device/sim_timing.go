package device

import "pypto/isa"

// duration is the time an instruction occupies its pipe: the pipe's startup latency
// plus the data-proportional part its opTable entry computes at the chip's rate for
// that path. Flags and barriers take no pipe time (their cost is the waiting they
// cause and the flag latency). Every data instruction takes at least one cycle, which
// also keeps the simulator's start-time order a strict order between dependent
// instructions.
func (c *Chip) duration(in *Instr) int64 {
	impl := lookupOp(in.Op)
	if impl == nil || impl.work == nil {
		return 0
	}
	return max(1, int64(c.PipeStartup[in.Pipe])+impl.work(c, in))
}

// times is an instruction's occupancy of its pipe and its completion: a vector
// instruction's result is ready its latency after the pipe is free again
// (vectorLatency), every other instruction's when it leaves the pipe.
func (c *Chip) times(in *Instr) transferTimes {
	d := c.duration(in)
	if in.Pipe == isa.PipeV && d > 0 {
		return transferTimes{occupy: d, done: d + vectorLatency(c, in)}
	}
	return transferTimes{occupy: d, done: d}
}

func ceilDiv(a int64, b int) int64 {
	if a <= 0 {
		return 0
	}
	return (a + int64(b) - 1) / int64(b)
}
