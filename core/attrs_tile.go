package core

// Every op accepts the tile attributes: the Tile level's per-op choice of the tile its
// kernel runs (Python's p.TileConfig). They have no default, so a node without them
// prints and compares as before, and the compiler's own choice applies.
const (
	// AttrTileShape is the tile shape: for a matmul [tm, tn, tk] (optionally stepK and
	// the K chunk kc), for a convolution on the cube [rb, tn, gs, ra, sk], for vector
	// kernels [rows, cols] of the output's last two axes.
	AttrTileShape = "tile_shape"
	// AttrTileFormat is the on-chip data format of the tile: "ND" or "NZ".
	AttrTileFormat = "tile_format"
)

// tileAttrSpecs declare the tile attributes' types (their defaults are never filled in).
var tileAttrSpecs = []AttrSpec{{AttrTileShape, []int64{}}, {AttrTileFormat, ""}}

// attrSpec is the declaration of attribute name on op d: its own or a tile attribute.
func (d *OpDef) attrSpec(name string) *AttrSpec {
	for i := range d.Attrs {
		if d.Attrs[i].Name == name {
			return &d.Attrs[i]
		}
	}
	for i := range tileAttrSpecs {
		if tileAttrSpecs[i].Name == name {
			return &tileAttrSpecs[i]
		}
	}
	return nil
}

// TileAttrs returns the tile attributes among attrs (nil when there are none).
func TileAttrs(attrs Attrs) Attrs {
	var out Attrs
	for _, spec := range tileAttrSpecs {
		if v, ok := attrs[spec.Name]; ok {
			if out == nil {
				out = Attrs{}
			}
			out[spec.Name] = v
		}
	}
	return out
}

// inheritTileAttrs gives the nodes a composite op decomposed into the op's tile
// attributes, so that a tile chosen for softmax still reaches the kernels (or the
// fused row kernel) it becomes.
func inheritTileAttrs(nodes []*Node, from Attrs) {
	tile := TileAttrs(from)
	if tile == nil {
		return
	}
	for _, n := range nodes {
		if n.Op == OpParam {
			continue
		}
		attrs := make(Attrs, len(n.Attrs)+len(tile))
		for k, v := range n.Attrs {
			attrs[k] = v
		}
		for k, v := range tile {
			attrs[k] = v
		}
		n.Attrs = attrs
	}
}
