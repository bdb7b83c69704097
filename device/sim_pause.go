package device

import (
	"fmt"
	"sort"

	"pypto/isa"
)

// Pausing a functional run at its instructions, for a block-level debugger: with
// RunOptions.Functional and RunOptions.Pause set, every block calls Pause before it
// issues each instruction, from the goroutine that runs the block; the block waits
// until Pause returns, so Pause may look at its tiles and flags (Paused) and block to
// hold the run there. Blocks of other cores go on meanwhile (they run in goroutines
// of their own). Pause must not keep the Paused after it returns.

// Paused is a block stopped before the instruction at PC.
type Paused struct {
	Kind        isa.CoreKind
	Core, Block int
	PC          int
	Program     *MachineProgram
	r           *blockRun
}

// Instr is the instruction about to run.
func (p *Paused) Instr() *Instr { return &p.Program.Instrs[p.PC] }

// TileValues are tile i's elements (Rows x Cols, row-major, decoded to float64 as
// TPRINT prints them) and its valid region; an error for a tile no instruction uses.
func (p *Paused) TileValues(i int) (values []float64, validRows, validCols int, err error) {
	if i < 0 || i >= len(p.Program.Tiles) {
		return nil, 0, 0, fmt.Errorf("tile %d of %d", i, len(p.Program.Tiles))
	}
	a := p.Program.Tiles[i]
	if a.Addr < 0 {
		return nil, 0, 0, fmt.Errorf("tile %s is used by no instruction, so it has no place in a buffer", a.Decl.Name)
	}
	d := a.Decl
	o := Operand{Kind: isa.KindTile, Tile: i, Loc: d.Loc, Addr: a.Addr, DType: d.DType, Rows: d.Rows, Cols: d.Cols, Layout: d.Layout,
		ValidRows: d.Rows, ValidCols: d.Cols}
	v, err := p.r.c.tileView(o)
	if err != nil {
		return nil, 0, 0, err
	}
	values = make([]float64, d.Rows*d.Cols)
	for r := 0; r < d.Rows; r++ {
		for c := 0; c < d.Cols; c++ {
			values[r*d.Cols+c] = v.at(r, c)
		}
	}
	validRows, validCols = d.ValidRows, d.ValidCols
	if j, ok := d.ValidRowsReg.Index(); ok && j < len(p.r.sc.regs) {
		validRows = int(p.r.sc.regs[j])
	}
	if j, ok := d.ValidColsReg.Index(); ok && j < len(p.r.sc.regs) {
		validCols = int(p.r.sc.regs[j])
	}
	if validRows == 0 {
		validRows = d.Rows
	}
	if validCols == 0 {
		validCols = d.Cols
	}
	return values, validRows, validCols, nil
}

// FlagState is the number of SET_FLAG events from pipe Src to pipe Dst with event id
// ID that no WAIT_FLAG has consumed yet.
type FlagState struct {
	Src, Dst isa.Pipe
	ID       int
	Pending  int
}

// Flags lists the block's pending flag events, by source pipe, destination and id.
func (p *Paused) Flags() []FlagState {
	var out []FlagState
	p.r.sems.each(func(k flagKey, q []semEntry) {
		out = append(out, FlagState{Src: k.pair.src, Dst: k.pair.dst, ID: k.id, Pending: len(q)})
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Src != b.Src {
			return a.Src < b.Src
		}
		if a.Dst != b.Dst {
			return a.Dst < b.Dst
		}
		return a.ID < b.ID
	})
	return out
}

// pause calls RunOptions.Pause once per executed instruction (issueOne may try an
// instruction again when it has to wait).
func (r *blockRun) pause(pc int) {
	if r.c.opts.Pause == nil || !r.c.opts.Functional || r.pausedStep == r.sc.steps+1 {
		return
	}
	r.pausedStep = r.sc.steps + 1
	r.c.opts.Pause(&Paused{Kind: r.c.kind, Core: r.c.index, Block: r.bi, PC: pc, Program: r.m, r: r})
}
