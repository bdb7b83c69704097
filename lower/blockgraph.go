package lower

import (
	"fmt"

	"pypto/isa"
)

// Kernel is the block-level form of one tile op: its output tiles dealt out to blocks,
// each block run by one core of the op's kind.
type Kernel struct {
	Op     int // index into TileGraph.Ops
	Core   isa.CoreKind
	Blocks [][]int // flat tile indices computed by each block, in order
}

// BlockGraph is the program after core assignment.
type BlockGraph struct {
	Tiles   *TileGraph
	Kernels []*Kernel
}

// Verify checks that every tile of every op is computed by exactly one block and that
// each kernel runs on the core kind its op needs, with no more blocks than cores.
func (g *BlockGraph) Verify(cores func(isa.CoreKind) int) error {
	if len(g.Kernels) != len(g.Tiles.Ops) {
		return fmt.Errorf("blockgraph: %d kernels for %d tile ops", len(g.Kernels), len(g.Tiles.Ops))
	}
	for i, k := range g.Kernels {
		if k.Op != i {
			return fmt.Errorf("blockgraph: kernel k%d implements op%d, want op%d", i, k.Op, i)
		}
		op := g.Tiles.Ops[k.Op]
		if k.Core != op.Core {
			return fmt.Errorf("blockgraph: kernel k%d runs on %s cores, its op needs %s", i, k.Core, op.Core)
		}
		if len(k.Blocks) > cores(k.Core) {
			return fmt.Errorf("blockgraph: kernel k%d has %d blocks for %d %s cores", i, len(k.Blocks), cores(k.Core), k.Core)
		}
		seen := make([]int, op.NumTiles())
		for _, tiles := range k.Blocks {
			for _, t := range tiles {
				if t < 0 || t >= len(seen) {
					return fmt.Errorf("blockgraph: kernel k%d has tile %d outside its grid of %d", i, t, len(seen))
				}
				seen[t]++
			}
		}
		for t, n := range seen {
			if n != 1 {
				return fmt.Errorf("blockgraph: kernel k%d computes tile %d %d times", i, t, n)
			}
		}
	}
	return nil
}

// buildBlockGraph deals each op's tiles round-robin over as many blocks as the chip has
// cores of the op's kind, so block sizes differ by at most one tile.
func buildBlockGraph(tg *TileGraph, cores func(isa.CoreKind) int) *BlockGraph {
	bg := &BlockGraph{Tiles: tg}
	for i, op := range tg.Ops {
		n := op.NumTiles()
		nb := min(n, cores(op.Core))
		k := &Kernel{Op: i, Core: op.Core, Blocks: make([][]int, nb)}
		for t := 0; t < n; t++ {
			k.Blocks[t%nb] = append(k.Blocks[t%nb], t)
		}
		bg.Kernels = append(bg.Kernels, k)
	}
	return bg
}
