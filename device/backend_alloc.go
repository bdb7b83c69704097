package device

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"pypto/isa"
)

// Buffer allocation: every used tile gets a byte offset in its location's buffer. Two
// tiles may share bytes when their live ranges (first to last use, in program order)
// do not overlap; the flags inserted afterwards order the reuse, since hazards are
// computed on addresses, not names. Ranges that touch at one instruction (the last use
// of one tile is the first of another, as in tmov a -> b) are kept apart.
//
// The allocator is a linear scan over tiles by live start with next fit: a tile goes
// to the first gap at or after the end of the previously placed tile, and only when
// that runs past the buffer's end does the search wrap to offset 0 and reuse the bytes
// of tiles already dead. Reusing bytes costs a WAR flag between the last reader and the
// next writer, which serialises the two pipes; next fit reuses the space that died
// longest ago, so ping-pong tiles stay apart and a load can overlap the compute on the
// other copy, while a program larger than the buffer still fits by reuse.

// liveRanges computes each tile's first and last use; unused tiles get -1, -1. A use
// inside a loop counts as a use over the whole outermost loop around it: a value may
// be carried from one iteration to the next (an accumulator), and the flag inserter
// orders the reuse of bytes between iterations only when the tiles are distinct.
func liveRanges(p *isa.Program) (first, last []int) {
	first = make([]int, len(p.Tiles))
	last = make([]int, len(p.Tiles))
	for i := range first {
		first[i], last[i] = -1, -1
	}
	outer := outermostLoops(p.Body)
	for pc, in := range p.Body {
		lo, hi := pc, pc
		if l, ok := outer[pc]; ok {
			lo, hi = l[0], l[1]
		}
		for _, a := range in.Args {
			if a.Kind != isa.KindTile {
				continue
			}
			if first[a.Tile] < 0 || lo < first[a.Tile] {
				first[a.Tile] = lo
			}
			last[a.Tile] = max(last[a.Tile], hi)
		}
	}
	return first, last
}

// outermostLoops maps every instruction inside a loop to the LOOP and ENDLOOP indices
// of the outermost loop around it.
func outermostLoops(body []isa.Instr) map[int][2]int {
	out := map[int][2]int{}
	depth, start := 0, 0
	for pc, in := range body {
		switch in.Op {
		case isa.LOOP:
			if depth == 0 {
				start = pc
			}
			depth++
		case isa.ENDLOOP:
			depth--
			if depth == 0 {
				for i := start; i <= pc; i++ {
					out[i] = [2]int{start, pc}
				}
			}
		}
	}
	return out
}

// allocate places the tiles of p in the chip's buffers. Tiles a TASSIGN binds keep
// that address for the whole program (manual placement; they may overlap each other,
// as their author decided) and the other tiles are placed around them.
//
// The live ranges are liveRanges' first; a program that does not fit with them is
// placed again with localLiveRanges, which let the tiles of one loop iteration share
// bytes (at the cost of flags between them), and fails only when that does not fit.
func allocate(chip *Chip, p *isa.Program) ([]Allocation, map[isa.Location]int, error) {
	allocs, high, err := allocateWith(chip, p, liveRanges)
	var fit *fitError
	if errors.As(err, &fit) {
		allocs, high, err = allocateWith(chip, p, localLiveRanges)
	}
	if errors.As(err, &fit) {
		err = fit.CompileError
	}
	return allocs, high, err
}

// fitError is an allocation that ran out of buffer space.
type fitError struct{ *CompileError }

func allocateWith(chip *Chip, p *isa.Program, ranges func(*isa.Program) ([]int, []int)) ([]Allocation, map[isa.Location]int, error) {
	first, last := ranges(p)
	pinned, err := pinnedTiles(chip, p)
	if err != nil {
		return nil, nil, err
	}
	allocs := make([]Allocation, len(p.Tiles))
	byLoc := map[isa.Location][]int{}
	high := map[isa.Location]int{}
	for i, t := range p.Tiles {
		allocs[i] = Allocation{Decl: t, Addr: -1, Bytes: t.Bytes(), First: first[i], Last: last[i]}
		if addr, ok := pinned[i]; ok {
			allocs[i].Addr, allocs[i].First, allocs[i].Last = addr, 0, len(p.Body)
			high[t.Loc] = max(high[t.Loc], addr+t.Bytes())
		} else if first[i] >= 0 {
			byLoc[t.Loc] = append(byLoc[t.Loc], i)
		}
	}
	for _, loc := range chip.CoreLocations[p.Core] {
		high[loc] = max(high[loc], 0)
		tiles := byLoc[loc]
		// Stable order: by live start, then declaration order.
		sort.SliceStable(tiles, func(a, b int) bool { return first[tiles[a]] < first[tiles[b]] })
		var active []int // allocated tiles still live, sorted by address
		for ti, addr := range pinned {
			if p.Tiles[ti].Loc == loc && addr >= 0 {
				active = insertByAddr(active, allocs, ti)
			}
		}
		cursor := 0
		for _, ti := range tiles {
			active = expire(active, allocs, first[ti])
			size, align, capacity := allocs[ti].Bytes, chip.Alignment(loc), chip.Capacity(loc)
			addr, ok := firstFit(active, allocs, size, align, capacity, cursor)
			if !ok {
				addr, ok = firstFit(active, allocs, size, align, capacity, 0)
			}
			if !ok {
				return nil, nil, &fitError{&CompileError{Program: p.Name, PC: -1, Msg: fitMessage(chip, loc, allocs, active, ti)}}
			}
			allocs[ti].Addr = addr
			cursor = addr + size
			active = insertByAddr(active, allocs, ti)
			high[loc] = max(high[loc], addr+size)
		}
	}
	return allocs, high, nil
}

// expire drops tiles whose last use is strictly before pc.
func expire(active []int, allocs []Allocation, pc int) []int {
	out := active[:0]
	for _, t := range active {
		if allocs[t].Last >= pc {
			out = append(out, t)
		}
	}
	return out
}

// firstFit finds the lowest aligned offset at or after from where size bytes fit
// between the live tiles (sorted by address) within capacity.
func firstFit(active []int, allocs []Allocation, size, align, capacity, from int) (int, bool) {
	addr := alignUp(from, align)
	for _, t := range active {
		if allocs[t].Addr+allocs[t].Bytes <= addr {
			continue
		}
		if addr+size <= allocs[t].Addr {
			break
		}
		addr = max(addr, alignUp(allocs[t].Addr+allocs[t].Bytes, align))
	}
	return addr, addr+size <= capacity
}

// pinnedTiles collects the addresses TASSIGN binds tiles to, checked against the chip.
func pinnedTiles(chip *Chip, p *isa.Program) (map[int]int, error) {
	pinned := map[int]int{}
	for pc, in := range p.Body {
		if in.Op != isa.TASSIGN {
			continue
		}
		ti, addr := in.Args[0].Tile, int(in.Args[1].Imm)
		t := p.Tiles[ti]
		fail := func(format string, args ...any) error {
			return &CompileError{Program: p.Name, PC: pc, Instr: sourceInstrString(p, pc), Msg: fmt.Sprintf(format, args...)}
		}
		if prev, ok := pinned[ti]; ok && prev != addr {
			return nil, fail("tile %s is already bound to %#x; the device keeps one address per tile", t.Name, prev)
		}
		if addr%chip.Alignment(t.Loc) != 0 || addr+t.Bytes() > chip.Capacity(t.Loc) {
			return nil, fail("tile %s (%d bytes) at %s+%#x is misaligned or leaves the %d-byte buffer of chip %s (alignment %d)",
				t.Name, t.Bytes(), t.Loc, addr, chip.Capacity(t.Loc), chip.Name, chip.Alignment(t.Loc))
		}
		pinned[ti] = addr
	}
	return pinned, nil
}

func insertByAddr(active []int, allocs []Allocation, t int) []int {
	i := sort.Search(len(active), func(i int) bool { return allocs[active[i]].Addr > allocs[t].Addr })
	active = append(active, 0)
	copy(active[i+1:], active[i:])
	active[i] = t
	return active
}

func alignUp(v, a int) int {
	if a <= 1 {
		return v
	}
	return (v + a - 1) / a * a
}

// fitMessage explains an allocation failure: the tile, its location, the bytes it
// needs, the capacity, and what else is live at that point.
func fitMessage(chip *Chip, loc isa.Location, allocs []Allocation, active []int, ti int) string {
	a := allocs[ti]
	used := 0
	names := make([]string, 0, len(active))
	for _, t := range active {
		used += allocs[t].Bytes
		names = append(names, fmt.Sprintf("%s (%d B)", allocs[t].Decl.Name, allocs[t].Bytes))
	}
	msg := fmt.Sprintf("tile %s does not fit in %s: needs %d bytes (aligned to %d) but the %s buffer of chip %s holds %d bytes",
		a.Decl.Name, loc, a.Bytes, chip.Alignment(loc), loc, chip.Name, chip.Capacity(loc))
	if len(names) > 0 {
		msg += fmt.Sprintf(", of which %d are taken by tiles live at its first use (pc %d): %s", used, a.First, strings.Join(names, ", "))
	}
	return msg
}
