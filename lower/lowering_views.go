package lower

import (
	"pypto/core"
	"pypto/isa"
)

// View ops copy data through an affine map of the output index: a vector kernel of
// loads and stores whose GM windows do the reordering (no compute instruction).
var viewLowerings = map[string]lowering{
	"reshape": {kind: TileElementwise, core: isa.Vector, maps: func(_ []core.Shape, out core.Shape, _ core.Attrs) []affineMap {
		return []affineMap{reshapeMap(out)}
	}},
	"broadcast_to": {kind: TileElementwise, core: isa.Vector, maps: func(in []core.Shape, out core.Shape, _ core.Attrs) []affineMap {
		return []affineMap{broadcastMap(in[0], out)}
	}},
	"transpose": {kind: TileElementwise, core: isa.Vector, maps: func(in []core.Shape, _ core.Shape, attrs core.Attrs) []affineMap {
		return []affineMap{transposeMap(in[0], normalizePerm(attrs.Ints("perm"), len(in[0])))}
	}},
	// cast is a copy through the input's conversion to the output dtype (TCVT), which
	// rounds exactly as core's cast does (dtype.Round).
	"cast": {kind: TileElementwise, core: isa.Vector},
	"slice": {kind: TileElementwise, core: isa.Vector, extraLive: gatherTiles, uses: windowGatherOps, maps: func(in []core.Shape, _ core.Shape, attrs core.Attrs) []affineMap {
		return []affineMap{sliceMap(in[0], attrs.Ints("starts"), attrs.Ints("steps"))}
	}},
}

// normalizePerm resolves negative axes and the empty permutation (reverse the axes),
// as the transpose op's type inference does.
func normalizePerm(perm []int, n int) []int {
	out := make([]int, n)
	for i := range out {
		if len(perm) == 0 {
			out[i] = n - 1 - i
		} else {
			out[i] = (perm[i] + n) % n
		}
	}
	return out
}

// windowGatherOps are the instructions a backwards window's gather uses.
var windowGatherOps = []isa.Opcode{isa.TCI, isa.TCOLEXPAND, isa.TROWEXPANDADD, isa.MGATHER}

// gatherTiles counts the extra full-size tiles a slice with a negative step keeps live
// (the index, its spread, the gathered copy).
func gatherTiles(attrs core.Attrs) int {
	for _, s := range attrs.Ints("steps") {
		if s < 0 {
			return 3
		}
	}
	return 0
}

func init() {
	for name, l := range viewLowerings {
		lowerings[name] = l
	}
}

// concat writes each input into its slab of the output: the input's index space,
// shifted by the input's offset along the axis, in the output's row-major strides.
func init() {
	lowerings["concat"] = lowering{kind: TileElementwise, core: isa.Vector, partial: true,
		outMap: func(_ core.Shape, out core.Shape, attrs core.Attrs) affineMap {
			st := out.Strides()
			return affineMap{offset: attrs.Int("offset", 0) * st[attrs.Int("axis", 0)], strides: st}
		}}
}
