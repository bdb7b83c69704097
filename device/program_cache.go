package device

import (
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// What the simulator reads from a machine program (its progInfo) is kept from run to
// run, as is what runs found: that the program has no race. A program is keyed by its
// pointer, held weakly (the entry goes with the program). The first run of a program
// only notes it (most programs a compilation times run once); from its second run on
// the progInfo is kept with a hash of the instructions it was read from, checked at
// each task, so a program changed in place after a run is read again and checked for
// races again.
//
// The race check of a replayable program (progInfo.replayable: registers are computed
// from immediates alone, so every run takes the same path with the same operands) and
// its verdict are the same in every run: its accesses are relative to its params and
// its ordering is the synchronisation's, not the timing's. Once a block of it has run
// to its end without a race, later runs skip the checker (blockRun.start,
// raceChecker.off). Values and times do not depend on the checker.

var (
	programInfos sync.Map // weak.Pointer[MachineProgram] -> *programEntry
	programSeed  = maphash.MakeSeed()
)

// programEntry is what is kept of a program: nothing after its first run, then its
// progInfo.
type programEntry struct{ info atomic.Pointer[progInfo] }

// cachedProgInfo returns m's progInfo, kept from earlier runs when m has not changed
// since; withAccess asks for the access sets of the race checker (a progInfo made for
// the first run of a functional task goes without).
func cachedProgInfo(m *MachineProgram, withAccess bool) *progInfo {
	key := weak.Make(m)
	v, seen := programInfos.LoadOrStore(key, &programEntry{})
	if !seen {
		runtime.AddCleanup(m, func(k weak.Pointer[MachineProgram]) { programInfos.Delete(k) }, key)
		return newProgInfo(m, withAccess)
	}
	e := v.(*programEntry)
	h := programHash(m)
	if p := e.info.Load(); p != nil && p.hash == h {
		return p
	}
	p := newProgInfo(m, true)
	p.hash = h
	e.info.Store(p)
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
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(in.Args))), uintptr(len(in.Args))*unsafe.Sizeof(Operand{})))
		}
	}
	return h.Sum64()
}
