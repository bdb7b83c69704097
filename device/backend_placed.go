package device

import (
	"fmt"

	"pypto/isa"
)

// CompilePlaced builds the machine program of a program that says everything the
// backend would decide: addrs[i] is tile i's byte address in its buffer (-1 for a tile
// no instruction uses), and its flags and barriers are all the synchronisation it
// has. The backend checks and routes it as Compile does and places the tiles there;
// it inserts nothing. A program read back from the machine program the backend built
// (its PTO-AS manual form) thus becomes that machine program again. The simulator
// checks the flags when the program runs: a conflicting access they leave unordered
// is a race error, a wait no set serves a deadlock.
func CompilePlaced(chip *Chip, p *isa.Program, addrs []int) (mp *MachineProgram, err error) {
	defer recoverCompile(p, &mp, &err)
	if err := chip.Validate(); err != nil {
		return nil, err
	}
	pipes, err := checkAndRoute(chip, p)
	if err != nil {
		return nil, err
	}
	if len(addrs) != len(p.Tiles) {
		return nil, &CompileError{Program: p.Name, PC: -1, Msg: fmt.Sprintf("%d addresses for %d tiles", len(addrs), len(p.Tiles))}
	}
	first, last := liveRanges(p)
	allocs := make([]Allocation, len(p.Tiles))
	high := map[isa.Location]int{}
	for _, loc := range chip.CoreLocations[p.Core] {
		high[loc] = 0
	}
	for i, t := range p.Tiles {
		a := Allocation{Decl: t, Addr: addrs[i], Bytes: t.Bytes(), First: first[i], Last: last[i]}
		if first[i] < 0 {
			a.Addr = -1
		} else {
			if a.Addr < 0 {
				return nil, &CompileError{Program: p.Name, PC: first[i], Instr: sourceInstrString(p, first[i]),
					Msg: fmt.Sprintf("tile %s is used but has no address; a placed program places every tile it uses", t.Name)}
			}
			if a.Addr%chip.Alignment(t.Loc) != 0 || a.Addr+a.Bytes > chip.Capacity(t.Loc) {
				return nil, &CompileError{Program: p.Name, PC: -1, Msg: fmt.Sprintf("tile %s (%d bytes) at %s+%#x is misaligned or leaves the %d-byte buffer of chip %s (alignment %d)",
					t.Name, a.Bytes, t.Loc, a.Addr, chip.Capacity(t.Loc), chip.Name, chip.Alignment(t.Loc))}
			}
			high[t.Loc] = max(high[t.Loc], a.Addr+a.Bytes)
		}
		allocs[i] = a
	}
	ins := resolveAll(p, allocs, pipes)
	match, err := matchLoops(ins)
	if err != nil {
		return nil, &CompileError{Program: p.Name, PC: -1, Msg: err.Error()}
	}
	for i := range ins {
		ins[i].Match = match[i]
	}
	return machineProgram(chip, p, allocs, high, ins), nil
}
