package lower

import (
	"fmt"
	"math"

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

// buildBlockGraph deals each op's tiles over as many blocks as the chip has cores of
// the op's kind: matmul tiles, fused or not, in compact 2-D regions of the output grid
// (matmulBlocks), attention tiles by cost (attentionBlocks), the others round-robin.
func buildBlockGraph(tg *TileGraph, cores func(isa.CoreKind) int) *BlockGraph {
	bg := &BlockGraph{Tiles: tg}
	for i, op := range tg.Ops {
		n := op.NumTiles()
		k := &Kernel{Op: i, Core: op.Core, Blocks: dealTiles(tg.Tensors, op, min(n, cores(op.Core)))}
		bg.Kernels = append(bg.Kernels, k)
	}
	return bg
}

// dealTiles deals op's tiles to nb blocks, as the cores will run them (a scatter to
// fewer, when fewer groups of its tiles may overlap; see scatterBlocks).
func dealTiles(tensors []GMTensor, op *TileOp, nb int) [][]int {
	switch op.Kind {
	case TileScatter:
		return scatterBlocks(op, tensors, nb)
	case TileMatmul, TileMatmulEpilogue:
		return matmulBlocks(op, nb)
	case TileAttention:
		return attentionBlocks(op, nb)
	case TileConv, TileConvEpilogue:
		return convBlocks(op, nb)
	}
	blocks := make([][]int, nb)
	for t := 0; t < op.NumTiles(); t++ {
		blocks[t%nb] = append(blocks[t%nb], t)
	}
	return blocks
}

// matmulBlocks cuts the output tiles of a matmul into nb contiguous runs of
// matmulTileOrder, sizes differing by at most one. Each block then owns a compact
// region of the output, like the hand-tuned kernel's 2-D split: its tiles share A
// rows and B columns, so a core reads fewer distinct bytes and cores working at the
// same time on neighbouring regions share lines in L2.
func matmulBlocks(op *TileOp, nb int) [][]int {
	order := matmulTileOrder(op, nb)
	blocks := make([][]int, nb)
	for b := range blocks {
		blocks[b] = order[b*len(order)/nb : (b+1)*len(order)/nb]
	}
	return blocks
}

// matmulTileOrder lists a matmul's tiles (flat over the grid [batch, m/tm, n/tn,
// k/kc]) plane by plane (K chunk, then batch index), each plane in bands of w tile
// columns, row by row within a band. w makes a run of one block's share of tiles about
// square in elements: w*tn ~ (share/w)*tm.
func matmulTileOrder(op *TileOp, nb int) []int {
	batch, gm, gn, gk := op.Grid[0], op.Grid[1], op.Grid[2], op.Grid[3]
	w := matmulBandWidth(op, nb)
	order := make([]int, 0, op.NumTiles())
	for ki := range gk {
		for b := range batch {
			for band := 0; band < gn; band += w {
				for mi := range gm {
					for ni := band; ni < band+w; ni++ {
						order = append(order, ((b*gm+mi)*gn+ni)*gk+ki)
					}
				}
			}
		}
	}
	return order
}

// matmulBandWidth is the width in tile columns of the bands of matmulTileOrder: the
// divisor of the grid's columns that makes a run of one block's share of tiles about
// square in elements.
func matmulBandWidth(op *TileOp, nb int) int {
	gn := op.Grid[2]
	share := float64(op.NumTiles()) / float64(nb)
	ideal := math.Sqrt(share * float64(op.Tile[0]) / float64(op.Tile[1]))
	w := 1
	for d := 1; d <= gn; d++ { // the divisor of gn nearest the ideal width, in ratio
		if gn%d == 0 && math.Abs(math.Log(float64(d)/ideal)) < math.Abs(math.Log(float64(w)/ideal)) {
			w = d
		}
	}
	return w
}
