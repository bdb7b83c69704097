package device

import "pypto/isa"

// duration is the time an instruction occupies its pipe: the pipe's startup latency
// plus the data-proportional part at the chip's rate for that path. Flags and
// barriers take no pipe time (their cost is the waiting they cause and the flag
// latency). Every data instruction takes at least one cycle, which also keeps the
// simulator's start-time order a strict order between dependent instructions.
func (c *Chip) duration(in *Instr) int64 {
	var work int64
	switch in.Op {
	case isa.SET_FLAG, isa.WAIT_FLAG, isa.TSYNC:
		return 0
	case isa.TLOAD:
		work = ceilDiv(viewBytes(in.Args[1]), c.GMReadBytesPerCycle)
	case isa.TSTORE:
		src := in.Args[1]
		if in.Pipe == isa.PipeFIX {
			// Only the stored window is read out of L0C.
			work = ceilDiv(int64(in.Args[0].GM.Rows*in.Args[0].GM.Cols*src.DType.Size()), c.FixpipeBytesPerCycle)
		} else {
			work = ceilDiv(viewBytes(in.Args[0]), c.UBToGMBytesPerCycle)
		}
	case isa.TMOV, isa.TEXTRACT:
		dst, src := in.Args[0], in.Args[1]
		switch in.Pipe {
		case isa.PipeMTE1:
			rate := c.L1ToL0ABytesPerCycle
			if dst.Loc == isa.Right {
				rate = c.L1ToL0BBytesPerCycle
			}
			work = ceilDiv(int64(dst.Bytes()), rate)
		case isa.PipeFIX:
			work = ceilDiv(int64(src.Bytes()), c.FixpipeBytesPerCycle)
		default:
			work = ceilDiv(int64(max(dst.Bytes(), src.Bytes())), c.VectorBytesPerCycle)
		}
	case isa.TMATMUL, isa.TMATMUL_ACC:
		a, b := in.Args[1], in.Args[2]
		work = ceilDiv(int64(a.Rows), c.CubeM) * ceilDiv(int64(a.Cols), c.CubeKStep(a.DType)) * ceilDiv(int64(b.Cols), c.CubeN)
	default: // vector arithmetic: one repeat moves VectorBytesPerCycle of the widest operand
		widest := 0
		for _, a := range in.Args {
			widest = max(widest, a.Bytes())
		}
		work = ceilDiv(int64(widest), c.VectorBytesPerCycle)
	}
	return max(1, int64(c.PipeStartup[in.Pipe])+work)
}

// viewBytes is the number of GM bytes a view transfers (broadcast elements count once
// per use: the engine moves them each time).
func viewBytes(o Operand) int64 {
	return int64(o.GM.Rows) * int64(o.GM.Cols) * int64(o.DType.Size())
}

func ceilDiv(a int64, b int) int64 {
	if a <= 0 {
		return 0
	}
	return (a + int64(b) - 1) / int64(b)
}
