package lower

import (
	"pypto/core"
	"pypto/isa"
)

// Rows too long for the UB are computed in chunks of cw columns (cw divides C), in
// passes: pass p reads every chunk of the tile's rows, computing the whole-row steps
// the reductions of level p+1 need (and, in the last pass, the result) and folding each
// chunk's row reduction into an accumulator; between passes the per-row steps that
// waited for those reductions run. Softmax so takes three passes over x (its max, the
// sum of exp(x - max), the result), which recompute the steps before each reduction
// instead of keeping them in GM: still one kernel, reading x three times and writing
// the result once. The accumulators add fp32 partial sums of chunks, as the unfused
// reduction adds those of its column tiles.

// emitChunkedTile generates one tile of rows [r0, r0+vr) of a chunked row kernel.
func (k *rowsKernel) emitChunkedTile(r0, vr int) {
	k.r0, k.vr = r0, vr
	p, body := k.p, k.p.body
	paramIndex := map[core.Value]int{}
	for i, v := range body.Params {
		paramIndex[v] = i
	}
	res := body.Outputs[0]
	k.c0, k.cw = 0, p.cols
	k.slot = k.chunkStep % k.slots
	k.rowSteps(0, paramIndex)
	for pass := 0; pass < p.passes; pass++ {
		need := k.neededIn(pass)
		k.lastUse = make([]int, len(body.Nodes))
		for i, n := range body.Nodes {
			if need[core.Value(i)] {
				for _, x := range n.Inputs {
					k.lastUse[x] = i
				}
			}
		}
		k.lastUse[res] = len(body.Nodes)
		accs := map[core.Value]int{}
		for c0 := 0; c0 < p.cols; c0 += k.tc {
			k.c0, k.cw = c0, k.tc
			k.slot = k.chunkStep % k.slots
			k.chunkStep++
			for i, n := range body.Nodes {
				v := core.Value(i)
				switch {
				case !need[v]:
				case n.Op == core.OpParam:
					k.load(v, paramIndex[v])
				case rowReduction(body, n):
					k.accumulate(v, n, accs)
				default:
					k.step(v, n)
				}
				for _, x := range uniqueInputs(n) { // whole-row values this pass reads no more
					if t, ok := k.tiles[x]; ok && need[v] && k.lastUse[x] == i && p.kind[x] == kindFull && !p.invariant[x] {
						k.release(t)
						delete(k.tiles, x)
					}
				}
			}
			if need[res] && p.kind[res] == kindFull {
				k.e.emit(isa.TSTORE, isa.GMOp(k.window(k.out, kindFull)), isa.TileOp(k.tiles[res]))
			}
			k.endChunk()
		}
		k.c0, k.cw, k.lastUse = 0, p.cols, p.lastUse
		for i, n := range body.Nodes {
			if v := core.Value(i); need[v] && rowReduction(body, n) {
				k.finishReduction(v, n, accs[v])
			}
		}
		k.rowSteps(pass+1, paramIndex)
	}
	if p.kind[res] == kindRow {
		k.e.emit(isa.TSTORE, isa.GMOp(k.window(k.out, kindRow)), isa.TileOp(k.tiles[res]))
	}
	for i := range body.Nodes {
		if t, ok := k.tiles[core.Value(i)]; ok {
			k.release(t)
			delete(k.tiles, core.Value(i))
		}
	}
}

// neededIn is what pass computes in every chunk: the reductions of level pass+1, the
// result when it is whole rows and this is the last pass, and the whole-row values and
// inputs they read (per-row values are ready by then; invariants are made on use).
func (k *rowsKernel) neededIn(pass int) map[core.Value]bool {
	p, body := k.p, k.p.body
	need := map[core.Value]bool{}
	var mark func(v core.Value)
	mark = func(v core.Value) {
		if need[v] || p.invariant[v] || p.kind[v] != kindFull {
			return
		}
		need[v] = true
		for _, x := range body.Nodes[v].Inputs {
			mark(x)
		}
	}
	for i, n := range body.Nodes {
		v := core.Value(i)
		if rowReduction(body, n) && p.level[v] == pass+1 {
			need[v] = true
			mark(n.Inputs[0])
		}
	}
	if res := body.Outputs[0]; p.kind[res] == kindFull && pass == p.passes-1 {
		mark(res)
	}
	return need
}

// rowSteps loads the per-row inputs (level 0) and runs the per-row steps of a level,
// whose reductions are done.
func (k *rowsKernel) rowSteps(level int, paramIndex map[core.Value]int) {
	p, body := k.p, k.p.body
	for i, n := range body.Nodes {
		v := core.Value(i)
		if p.invariant[v] || p.kind[v] != kindRow || p.level[v] != level || rowReduction(body, n) {
			continue
		}
		switch {
		case n.Op == core.OpParam:
			k.load(v, paramIndex[v])
		case n.Op == "reshape":
			k.bind(v, k.tiles[n.Inputs[0]])
		default:
			k.step(v, n)
		}
	}
}

// accumulate folds the current chunk's row reduction into v's accumulator.
func (k *rowsKernel) accumulate(v core.Value, n *core.Node, accs map[core.Value]int) {
	red := reductions[n.Op]
	x := k.operand(n.Inputs[0], kindFull)
	acc := red.accumulateType(k.e.prog.Tiles[x].DType, n.Type.DType)
	if k.e.prog.Tiles[x].DType != acc {
		c := k.alloc(kindFull, acc, false)
		k.e.emit(isa.TCVT, isa.TileOp(c), isa.TileOp(x))
		x = c
		defer k.releaseNow(c)
	}
	part := k.alloc(kindRow, acc, false)
	k.e.emit(red.row, isa.TileOp(part), isa.TileOp(x))
	sum, ok := accs[v]
	if !ok {
		accs[v] = part
		return
	}
	k.e.emit(red.combine, isa.TileOp(sum), isa.TileOp(sum), isa.TileOp(part))
	k.releaseNow(part)
}

// finishReduction makes v from its accumulator, converted to v's dtype.
func (k *rowsKernel) finishReduction(v core.Value, n *core.Node, acc int) {
	if dt := n.Type.DType; k.e.prog.Tiles[acc].DType != dt {
		o := k.alloc(kindRow, dt, false)
		k.e.emit(isa.TCVT, isa.TileOp(o), isa.TileOp(acc))
		k.releaseNow(acc)
		acc = o
	}
	k.bind(v, acc)
}

// endChunk returns the chunk's whole-row tiles and its per-column invariants to the pools.
func (k *rowsKernel) endChunk() {
	for i := range k.p.body.Nodes {
		v := core.Value(i)
		if t, ok := k.tiles[v]; ok && k.p.kind[v] == kindFull {
			k.release(t)
			delete(k.tiles, v)
		}
	}
	for _, t := range k.chunkTiles {
		k.releaseNow(t)
	}
	k.chunkTiles = nil
	for key := range k.fixed {
		if kind := rowKind(key[1]); kind == kindFull || kind == kindCol {
			delete(k.fixed, key)
		}
	}
}
