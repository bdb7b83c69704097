package lower

import (
	"fmt"
	"math"
	"strings"

	"pypto/isa"
)

// The text form of a Block Graph:
//
//	blockgraph mm {
//	  kernel k0 = op0 matmul core=cube blocks=2 {
//	    block 0: tiles [0:5:2]
//	    block 1: tiles [1,3]
//	  }
//	}
//
// The name is the tile graph's: a block graph is read against the tile graph it
// assigns (ParseBlockGraph takes it), so the text holds only the assignment. Kernel kI
// implements opI and repeats the op's name and core kind, which the parser checks, so
// that the text reads on its own. Each block lists the flat indices of the tiles it
// computes, in order; an arithmetic run of more than two tiles prints as
// [start:stop:step] (stop exclusive, as a Python slice).

// Format prints the block graph in the text form ParseBlockGraph reads.
func (g *BlockGraph) Format() string {
	var b strings.Builder
	name := "<nil tile graph>"
	if g.Tiles != nil {
		name = quoteName(g.Tiles.Name)
	}
	fmt.Fprintf(&b, "blockgraph %s {\n", name)
	for i, k := range g.Kernels {
		if k == nil {
			fmt.Fprintf(&b, "  kernel k%d = <nil kernel>\n", i)
			continue
		}
		opName := "<op?>"
		if g.Tiles != nil && k.Op >= 0 && k.Op < len(g.Tiles.Ops) && g.Tiles.Ops[k.Op] != nil {
			opName = g.Tiles.Ops[k.Op].Op
		}
		fmt.Fprintf(&b, "  kernel k%d = op%d %s core=%s blocks=%d {\n", i, k.Op, opName, k.Core, len(k.Blocks))
		for j, tiles := range k.Blocks {
			fmt.Fprintf(&b, "    block %d: tiles %s\n", j, tileList(tiles))
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// tileList prints tile indices, shortening an arithmetic run of more than two to
// [start:stop:step]: round-robin dealing makes every block such a run.
func tileList(xs []int) string {
	if len(xs) > 2 {
		step := xs[1] - xs[0]
		arith := step > 0
		for i := 2; i < len(xs) && arith; i++ {
			arith = xs[i]-xs[i-1] == step
		}
		if arith {
			return fmt.Sprintf("[%d:%d:%d]", xs[0], xs[len(xs)-1]+1, step)
		}
	}
	return intList(xs)
}

// maxTextTiles bounds the tiles of one op that a block graph text may list, so that
// a few characters of a range cannot make the parser allocate without limit.
const maxTextTiles = 1 << 24

// ParseBlockGraph reads a block graph in the text form Format prints, for the tile
// graph tiles (which the result points to). It checks everything BlockGraph.Verify
// checks except the core counts, which depend on the chip: the result passes Verify
// for any chip with enough cores. Errors are *core.Error of kind ValueError whose
// message starts with "line:col:".
func ParseBlockGraph(src string, tiles *TileGraph) (*BlockGraph, error) {
	return parseText(src, func(p *textParser) *BlockGraph {
		g := p.blockGraph(tiles)
		p.expectEOF("block graph")
		return g
	})
}

// unlimitedCores lets BlockGraph.Verify check everything but the core counts.
func unlimitedCores(isa.CoreKind) int { return math.MaxInt }

// blockGraph := 'blockgraph' name '{' {kernel} '}'
func (p *textParser) blockGraph(tiles *TileGraph) *BlockGraph {
	start := p.expectWord("blockgraph", "")
	if tiles == nil {
		p.fail(start, "no tile graph to read the block graph against")
	}
	nameTok := p.peek()
	if name := p.name("graph name"); name != tiles.Name {
		p.fail(nameTok, "expected the name of the tile graph, %s, found %s", quoteName(tiles.Name), quoteName(name))
	}
	p.expectPunct("{", " after the graph name")
	g := &BlockGraph{Tiles: tiles}
	for isWord(p.peek(), "kernel") {
		g.Kernels = append(g.Kernels, p.kernel(tiles, len(g.Kernels)))
	}
	end := p.next()
	if len(g.Kernels) < len(tiles.Ops) {
		p.fail(end, "expected 'kernel k%d' for op%d (one kernel per tile op), found %s", len(g.Kernels), len(g.Kernels), end)
	}
	if !isPunct(end, "}") {
		p.fail(end, "expected '}' closing the block graph (it has a kernel for each of the %d tile ops), found %s", len(tiles.Ops), end)
	}
	if err := g.Verify(unlimitedCores); err != nil { // the checks above should have caught it
		p.fail(end, "block graph does not verify: %v", err)
	}
	return g
}

// kernel := 'kernel' kI '=' opI name 'core=' core 'blocks=' int '{' {block} '}'
func (p *textParser) kernel(tiles *TileGraph, i int) *Kernel {
	p.next()
	kt := p.numberedAs("k", i, "kernel")
	if i >= len(tiles.Ops) {
		p.fail(kt, "expected '}' closing the block graph, found kernel k%d, but the tile graph has %d ops", i, len(tiles.Ops))
	}
	op := tiles.Ops[i]
	p.expectPunct("=", " after the kernel name")
	if n, t := p.numbered("op", "tile op"); n != i {
		p.fail(t, "expected op%d (kernel k%d implements op%d), found %s", i, i, i, t)
	}
	if t := p.next(); !isWord(t, op.Op) {
		p.fail(t, "expected %s, the op name of op%d, found %s", op.Op, i, t)
	}
	p.key("core", " after the op name")
	at := p.peek()
	k := &Kernel{Op: i, Core: p.coreKind()}
	if k.Core != op.Core {
		p.fail(at, "expected core %s, the core kind of op%d, found %s", op.Core, i, k.Core)
	}
	p.key("blocks", " after the core kind")
	nblocks := p.integer("block count")
	p.expectPunct("{", " opening the kernel's blocks")
	ntiles := numTilesCapped(op)
	if ntiles > maxTextTiles {
		p.fail(kt, "op%d has more than %d tiles, more than a block graph text may list", i, maxTextTiles)
	}
	seen := make([]bool, ntiles)
	for isWord(p.peek(), "block") {
		p.next()
		if t := p.next(); t.Kind != tokInt || t.Text != fmt.Sprint(len(k.Blocks)) {
			p.fail(t, "expected block number %d (blocks are numbered in order), found %s", len(k.Blocks), t)
		}
		p.expectPunct(":", " after the block number")
		p.expectWord("tiles", " after the block number")
		k.Blocks = append(k.Blocks, p.blockTiles(seen, i))
	}
	end := p.next()
	if !isPunct(end, "}") {
		p.fail(end, "expected 'block %d' or '}' closing kernel k%d, found %s", len(k.Blocks), i, end)
	}
	if len(k.Blocks) != nblocks {
		p.fail(end, "kernel k%d has %d blocks, its header says blocks=%d", i, len(k.Blocks), nblocks)
	}
	for t, ok := range seen {
		if !ok {
			p.fail(end, "kernel k%d computes no tile %d of op%d (every tile must be in one block)", i, t, i)
		}
	}
	return k
}

// numTilesCapped is op.NumTiles, or maxTextTiles+1 when it is larger (or overflows).
func numTilesCapped(op *TileOp) int {
	n := 1
	for _, g := range op.Grid {
		if g == 0 {
			return 0
		}
		if n > maxTextTiles/g {
			return maxTextTiles + 1
		}
		n *= g
	}
	return n
}

// blockTiles := '[' ']' | '[' int {',' int} ']' | '[' start ':' stop ':' step ']'
// and marks each tile in seen, which catches tiles outside the grid or given twice.
func (p *textParser) blockTiles(seen []bool, op int) []int {
	p.expectPunct("[", " opening the tile list")
	tiles := []int{}
	mark := func(at token, t int) {
		if t >= len(seen) {
			p.fail(at, "tile %d is outside the grid of op%d, which has %d tiles", t, op, len(seen))
		}
		if seen[t] {
			p.fail(at, "tile %d of op%d is already computed by a block", t, op)
		}
		seen[t] = true
		tiles = append(tiles, t)
	}
	if isPunct(p.peek(), "]") {
		p.next()
		return tiles
	}
	at := p.peek()
	first := p.integer("tile index")
	if isPunct(p.peek(), ":") {
		p.next()
		stop := p.integer("end of the tile range")
		p.expectPunct(":", " after the end of the tile range")
		stepTok := p.peek()
		step := p.integer("step of the tile range")
		if step == 0 {
			p.fail(stepTok, "expected a positive step, found 0")
		}
		p.expectPunct("]", " closing the tile range")
		// mark fails once t passes the grid, so the loop is bounded by the tile count;
		// the break keeps t += step from overflowing.
		for t := first; t < stop; t += step {
			mark(at, t)
			if step >= stop-t {
				break
			}
		}
		return tiles
	}
	mark(at, first)
	for {
		t := p.next()
		if isPunct(t, "]") {
			return tiles
		}
		if !isPunct(t, ",") {
			p.fail(t, "expected ',' or ']' in the tile list, found %s", t)
		}
		at = p.peek()
		mark(at, p.integer("tile index"))
	}
}
