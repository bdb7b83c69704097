package device

import (
	"slices"
	"sync"
	"sync/atomic"

	"pypto/isa"
)

// progInfo is what the simulator derives from a machine program once per task
// instead of at every executed instruction: the flag queue each SET_FLAG and
// WAIT_FLAG uses, and the bytes each instruction whose operands no register moves
// reads and writes (the race checker's access sets).
type progInfo struct {
	flagSlot []int32   // per pc: the index of its event's queue, -1 for other opcodes
	flagKeys []flagKey // per queue: its pipes and event id
	// static says, per pc, whether acc holds the instruction's access set: no operand
	// is moved or sized by a register (resolve leaves it as it is).
	static []bool
	acc    []accessSet
	// hash is the program's contents when this was read (programHash); replayable
	// says that the program's path and operands do not depend on values (no SLD, no
	// queue), so one run shows what every run of it accesses; raceFree that a block
	// of it has run to its end with the race checker finding nothing (program_cache.go).
	hash       uint64
	replayable bool
	raceFree   atomic.Bool
}

// newProgInfo reads m; the access sets only when withAccess (a functional run checks
// no races).
func newProgInfo(m *MachineProgram, withAccess bool) *progInfo {
	n := len(m.Instrs)
	p := &progInfo{flagSlot: make([]int32, n), static: make([]bool, n), replayable: true}
	if withAccess {
		p.acc = make([]accessSet, n)
	}
	for pc := range m.Instrs {
		in := &m.Instrs[pc]
		p.flagSlot[pc] = -1
		switch in.Op {
		case isa.SLD, isa.TPUSH, isa.TPOP, isa.TFREE:
			p.replayable = false
		}
		if in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG {
			// A program uses a few pipe pairs and ids: a search beats a map.
			k := flagKeyOf(in)
			s := slices.Index(p.flagKeys, k)
			if s < 0 {
				s = len(p.flagKeys)
				p.flagKeys = append(p.flagKeys, k)
			}
			p.flagSlot[pc] = int32(s)
		}
		if !movedByRegister(in) {
			p.static[pc] = true
			if withAccess {
				p.acc[pc] = accesses(*in)
			}
		}
	}
	return p
}

// access is the access set of the static instruction at pc (none in a functional
// task, which checks no races).
func (p *progInfo) access(pc int) accessSet {
	if p.acc == nil {
		return accessSet{}
	}
	return p.acc[pc]
}

// movedByRegister reports whether a register gives an operand's GM offset or size or
// a tile's valid size: what resolve replaces when the instruction issues.
func movedByRegister(in *Instr) bool {
	for _, a := range in.Args {
		switch a.Kind {
		case isa.KindTile:
			if a.ValidRowsReg != 0 || a.ValidColsReg != 0 {
				return true
			}
		case isa.KindGM:
			if a.GM.OffsetReg != 0 || a.GM.RowsReg != 0 || a.GM.ColsReg != 0 {
				return true
			}
		}
	}
	return false
}

// progInfos is a task's progInfo of each program, found when a block of the program
// first starts (cores of a functional run start blocks in parallel goroutines).
type progInfos struct {
	mu         sync.Mutex
	m          map[*MachineProgram]*progInfo
	noAccesses bool // a functional task's: no access sets needed
}

// of returns m's progInfo (cachedProgInfo), once per task; a core outside a task
// (infos nil) asks for it at every block.
func (infos *progInfos) of(m *MachineProgram) *progInfo {
	if infos == nil {
		return cachedProgInfo(m, true)
	}
	infos.mu.Lock()
	defer infos.mu.Unlock()
	p := infos.m[m]
	if p == nil {
		p = cachedProgInfo(m, !infos.noAccesses)
		if infos.m == nil {
			infos.m = map[*MachineProgram]*progInfo{}
		}
		infos.m[m] = p
	}
	return p
}
