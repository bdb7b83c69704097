package device

import (
	"bytes"
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"

	"pypto/isa"
)

// What the simulator reads from a machine program (its progInfo) is kept from run to
// run, as is what runs found: that the program has no race. A program is keyed by its
// pointer, held weakly (the entry goes with the program), and checked against a copy
// of its instructions at each task, so a program changed in place after a run is read
// again and checked for races again.
//
// The race check of a replayable program (progInfo.replayable: registers are computed
// from immediates alone, so every run takes the same path with the same operands) and
// its verdict are the same in every run: its accesses are relative to its params and
// its ordering is the synchronisation's, not the timing's. Once a block of it has run
// to its end without a race, later runs skip the checker (blockRun.start,
// raceChecker.off). Values and times do not depend on the checker.

var programInfos sync.Map // weak.Pointer[MachineProgram] -> *progInfo

// cachedProgInfo returns m's progInfo, read again when m's contents changed.
func cachedProgInfo(m *MachineProgram) *progInfo {
	key := weak.Make(m)
	if v, ok := programInfos.Load(key); ok {
		if p := v.(*progInfo); p.code.matches(m) {
			return p
		}
	}
	p := newProgInfo(m, true)
	p.code = copyCode(m)
	if _, replaced := programInfos.Swap(key, p); !replaced {
		runtime.AddCleanup(m, func(k weak.Pointer[MachineProgram]) { programInfos.Delete(k) }, key)
	}
	return p
}

// programCode is what a run reads of a program, as a progInfo was read from it: its
// core kind, its registers' count and its instructions, their operands in one slice.
type programCode struct {
	core   isa.CoreKind
	regs   int
	instrs []Instr
}

func copyCode(m *MachineProgram) programCode {
	n := 0
	for i := range m.Instrs {
		n += len(m.Instrs[i].Args)
	}
	args := make([]Operand, 0, n)
	instrs := slices.Clone(m.Instrs)
	for i := range instrs {
		k := len(args)
		args = append(args, instrs[i].Args...)
		instrs[i].Args = args[k:len(args):len(args)]
	}
	return programCode{core: m.Core, regs: len(m.Regs), instrs: instrs}
}

// matches reports whether m still reads as c: the same instructions with the same
// operand bytes (compared as stored, padding too, which can only make them differ:
// then m is read again).
func (c programCode) matches(m *MachineProgram) bool {
	if m.Core != c.core || len(m.Regs) != c.regs || len(m.Instrs) != len(c.instrs) {
		return false
	}
	for i := range m.Instrs {
		a, b := &m.Instrs[i], &c.instrs[i]
		if a.Op != b.Op || a.Pipe != b.Pipe || a.Mode != b.Mode || a.Match != b.Match || len(a.Args) != len(b.Args) {
			return false
		}
		if len(a.Args) > 0 && !bytes.Equal(operandBytes(a.Args), operandBytes(b.Args)) {
			return false
		}
	}
	return true
}

// operandBytes is the memory of ops.
func operandBytes(ops []Operand) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ops))), uintptr(len(ops))*unsafe.Sizeof(Operand{}))
}
