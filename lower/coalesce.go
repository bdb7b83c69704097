package lower

import (
	"fmt"
	"slices"

	"pypto/core"
)

// An elementwise kernel tiles the last two axes of its iteration space, one leading
// index at a time, so a space whose trailing axes are small ([N, C, 1, 1] after a
// global pool, [B, H, S, 1] of rotary tables, a concat of one-element slabs) would
// run one tiny tile per leading index: thousands of loads and stores of a few
// elements, each a few instructions in the program. elementwiseSpace walks the same
// elements in fewer, longer axes instead: axes of size 1 are dropped and two
// neighbouring axes are merged wherever every operand, and the output, steps through
// them as through one axis (stride[i] == stride[i+1] * size[i+1] in each map), which
// keeps every element's address, and the row-major order of the elements, unchanged.
// The tiling takes the coalesced space when it needs at most half the tiles
// (coalescedTiling), so a space whose last two axes already fill the tiles keeps them
// (a tile graph changes only where the gain is large); the op's problem then says
// which space its kernel walks.

// elementwiseSpace is the iteration space an elementwise tile op's kernel walks and
// the maps of its inputs and output over it: the coalesced space when the op's
// problem is that space's, else the op's own.
func elementwiseSpace(tensors []GMTensor, op *TileOp) (core.Shape, []affineMap, affineMap) {
	space := iterationType(tensors, op).Shape
	ins, out := inputMaps(tensors, op), outputMap(tensors, op)
	if coalescable(op) {
		cs, cins, cout := coalesce(space, ins, out)
		if slices.Equal(elementwiseProblem(cs), op.Problem) {
			return cs, cins, cout
		}
	}
	return space, ins, out
}

// coalescedTiling switches op, tiled over its own space, to the coalesced space when
// that takes at most half the tiles.
func coalescedTiling(op *TileOp, tensors []GMTensor, tiling func(rows, cols int) ([]int, string, error)) {
	if !coalescable(op) {
		return
	}
	cs, _, _ := coalesce(iterationType(tensors, op).Shape, inputMaps(tensors, op), outputMap(tensors, op))
	problem := elementwiseProblem(cs)
	tile, reason, err := tiling(problem[1], problem[2])
	if old := tileCount(op.Kind, op.Problem, op.Tile); err != nil || old == 0 || 2*tileCount(op.Kind, problem, tile) > old {
		return
	}
	op.Problem, op.Tile = problem, tile
	op.Reason = fmt.Sprintf("%s; over the axes merged to %v", reason, []int(cs))
}

// tileCount is the number of tiles of a tiling.
func tileCount(kind TileKind, problem, tile []int) int {
	n := 1
	for _, g := range tileGrid(kind, problem, tile) {
		n *= g
	}
	return n
}

// coalescable reports whether op's kernel may walk a coalesced space: not when its
// body reads the position of each element along an axis of the op's own space (iota,
// and fused bodies holding one), reads an input through computed addresses (gathers),
// or the program gives the tile, which names the op's own last two axes.
func coalescable(op *TileOp) bool {
	low := lowerings[op.Op]
	if low.indirect || len(op.Attrs.Ints(core.AttrTileShape)) > 0 {
		return false
	}
	return !readsPosition(op.Op, op.Attrs)
}

// readsPosition reports whether an elementwise op's body depends on the index of each
// element along an axis (not only on its row-major place).
func readsPosition(name string, attrs core.Attrs) bool {
	switch name {
	case "iota":
		return true
	case "fused":
		body, err := core.FusedBody(attrs)
		if err != nil {
			return true
		}
		for _, n := range body.Nodes {
			if n.Op != core.OpParam && readsPosition(n.Op, n.Attrs) {
				return true
			}
		}
	}
	return false
}

// coalesce drops the axes of size 1 and merges neighbouring axes that every map walks
// contiguously, returning the new space and maps (offsets unchanged).
func coalesce(space core.Shape, ins []affineMap, out affineMap) (core.Shape, []affineMap, affineMap) {
	maps := append(append([]affineMap(nil), ins...), out)
	shape := core.Shape{}
	strides := make([][]int, len(maps))
	for i := range strides {
		strides[i] = []int{}
	}
	for ax, d := range space {
		if d == 1 {
			continue
		}
		if n := len(shape); n > 0 && mergeable(maps, strides, ax, d) {
			shape[n-1] *= d
			for i, m := range maps {
				strides[i][n-1] = m.strides[ax]
			}
			continue
		}
		shape = append(shape, d)
		for i, m := range maps {
			strides[i] = append(strides[i], m.strides[ax])
		}
	}
	for i := range maps {
		maps[i] = affineMap{offset: maps[i].offset, strides: strides[i]}
	}
	return shape, maps[:len(ins)], maps[len(ins)]
}

// mergeable reports whether axis ax (of size d) of the original space continues the
// last axis kept so far in every map: that axis's stride is d times ax's.
func mergeable(maps []affineMap, kept [][]int, ax, d int) bool {
	for i, m := range maps {
		if kept[i][len(kept[i])-1] != m.strides[ax]*d {
			return false
		}
	}
	return true
}
