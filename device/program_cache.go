package device

import (
	"hash/maphash"
	"runtime"
	"sync"
	"unsafe"
	"weak"
)

// What the simulator reads from a machine program (its progInfo) is kept from run to
// run, as is what runs found: that the program has no race. A program is keyed by its
// pointer, held weakly (the entry goes with the program), and checked against a hash
// of its instructions at each task, so a program changed in place after a run is read
// again and checked for races again.
//
// The race check of a replayable program (progInfo.replayable: registers are computed
// from immediates alone, so every run takes the same path with the same operands) and
// its verdict are the same in every run: its accesses are relative to its params and
// its ordering is the synchronisation's, not the timing's. Once a block of it has run
// to its end without a race, later runs skip the checker (blockRun.start,
// raceChecker.off). Values and times do not depend on the checker.

var (
	programInfos sync.Map // weak.Pointer[MachineProgram] -> *progInfo
	programSeed  = maphash.MakeSeed()
)

// cachedProgInfo returns m's progInfo, read again when m's contents changed.
func cachedProgInfo(m *MachineProgram) *progInfo {
	h := programHash(m)
	key := weak.Make(m)
	if v, ok := programInfos.Load(key); ok {
		if p := v.(*progInfo); p.hash == h {
			return p
		}
	}
	p := newProgInfo(m, true)
	p.hash = h
	if _, replaced := programInfos.Swap(key, p); !replaced {
		runtime.AddCleanup(m, func(k weak.Pointer[MachineProgram]) { programInfos.Delete(k) }, key)
	}
	return p
}

// programHash hashes what a run of m reads of it: its core kind, registers and each
// instruction's opcode, pipe, mode, loop match and operands (as stored, including
// any padding, which only makes a hash differ: then m is read again).
func programHash(m *MachineProgram) uint64 {
	var h maphash.Hash
	h.SetSeed(programSeed)
	head := [3]int64{int64(m.Core), int64(len(m.Regs)), int64(len(m.Instrs))}
	h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&head[0])), unsafe.Sizeof(head)))
	for i := range m.Instrs {
		in := &m.Instrs[i]
		fixed := [5]int64{int64(in.Op), int64(in.Pipe), int64(in.Mode), int64(in.Match), int64(len(in.Args))}
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&fixed[0])), unsafe.Sizeof(fixed)))
		if len(in.Args) > 0 {
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&in.Args[0])), uintptr(len(in.Args))*unsafe.Sizeof(Operand{})))
		}
	}
	return h.Sum64()
}
