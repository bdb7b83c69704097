package lower

import (
	"fmt"
	"sort"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// attentionProblem is [batch, l, s, e, ev]: the flattened batch dims of the output,
// the query and key counts, the head dim of q and k and that of v.
func attentionProblem(q, k, out core.TensorType) []int {
	n := len(out.Shape)
	return []int{out.Shape[:n-2].NumElements(), q.Shape[len(q.Shape)-2], k.Shape[len(k.Shape)-2], q.Shape[len(q.Shape)-1], out.Shape[n-1]}
}

// attentionShape is what sizes the buffers of an attention kernel. A tile of br query
// rows is cut into nc = nv*cpv chunks of hr rows; chunk c belongs to vector core c % nv
// (each of the nv vector cores of the AI core owns cpv chunks). Keys go by blocks of
// bc; dp and dv are the head dims padded to the cube's fractal.
type attentionShape struct {
	nv, cpv, hr, bc, dp, dv int
	dt                      dtype.DType
	mask                    dtype.DType // dtype.Invalid without a mask
	scaleIn, fillIn         dtype.DType // the 0-d scale's and fill's dtypes, or dtype.Invalid
	masks                   int         // distinct causal / edge masks a vector core keeps
}

func (a attentionShape) chunks() int { return a.nv * a.cpv }

// maxPartCols is the widest scores tile the cube pushes. A key block wider than that
// goes through the queues in parts (parts, partCols), each a product of its own, so
// that a vector core can fold the parts elementwise (a cycle a repeat per source)
// before it reduces a row through the reduction tree (seven cycles a repeat on a2).
const maxPartCols = 128

// parts is how many parts a key block goes in: one when it is at most maxPartCols
// wide, or when its parts would not be whole 32-byte rows of a bool mask's bytes.
func (a attentionShape) parts() int {
	n := ceilDiv(a.bc, maxPartCols)
	if a.bc%(n*32) != 0 {
		return 1
	}
	return n
}

func (a attentionShape) partCols() int { return a.bc / a.parts() }

// emptyPart: the last of s keys' blocks has a part wholly past the keys (the search
// offers no such tiling: the part would be computed for nothing).
func (a attentionShape) emptyPart(s int) bool {
	last := s - (ceilDiv(max(s, 1), a.bc)-1)*a.bc
	return a.parts() > 1 && last <= (a.parts()-1)*a.partCols()
}

// resultInProbs: the result of a chunk, rounded to the dtype, is written into the
// probabilities' (first part's) tile when the shapes agree, which frees UB.
func (a attentionShape) resultInProbs() bool { return a.partCols() == a.dv }
func (a attentionShape) rows() int           { return a.chunks() * a.hr }

// Mask tiles hold one bit per score of a part; a row of them is a whole 32-byte block.
func (a attentionShape) maskCols() int { return max(32, roundUp(ceilDiv(a.partCols(), 8), 32)) }

// ub is the UB one vector core uses: the scores (two copies when double), the
// probabilities, an output accumulator and seven statistics columns per chunk, the
// popped product, the result (in the probabilities' tile when it has their shape), the
// masks and what an explicit mask or scale needs; with parts, the tile their fold goes
// to.
func (a attentionShape) ub(double bool) int {
	s := a.hr * a.bc * 4
	part := a.hr * a.partCols() * 4
	n := s + a.hr*a.bc*a.dt.Size() + (a.cpv+1)*a.hr*a.dv*4 + (7*a.cpv)*a.hr*4 + a.masks*a.hr*a.maskCols()
	if a.parts() > 1 {
		n += part
	}
	if !a.resultInProbs() {
		n += a.hr * a.dv * a.dt.Size()
	}
	if double {
		n += s
	}
	switch {
	case a.mask == dtype.Bool:
		n += a.hr*a.bc + a.hr*a.partCols() + a.parts()*a.hr*a.maskCols()
	case a.mask != dtype.Invalid:
		n += a.hr * a.bc * a.mask.Size()
		if a.mask != dtype.Float32 {
			n += s
		}
	}
	for _, in := range []dtype.DType{a.scaleIn, a.fillIn} {
		if in != dtype.Invalid {
			n += a.hr * 16 * (in.Size() + 4)
		}
	}
	if a.fillIn != dtype.Invalid { // the fill broadcast over a part of scores
		n += part
	}
	return n
}

// fits checks the cube's buffers (Q resident in L1 and, by two chunks, in L0A; K^T and
// V double buffered in L1 and single in L0B; two P chunks in L1 and L0A; two score and
// two product accumulators in L0C) and the vector cores' UB.
func (a attentionShape) fits(chip *device.Chip) bool {
	sz, w := a.dt.Size(), a.partCols()
	l1 := a.rows()*a.dp*sz + 2*a.dp*a.bc*sz + 2*a.bc*a.dv*sz + 2*a.hr*w*sz
	return l1 <= chip.Capacity(isa.Mat) &&
		2*a.hr*(a.dp+w)*sz <= chip.Capacity(isa.Left) &&
		a.bc*(a.dp+a.dv)*sz <= chip.Capacity(isa.Right) &&
		2*a.hr*(w+a.dv)*4 <= chip.Capacity(isa.Acc) &&
		a.ub(false) <= chip.Capacity(isa.Vec)
}

// attentionTile picks [br, hr, bc, copies]. It starts from chunks of 64 rows, two per
// vector core, and 128 keys per step: the cube's loads of K and V per step are shared
// by more rows the taller the tile, and its two products per chunk and key block then
// take about as long as moving the chunk's scores and probabilities through the
// queues. It halves the keys, then the chunks per vector core, then the rows until
// every buffer fits, and gives the scores two UB copies (the next block's pop overlaps
// this block's softmax) when they fit.
func attentionTile(chip *device.Chip, op *TileOp, tensors []GMTensor) ([]int, string, error) {
	a := newAttentionShape(chip.VectorCores/chip.CubeCores, op, tensors)
	if a.nv < 1 || 3*a.nv > isa.NumQueues {
		return nil, "", fmt.Errorf("attention needs 1 to %d vector cores per AI core, chip %s has %d", isa.NumQueues/3, chip.Name, a.nv)
	}
	p := attentionProblem(tensors[op.Inputs[0]].Type, tensors[op.Inputs[1]].Type, attentionOutType(op, tensors))
	causal := op.Attrs.Bool("is_causal", false)
	a.hr = min(64, roundUp(ceilDiv(max(p[1], 1), a.nv), cubeAlign))
	a.cpv = min(2, ceilDiv(max(p[1], 1), a.nv*a.hr))
	a.bc = min(128, roundUp(max(p[2], 1), 32))
	for {
		a.masks = maxMasks(p, a, causal)
		if a.fits(chip) {
			break
		}
		switch {
		case a.bc > 32:
			a.bc = roundUp(a.bc/2, 32)
		case a.cpv > 1:
			a.cpv--
		case a.hr > cubeAlign:
			a.hr = roundUp(a.hr/2, cubeAlign)
		default:
			return nil, "", fmt.Errorf("no attention tile fits chip %s: even %d rows per vector core and %d keys per step exceed its buffers", chip.Name, a.hr, a.bc)
		}
	}
	copies := 1
	if a.ub(true) <= chip.Capacity(isa.Vec) {
		copies = 2
	}
	return []int{a.rows(), a.hr, a.bc, copies}, fmt.Sprintf("%d query rows per tile in %d chunks of %d (%d per vector core), %d keys per step, shrunk from 64-row chunks, 2 per vector core, and 128 keys until the buffers of %s fit; %d UB copies of the scores",
		a.rows(), a.chunks(), a.hr, a.cpv, a.bc, chip.Name, copies), nil
}

// tiledAttentionShape is the shape of a tiled op's kernel for nv vector cores per block.
func tiledAttentionShape(nv int, op *TileOp, tensors []GMTensor) attentionShape {
	a := newAttentionShape(nv, op, tensors)
	a.hr, a.bc = op.Tile[1], op.Tile[2]
	a.cpv = op.Tile[0] / (nv * a.hr)
	a.masks = maxMasks(op.Problem, a, op.Attrs.Bool("is_causal", false))
	return a
}

// newAttentionShape fills what the op's types decide.
func newAttentionShape(nv int, op *TileOp, tensors []GMTensor) attentionShape {
	q := tensors[op.Inputs[0]].Type
	a := attentionShape{nv: nv, dt: q.DType, mask: dtype.Invalid, scaleIn: dtype.Invalid, fillIn: dtype.Invalid}
	mask, fill, scale, _ := core.FlashAttentionInputs(op.Attrs)
	for _, in := range []struct {
		at int
		dt *dtype.DType
	}{{mask, &a.mask}, {fill, &a.fillIn}, {scale, &a.scaleIn}} {
		if in.at >= 0 {
			*in.dt = tensors[op.Inputs[in.at]].Type.DType
		}
	}
	p := attentionProblem(q, tensors[op.Inputs[1]].Type, attentionOutType(op, tensors))
	a.dp, a.dv = roundUp(max(p[3], 1), cubeAlign), roundUp(max(p[4], 1), cubeAlign)
	return a
}

// maxMasks is the most distinct masks any vector core needs over every tile.
func maxMasks(p []int, a attentionShape, causal bool) int {
	most := 0
	for v := 0; v < a.nv; v++ {
		seen := map[blockMask]bool{}
		for qi := 0; qi < ceilDiv(p[1], a.rows()); qi++ {
			for c := v; c < a.chunks(); c += a.nv {
				for _, m := range chunkMasks(p, a, causal, qi, c) {
					for j := 0; j < a.parts(); j++ {
						if pm := m.part(j, a.partCols()); pm.needed {
							seen[pm] = true
						}
					}
				}
			}
		}
		most = max(most, len(seen))
	}
	return most
}

// blockMask says which scores of one key block a chunk keeps: keys below vc, and with
// causal those with col - row <= d (TTRI's rule, in the block's own rows and columns).
// needed is false when it keeps them all.
type blockMask struct {
	needed, causal bool
	d, vc          int
}

// part is the mask of part j (keys from j*w) of a block with mask m, in the part's own
// columns.
func (m blockMask) part(j, w int) blockMask {
	p := blockMask{vc: min(w, max(0, m.vc-j*w))}
	if m.causal && m.d-j*w < p.vc-1 {
		p.causal, p.d = true, m.d-j*w
	}
	p.needed = p.causal || p.vc < w
	return p
}

// chunkMasks gives, for chunk c of the tile of query block qi, the mask of every key
// block the tile visits: all of them, or with causal those not wholly above the tile's
// last row.
func chunkMasks(p []int, a attentionShape, causal bool, qi, c int) []blockMask {
	l, s := p[1], p[2]
	row0 := qi*a.rows() + c*a.hr
	nk := ceilDiv(s, a.bc)
	if causal {
		last := min(l, (qi+1)*a.rows()) - 1
		nk = min(nk, last/a.bc+1)
	}
	out := make([]blockMask, nk)
	for kb := range out {
		col0 := kb * a.bc
		m := blockMask{vc: min(a.bc, s-col0)}
		if causal && col0+m.vc-1 > row0 {
			m.causal, m.d = true, row0-col0
		}
		m.needed = m.causal || m.vc < a.bc
		out[kb] = m
	}
	return out
}

// attentionBlocks deals the tiles to nb blocks by cost, longest first, each to the
// least loaded block (causal tiles near the top of the sequence visit few key
// blocks, those at the bottom many, so a round-robin would give some cores all the
// long ones); each block runs its tiles in index order.
func attentionBlocks(op *TileOp, nb int) [][]int {
	cost := func(t int) int { return attentionTileCost(op, t) }
	order := make([]int, op.NumTiles())
	for t := range order {
		order[t] = t
	}
	sort.SliceStable(order, func(i, j int) bool { return cost(order[i]) > cost(order[j]) })
	load := make([]int, nb)
	blocks := make([][]int, nb)
	for _, t := range order {
		b := 0
		for i := range load {
			if load[i] < load[b] {
				b = i
			}
		}
		load[b] += cost(t)
		blocks[b] = append(blocks[b], t)
	}
	for _, b := range blocks {
		sort.Ints(b)
	}
	return blocks
}

// attentionTileCost is the work of tile t in key blocks visited (1 for every tile
// without is_causal): causal tiles visit the blocks up to their last row.
func attentionTileCost(op *TileOp, t int) int {
	if !op.Attrs.Bool("is_causal", false) {
		return 1
	}
	last := min(op.Problem[1], (t%op.Grid[1]+1)*op.Tile[0]) - 1
	return min(ceilDiv(op.Problem[2], op.Tile[2]), last/op.Tile[2]+1) + 1 // + 1: loading Q, storing O
}

// attentionCandidates lists the attention tilings that fit the chip, for the tile
// search: chunks of 16 to 64 rows (up to the queries a vector core gets), one or two
// per vector core, 32 to 256 keys per step, the scores in two UB copies when they fit.
// Smaller tiles than the fixed rule's spread few queries over more cores, at the price
// of loading every key block once per tile. Each carries the device's bound for it.
func attentionCandidates(est *estimator, tg *TileGraph, op *TileOp) []candidate {
	chip := est.chip
	tensors := tg.Tensors
	a := newAttentionShape(chip.VectorCores/chip.CubeCores, op, tensors)
	if a.nv < 1 || 3*a.nv > isa.NumQueues {
		return nil
	}
	p := op.Problem
	causal := op.Attrs.Bool("is_causal", false)
	var out []candidate
	for hr := cubeAlign; hr <= min(64, roundUp(ceilDiv(max(p[1], 1), a.nv), cubeAlign)); hr += cubeAlign {
		for cpv := 1; cpv <= 2 && (cpv == 1 || a.nv*hr < p[1]); cpv++ {
			for bc := min(256, roundUp(max(p[2], 1), 32)); bc >= 32; bc = roundUp(bc/2, 32) {
				c := a
				c.hr, c.cpv, c.bc = hr, cpv, bc
				c.masks = maxMasks(p, c, causal)
				if c.emptyPart(p[2]) {
					continue
				}
				if !c.fits(chip) {
					if bc == 32 {
						break
					}
					continue
				}
				copies := 1
				if c.ub(true) <= chip.Capacity(isa.Vec) {
					copies = 2
				}
				tile := []int{c.rows(), hr, bc, copies}
				out = append(out, candidate{tile: tile, bound: attentionBound(chip, op, tensors, c, tile), instrs: int64(ceilDiv(max(op.Problem[2], 1), bc) * cpv), shape: [3]int{tile[0]}})
				if bc == 32 {
					break
				}
			}
		}
	}
	return out
}

// attentionBound is the device's bound for tile: the larger of the busiest cube
// core's and the busiest vector core's (attentionWork).
func attentionBound(chip *device.Chip, op *TileOp, tensors []GMTensor, a attentionShape, tile []int) int64 {
	cube, vec := attentionWork(chip, op, tensors, a, tile)
	return max(chip.Bound(cube), chip.Bound(vec))
}

// attentionWork counts what the busiest block's cube core and one of its vector cores
// do with tile (codegen_attention.go), and what the task moves through HBM at least
// (q, k, v and the output once). Per key block the cube loads K^T and V, moves them
// and each chunk's P to L0, pops P and makes both products of every chunk; a vector
// core pops each of its chunks' scores and product and runs the online softmax: five
// instructions over the scores, two over the product and seven over per-row columns.
func attentionWork(chip *device.Chip, op *TileOp, tensors []GMTensor, a attentionShape, tile []int) (cube, vec device.Work) {
	probe := *op
	probe.Tile = tile
	probe.Grid = tileGrid(op.Kind, op.Problem, tile)
	size := int64(a.dt.Size())
	hr, bc, dp, dv, nc := int64(a.hr), int64(a.bc), int64(a.dp), int64(a.dv), int64(a.chunks())
	causal := op.Attrs.Bool("is_causal", false)
	for _, b := range dealTiles(nil, &probe, min(probe.NumTiles(), chip.Cores(isa.Cube))) {
		var c, v device.Work
		c.DType, c.Starts, v.Starts = a.dt, map[isa.Pipe]int64{}, map[isa.Pipe]int64{}
		for _, t := range b {
			kb := int64(ceilDiv(max(op.Problem[2], 1), a.bc))
			if causal {
				kb = int64(attentionTileCost(&probe, t) - 1)
			}
			c.MACs += nc * hr * kb * bc * (dp + dv)
			c.LoadBytes += (nc*hr*dp + kb*bc*(dp+dv) + nc*kb*hr*bc) * size
			c.Starts[isa.PipeM] += 2 * nc * kb
			c.Starts[isa.PipeMTE1] += (2 + 2*nc) * kb
			steps := int64(a.cpv) * kb
			v.LoadBytes += steps * hr * (bc + dv) * 4
			v.VectorBytes += steps * hr * (5*bc + 2*dv) * 4
			v.Starts[isa.PipeV] += int64(14+9*(a.parts()-1)) * steps
		}
		if c.MACs > cube.MACs {
			cube = c
		}
		if v.VectorBytes > vec.VectorBytes {
			vec = v
		}
	}
	for _, t := range append(append([]int(nil), op.Inputs...), op.Output) {
		cube.HBMBytes += int64(tensors[t].Type.Bytes())
	}
	return cube, vec
}
