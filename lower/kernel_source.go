package lower

import (
	"pypto/core"
	"pypto/device"
)

// KernelSource places an instruction of a call_kernel task in the user's kernel: m is
// one of the program's machine programs and src the index of its PTO instruction. It
// gives the kernel, the index of the kernel's own program the instruction comes from
// (into Kernel.Programs and Kernel.Sources.Programs: block after block, a mixed
// kernel's cube program first), the instruction's index there, and the kernel's block
// (p.block_idx()). A task block that runs several kernel blocks (a grid larger than
// the chip) runs their programs one after the other (concatPrograms), so the index is
// found among them. ok is false for a program that is not a call_kernel task's.
func (e *Executable) KernelSource(m *device.MachineProgram, src int) (k *core.Kernel, prog, instr, block int, ok bool) {
	for _, task := range e.exec.Tasks {
		for flat, tm := range task.Machine {
			if tm != m {
				continue
			}
			kern := e.exec.Blocks.Kernels[task.Kernel]
			op := e.exec.Blocks.Tiles.Ops[kern.Op]
			if op.Op != "call_kernel" {
				return nil, 0, 0, 0, false
			}
			k, err := core.KernelOf(op.Attrs)
			n := task.GroupSize()
			if err != nil || flat/n >= len(kern.Blocks) || src < 0 {
				return nil, 0, 0, 0, false
			}
			part := flat % n // the cube program or a vector one of the group
			for _, b := range kern.Blocks[flat/n] {
				body := len(k.Group(b)[part].Body)
				if src < body {
					return k, b*n + part, src, b, true
				}
				src -= body
			}
			return nil, 0, 0, 0, false
		}
	}
	return nil, 0, 0, 0, false
}
