package lower

// KernelJSON is one kernel of a block graph: its op's tiles dealt out to blocks.
type KernelJSON struct {
	ID   int    `json:"id"`
	Op   int    `json:"op"` // the tile op it runs
	Core string `json:"core"`
	// Tiles is the number of tiles each block computes, block by block.
	Tiles []int `json:"tiles"`
	// First lists the first block's tiles (flat indices into the op's grid).
	First []int `json:"first"`
}

// BlockGraphJSON is a block graph in its JSON form.
type BlockGraphJSON struct {
	Kernels []KernelJSON `json:"kernels"`
}

// ExportJSON gives the block graph's JSON form.
func (g *BlockGraph) ExportJSON() BlockGraphJSON {
	out := BlockGraphJSON{Kernels: []KernelJSON{}}
	for i, k := range g.Kernels {
		if k == nil {
			continue
		}
		kj := KernelJSON{ID: i, Op: k.Op, Core: k.Core.String(), Tiles: make([]int, len(k.Blocks)), First: []int{}}
		for b, tiles := range k.Blocks {
			kj.Tiles[b] = len(tiles)
		}
		if len(k.Blocks) > 0 {
			kj.First = ints(k.Blocks[0])
		}
		out.Kernels = append(out.Kernels, kj)
	}
	return out
}
