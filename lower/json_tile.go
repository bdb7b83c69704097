package lower

import "pypto/core"

// The JSON forms of the lowered levels (json_tile.go, json_block.go, json_exec.go) are
// what the visualisation shows of them: the content of each level's text form plus
// the user's line of every op. They are exports only; the text forms round-trip.

// TileTensorJSON is one GM tensor of a tile graph.
type TileTensorJSON struct {
	ID    int    `json:"id"`
	Value int    `json:"value"` // the Tensor Graph value it holds
	Type  string `json:"type"`
	Role  string `json:"role"`
	Bytes int    `json:"bytes"`
	Alias int    `json:"alias"` // the tensor whose bytes it views, or -1
	View  bool   `json:"view,omitempty"`
	// Weight marks an input with the same bytes in every run (prepare_weights.go).
	Weight bool `json:"weight,omitempty"`
}

// TileOpJSON is one tile op: a tensor op over a grid of output tiles.
type TileOpJSON struct {
	ID      int               `json:"id"`
	Node    int               `json:"node"` // the Tensor Graph value it computes
	Op      string            `json:"op"`
	Kind    string            `json:"kind"`
	Core    string            `json:"core"`
	Inputs  []int             `json:"inputs"` // tile-graph tensors
	Output  int               `json:"output"`
	Attrs   map[string]string `json:"attrs,omitempty"`
	Problem []int             `json:"problem"`
	Tile    []int             `json:"tile"`
	Grid    []int             `json:"grid"`
	Tiles   int               `json:"tiles"`
	Reason  string            `json:"reason,omitempty"`
	Dynamic *DynamicRows      `json:"dynamic,omitempty"`
	// WeightPrep marks an op computed from weights alone, which runs once.
	WeightPrep bool          `json:"weight_prep,omitempty"`
	Loc        core.Location `json:"loc"`
}

// TileGraphJSON is a tile graph in its JSON form.
type TileGraphJSON struct {
	Name    string           `json:"name"`
	Tensors []TileTensorJSON `json:"tensors"`
	Ops     []TileOpJSON     `json:"ops"`
	Params  []int            `json:"params"`
	Outputs []int            `json:"outputs"`
}

// ExportJSON gives the tile graph's JSON form.
func (g *TileGraph) ExportJSON() TileGraphJSON {
	out := TileGraphJSON{Name: g.Name, Params: ints(g.Params), Outputs: ints(g.Outputs), Tensors: []TileTensorJSON{}, Ops: []TileOpJSON{}}
	for i, t := range g.Tensors {
		out.Tensors = append(out.Tensors, TileTensorJSON{ID: i, Value: int(t.Value), Type: t.Type.String(),
			Role: t.Role.String(), Bytes: t.Type.Bytes(), Alias: t.Alias - 1, View: t.View != nil, Weight: t.Weight})
	}
	for i, op := range g.Ops {
		if op == nil {
			continue
		}
		out.Ops = append(out.Ops, TileOpJSON{ID: i, Node: int(op.Node), Op: op.Op, Kind: op.Kind.String(),
			Core: op.Core.String(), Inputs: ints(op.Inputs), Output: op.Output, Attrs: op.Attrs.Strings(),
			Problem: ints(op.Problem), Tile: ints(op.Tile), Grid: ints(op.Grid), Tiles: op.NumTiles(), Reason: op.Reason, Dynamic: op.Dynamic,
			WeightPrep: op.WeightPrep, Loc: op.Loc})
	}
	return out
}

// ints is xs, or an empty list where xs is nil, so the JSON holds a list either way.
func ints(xs []int) []int {
	if xs == nil {
		return []int{}
	}
	return xs
}
