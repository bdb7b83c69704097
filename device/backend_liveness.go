package device

import "pypto/isa"

// Iteration-local live ranges, the allocator's fallback when the conservative ranges
// of liveRanges do not fit. liveRanges keeps every tile used in a loop live over the
// whole outermost loop, which keeps distinct tiles of a loop body in distinct bytes
// (no WAR flags between them inside the body, so loads overlap compute) but makes a
// long fused body (a chain of expanded transcendentals, each with its own scratch
// tiles) need every tile at once. Here a tile stays live over a loop only when its
// value can cross the loop's back edge: when some instruction of the body may read it
// before the body overwrites all of it. A tile whose first access in a loop body is a
// killing write is iteration-local there: its range is its uses, and another tile
// may take its bytes in the rest of the body, ordered by the flags inserted on
// addresses afterwards.

// killsTile reports whether in overwrites every element of its destination tile
// without reading it: then no value of that tile from before in survives it.
func killsTile(p *isa.Program, in isa.Instr) (int, bool) {
	if len(in.Args) == 0 || in.Args[0].Kind != isa.KindTile {
		return 0, false
	}
	if !writesWholeDestination(in.Op) {
		return 0, false
	}
	dst := in.Args[0].Tile
	for _, a := range in.Args[1:] {
		if a.Kind == isa.KindTile && a.Tile == dst {
			return 0, false
		}
	}
	t := p.Tiles[dst]
	full := (t.ValidRows == 0 || t.ValidRows == t.Rows) && (t.ValidCols == 0 || t.ValidCols == t.Cols)
	_, rowsReg := t.ValidRowsReg.Index()
	_, colsReg := t.ValidColsReg.Index()
	return dst, full && !rowsReg && !colsReg
}

// writesWholeDestination: the opcodes whose table row writes all of dst's valid
// region and nothing else (the vector unit's elementwise, tile-scalar, broadcast and
// reduction rows with the device's conventional access, and TLOAD, which zeroes what
// its window leaves out). Comparisons write packed mask bits and leave the others as
// they were, so they do not count.
func writesWholeDestination(op isa.Opcode) bool {
	if op == isa.TLOAD {
		return true
	}
	if op == isa.TCMP || op == isa.TCMPS {
		return false
	}
	if impl := lookupOp(op); impl == nil || impl.access != nil {
		return false
	}
	switch op.Info().Class {
	case isa.ClassElementwise, isa.ClassTileScalar, isa.ClassBroadcast, isa.ClassReduce:
		return op.Info().PipeClass == isa.PipeClassFixed && op.Info().Pipe == isa.PipeV
	}
	return false
}

// localLiveRanges is liveRanges with iteration-local tiles kept to their uses: a tile
// is live over a loop (at any depth) only when it is used in the loop and its first
// access in the loop's body, in program order, is not a killing write of the body
// itself (outside its nested loops).
func localLiveRanges(p *isa.Program) (first, last []int) {
	first = make([]int, len(p.Tiles))
	last = make([]int, len(p.Tiles))
	for i := range first {
		first[i], last[i] = -1, -1
	}
	use := func(t, lo, hi int) {
		if first[t] < 0 || lo < first[t] {
			first[t] = lo
		}
		last[t] = max(last[t], hi)
	}
	for pc, in := range p.Body {
		for _, a := range in.Args {
			if a.Kind == isa.KindTile {
				use(a.Tile, pc, pc)
			}
		}
	}
	for _, l := range loopSpans(p.Body) {
		exposed := map[int]bool{} // decided tiles: true when the body may read them first
		depth := 0                // of nested loops around pc inside l's body
		for pc := l[0] + 1; pc < l[1]; pc++ {
			in := p.Body[pc]
			switch in.Op {
			case isa.LOOP:
				depth++
			case isa.ENDLOOP:
				depth--
			}
			// A write inside a nested loop may not happen (a register trip count of
			// zero), so only writes of the body itself kill.
			killed, kills := killsTile(p, in)
			kills = kills && depth == 0
			for i, a := range in.Args {
				if a.Kind != isa.KindTile {
					continue
				}
				if _, seen := exposed[a.Tile]; seen {
					continue
				}
				exposed[a.Tile] = !(kills && i == 0 && a.Tile == killed)
			}
		}
		for t, ex := range exposed {
			if ex {
				use(t, l[0], l[1])
			}
		}
	}
	return first, last
}

// loopSpans lists the LOOP and matching ENDLOOP indices of every loop, at any depth.
func loopSpans(body []isa.Instr) [][2]int {
	var spans [][2]int
	var open []int
	for pc, in := range body {
		switch in.Op {
		case isa.LOOP:
			open = append(open, pc)
		case isa.ENDLOOP:
			if n := len(open); n > 0 {
				spans = append(spans, [2]int{open[n-1], pc})
				open = open[:n-1]
			}
		}
	}
	return spans
}
