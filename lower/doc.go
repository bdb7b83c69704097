// Package lower compiles a Tensor Graph (package core) for a chip: it lowers the graph
// through the Tile Graph (each op expanded over a grid of tiles), the Block Graph (tile
// work grouped into blocks that one core runs) and the Execution Graph (tasks, the GM
// memory plan and one PTO program per block), then hands each PTO program to the
// device backend. A pass table that is data drives the stages; every stage's output
// has a verifier and a text form.
package lower
