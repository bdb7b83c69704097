package lower

import "pypto/core"

// Input packing. A concat of graph inputs along their first axis is, byte for byte,
// the inputs one after another: when the memory plan places them so, the concat is an
// alias of their bytes (GMTensor.Pieces) and needs no kernel. The host copies each
// input to its own place as always, so packing costs nothing at run time; fused
// projections (fuse_projections.go) concatenate their weights and biases this way.
//
// An input is packed once (it has one place), a donated input never (an in-place
// update of it would change the concat), and every piece but the last must fill
// whole GM granules, so that the next one starts where it ends.

// packableConcats lists the concat nodes of g that become packed inputs, with the
// inputs each packs, in order.
func packableConcats(g *core.Graph, donated map[core.Value]bool) map[core.Value][]core.Value {
	isOut := g.OutputSet()
	packs := map[core.Value][]core.Value{}
	taken := map[core.Value]bool{}
	for i, n := range g.Nodes {
		v := core.Value(i)
		if n.Op != "concat" || isOut[v] || len(n.Inputs) < 2 || len(n.Type.Shape) == 0 {
			continue
		}
		if ax := n.Attrs.Int("axis", 0); ax != 0 && ax != -len(n.Type.Shape) {
			continue // only the first axis keeps each input's bytes whole
		}
		ok := true
		seen := map[core.Value]bool{}
		for j, x := range n.Inputs {
			t := g.Type(x)
			ok = ok && g.Nodes[x].Op == core.OpParam && !donated[x] && !taken[x] && !seen[x] && t.DType == n.Type.DType &&
				(j == len(n.Inputs)-1 || t.Bytes()%gmAlign == 0)
			seen[x] = true
		}
		if !ok {
			continue
		}
		for _, x := range n.Inputs {
			taken[x] = true
		}
		packs[v] = n.Inputs
	}
	return packs
}

// placeInputs gives the inputs and outputs their own buffers from offset 0, in
// tensor order, with the pieces of each packed tensor one after another at the place
// of its first piece; it returns the end of the last buffer.
func placeInputs(eg *ExecGraph) int {
	tg := eg.Blocks.Tiles
	pieceOf := map[int][]int{} // first piece -> all pieces
	later := map[int]bool{}    // pieces placed with the first
	for _, t := range tg.Tensors {
		if len(t.Pieces) > 0 {
			pieceOf[t.Pieces[0]] = t.Pieces
			for _, p := range t.Pieces[1:] {
				later[p] = true
			}
		}
	}
	off := 0
	for i, t := range tg.Tensors {
		if t.Alias != 0 || t.Role == RoleTemp || later[i] {
			continue
		}
		pieces := pieceOf[i]
		if pieces == nil {
			pieces = []int{i}
		}
		for _, p := range pieces {
			bytes := roundUp(tg.Tensors[p].Type.Bytes(), gmAlign)
			eg.Buffers[p] = Buffer{Offset: off, Bytes: bytes}
			off += bytes
		}
	}
	return off
}

// packedBuffer is the buffer of packed tensor t: from its first piece's start to its
// last piece's end.
func packedBuffer(eg *ExecGraph, t GMTensor) Buffer {
	first, last := eg.Buffers[t.Pieces[0]], eg.Buffers[t.Pieces[len(t.Pieces)-1]]
	return Buffer{Offset: first.Offset, Bytes: last.Offset + last.Bytes - first.Offset}
}

// ownsBytesOf reports whether tensor i's bytes are (a part of) tensor j's through
// packing: j is packed and i is, or aliases, one of its pieces.
func ownsBytesOf(tensors []GMTensor, i, j int) bool {
	for _, p := range tensors[j].Pieces {
		if root(tensors, i) == p {
			return true
		}
	}
	return false
}

// verifyPieces checks packed tensor i of g: two or more earlier, distinct inputs of
// its dtype whose bytes add up to its own, every one but the last filling whole GM
// granules.
func verifyPieces(g *TileGraph, i int) bool {
	t := g.Tensors[i]
	if t.Role != RoleTemp || t.View != nil || len(t.Pieces) < 2 || t.Alias != t.Pieces[0]+1 {
		return false
	}
	bytes := 0
	seen := map[int]bool{}
	for k, p := range t.Pieces {
		if p < 0 || p >= i || seen[p] {
			return false
		}
		seen[p] = true
		pt := g.Tensors[p]
		if pt.Role != RoleInput || pt.Alias != 0 || pt.Type.DType != t.Type.DType || (k < len(t.Pieces)-1 && pt.Type.Bytes()%gmAlign != 0) {
			return false
		}
		bytes += pt.Type.Bytes()
	}
	return bytes == t.Type.Bytes()
}
