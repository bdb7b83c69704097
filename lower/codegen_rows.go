package lower

import (
	"fmt"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// The row kernel of a fused_rows op: each tile is tr whole rows of the row space. Its
// full-row inputs are loaded once, every step of the body runs on chip (reductions
// with TROWSUM/TROWMAX/..., per-row and per-column operands broadcast by the
// TROWEXPAND*/TCOLEXPAND* forms of the binary instructions), and the result is stored
// once. Tiles of the three kinds are [tr, tc] (full rows, tc the row length rounded up
// to whole 32-byte blocks, computed over the C valid columns), [tr, rowTileCols] (one
// value per row, in column 0) and [1, tc] (one value per column).
//
// UB is spent on full-row tiles, so they are recycled: a value's tile returns to a pool
// after its last reader, and single-instruction steps write in place over an operand
// that dies there. Tiles that loads or stores touch rotate through two or three slots,
// so the next tile's load overlaps this tile's compute and store; the rest are read and
// written by the vector pipe alone, in order, and one copy serves every tile.

// rowTileCols is the width of a per-row tile: 32 columns make whole 32-byte rows for
// every dtype, so a step may convert a per-row value between dtypes in place.
const rowTileCols = 32

// rowExpandOps and colExpandOps are binary steps that take a per-row (per-column)
// second operand directly; commutative ones take it first too.
var (
	rowExpandOps = map[string]isa.Opcode{"add": isa.TROWEXPANDADD, "sub": isa.TROWEXPANDSUB, "mul": isa.TROWEXPANDMUL,
		"div": isa.TROWEXPANDDIV, "maximum": isa.TROWEXPANDMAX, "minimum": isa.TROWEXPANDMIN}
	colExpandOps = map[string]isa.Opcode{"add": isa.TCOLEXPANDADD, "sub": isa.TCOLEXPANDSUB, "mul": isa.TCOLEXPANDMUL,
		"div": isa.TCOLEXPANDDIV, "maximum": isa.TCOLEXPANDMAX, "minimum": isa.TCOLEXPANDMIN}
	commutative = map[string]bool{"add": true, "mul": true, "maximum": true, "minimum": true}
)

// rowsInstructions are the instructions a row kernel emits besides its steps' bodies.
var rowsInstructions = func() []isa.Opcode {
	ops := append([]isa.Opcode{isa.TLOAD, isa.TSTORE, isa.TCVT, isa.TEXPANDS, isa.TROWEXPAND, isa.TCOLEXPAND}, dynamicInstructions...)
	for _, r := range reductions {
		ops = append(ops, r.row)
	}
	for _, m := range []map[string]isa.Opcode{rowExpandOps, colExpandOps} {
		for _, op := range m {
			ops = append(ops, op)
		}
	}
	return ops
}()

// inPlace reports whether a step is one instruction that may write over its operand.
func inPlace(op string) bool {
	_, single := singleInstruction[op]
	return single || op == "add" || op == "mul" || op == "relu" || op == "cast"
}

// rowsKernel is the state of one block's code generation.
type rowsKernel struct {
	e      *emitter
	p      *rowsPlan
	tr, tc int
	params []int // program param of each body param
	out    int   // program param of the result
	slot   int   // the current tile's slot
	slots  int   // how many slots tiles that loads or stores touch rotate through
	r0     int   // the current tile's first row
	vr     int   // its valid rows
	// in a tile loop over rows known at run time (codegen_dynamic_rows.go), the
	// registers holding the tile's element offset and valid rows (r0 and vr are then
	// the windows' static bounds: 0 and the tile's rows)
	offReg, vrReg isa.RegRef
	rowReg        isa.RegRef // the tile's first row, the offset of per-row windows
	// c0 and cw are the first column and the width of the columns the current steps
	// compute: all C of them, or one chunk of a row too long for the UB (rows_chunked.go)
	c0, cw int
	// tile of each body value in the current tile; invariant values keep theirs
	// (per kind, as a scalar may be needed as a row or a column tile)
	tiles   map[core.Value]int
	fixed   map[[2]int]int // (value, kind) -> tile of an invariant value
	holders map[int]int    // live values per tile
	free    map[string][]int
	slotOf  map[int]int     // the slot of each tile that loads or stores touch
	kindOf  map[int]rowKind // kind of each tile declared
	feeders map[int]bool    // pooled tiles of invariants read by one invariant, not made yet
	// chunked kernels make per-column and whole-row invariants per chunk: their tiles
	// return to the pool, and their cache entries go, when the chunk ends
	chunked    bool
	chunkTiles []int
	chunkStep  int // chunks emitted so far, for the slot of the next one
	// lastUse is the plan's, or in a pass over chunks the last reader within the pass
	// (later passes compute what they need again)
	lastUse   []int
	full, row *vecBody // scratch of step bodies, per kind (their shapes differ)
}

func newRowsKernel(e *emitter, p *rowsPlan, tr, tc, slots int, params []int, out int) *rowsKernel {
	k := &rowsKernel{e: e, p: p, tr: tr, tc: tc, slots: slots, params: params, out: out,
		tiles: map[core.Value]int{}, fixed: map[[2]int]int{}, holders: map[int]int{}, free: map[string][]int{}, slotOf: map[int]int{}, kindOf: map[int]rowKind{}, feeders: map[int]bool{}}
	k.cw = p.cols
	k.lastUse = p.lastUse
	k.chunked = tc < p.cols // a chunk of each row per step (rows_chunked.go)
	k.full = &vecBody{e: e, tr: tr, tc: tc, space: p.space}
	k.row = &vecBody{e: e, tr: tr, tc: rowTileCols, space: p.space}
	return k
}

// shape is the tile shape of a kind.
func (k *rowsKernel) shape(kind rowKind) (rows, cols int) {
	switch kind {
	case kindFull:
		return k.tr, k.tc
	case kindCol:
		return 1, k.tc
	}
	return k.tr, rowTileCols
}

// declare adds a tile of a kind; full and column tiles compute over the C valid columns.
func (k *rowsKernel) declare(name string, kind rowKind, dt dtype.DType) int {
	rows, cols := k.shape(kind)
	t := k.e.tile(name, isa.Vec, dt, rows, cols)
	k.kindOf[t] = kind
	if (kind == kindFull || kind == kindCol) && k.p.cols < k.tc {
		k.e.prog.Tiles[t].ValidCols = k.p.cols
	}
	return t
}

// alloc takes a tile of a kind and dtype from the pool (of the current slot for tiles
// that loads or stores touch), declaring one (or one per slot) when none is free.
func (k *rowsKernel) alloc(kind rowKind, dt dtype.DType, slotted bool) int {
	key := fmt.Sprintf("%s_%s", kind, dt)
	if slotted {
		key = fmt.Sprintf("%s_slot%d", key, k.slot)
	}
	if free := k.free[key]; len(free) > 0 {
		t := free[len(free)-1]
		k.free[key] = free[:len(free)-1]
		return t
	}
	name := fmt.Sprintf("%s_%s_%d", kind, dt, len(k.e.prog.Tiles))
	if !slotted {
		return k.declare(name, kind, dt)
	}
	var mine int
	for s := 0; s < k.slots; s++ {
		t := k.declare(fmt.Sprintf("%s_%d", name, s), kind, dt)
		k.slotOf[t] = s
		if s == k.slot {
			mine = t
			continue
		}
		other := fmt.Sprintf("%s_%s_slot%d", kind, dt, s)
		k.free[other] = append(k.free[other], t)
	}
	return mine
}

// release returns a tile to its pool once no live value holds it.
func (k *rowsKernel) release(t int) {
	if k.holders[t]--; k.holders[t] > 0 {
		return
	}
	key := fmt.Sprintf("%s_%s", k.kindOf[t], k.e.prog.Tiles[t].DType)
	if s, ok := k.slotOf[t]; ok {
		key = fmt.Sprintf("%s_slot%d", key, s)
	}
	k.free[key] = append(k.free[key], t)
}

// bind makes tile t hold value v for the current tile.
func (k *rowsKernel) bind(v core.Value, t int) {
	k.tiles[v] = t
	k.holders[t]++
}

// emitTile generates one tile of rows [r0, r0+vr) in slot s.
func (k *rowsKernel) emitTile(s, r0, vr int) {
	k.slot, k.r0, k.vr = s, r0, vr
	body := k.p.body
	paramIndex := map[core.Value]int{}
	for i, v := range body.Params {
		paramIndex[v] = i
	}
	for i, n := range body.Nodes {
		v := core.Value(i)
		if k.p.invariant[v] {
			continue // made on first use (operand)
		}
		switch {
		case n.Op == core.OpParam:
			k.load(v, paramIndex[v])
		case n.Op == "reshape":
			k.bind(v, k.tiles[n.Inputs[0]])
		case rowReduction(body, n):
			k.reduce(v, n)
		default:
			k.step(v, n)
		}
		for _, x := range uniqueInputs(n) {
			if k.p.lastUse[x] == i && !k.p.invariant[x] {
				k.release(k.tiles[x])
			}
		}
	}
	res := body.Outputs[0]
	k.e.emit(isa.TSTORE, isa.GMOp(k.window(k.out, k.p.kind[res])), isa.TileOp(k.tiles[res]))
	k.release(k.tiles[res])
}

// isSlot reports whether tile t is one that loads or stores touch.
func isSlot(slotOf map[int]int, t int) bool {
	_, ok := slotOf[t]
	return ok
}

// uniqueInputs lists n's inputs once each, in order (mul(c, c) reads c once).
func uniqueInputs(n *core.Node) []core.Value {
	var out []core.Value
	seen := map[core.Value]bool{}
	for _, x := range n.Inputs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// load brings the current tile's window of body param v (the index-th) into a tile
// that loads touch.
func (k *rowsKernel) load(v core.Value, index int) {
	kind := k.p.kind[v]
	t := k.alloc(kind, k.p.body.Type(v).DType, true)
	view := k.window(k.params[index], kind)
	if period := k.p.period[v]; period > 0 { // tiles never straddle a period (rowsTile)
		view.Offset = k.r0%period*k.p.cols + k.c0
	}
	k.e.emit(isa.TLOAD, isa.TileOp(t), isa.GMOp(view))
	k.bind(v, t)
}

// window is the GM view of the current tile's rows of a tensor of a kind, flattened
// to [rows, C] (full), [rows] (per row), [C] (per column) or one element (scalar,
// repeated along the rows).
func (k *rowsKernel) window(param int, kind rowKind) isa.GMView {
	c := k.p.cols
	switch kind {
	case kindFull:
		return isa.GMView{Param: param, Offset: k.r0*c + k.c0, Rows: k.vr, Cols: k.cw, RowStride: c, ColStride: 1, OffsetReg: k.offReg, RowsReg: k.vrReg}
	case kindRow:
		return isa.GMView{Param: param, Offset: k.r0, Rows: k.vr, Cols: 1, RowStride: 1, ColStride: 1, OffsetReg: k.rowReg, RowsReg: k.vrReg}
	case kindCol:
		return isa.GMView{Param: param, Offset: k.c0, Rows: 1, Cols: k.cw, RowStride: c, ColStride: 1}
	}
	return isa.GMView{Param: param, Rows: k.tr, Cols: 1, RowStride: 0, ColStride: 1}
}

// operand returns the tile of value x as an operand of a step of kind want: its own
// tile, or for an invariant value the tile made once for that kind (a scalar becomes
// a per-row tile for full and per-row steps, a per-column one for per-column steps).
func (k *rowsKernel) operand(x core.Value, want rowKind) int {
	if !k.p.invariant[x] {
		return k.tiles[x]
	}
	kind := k.p.kind[x]
	if kind == kindScalar {
		kind = kindRow
		if want == kindCol {
			kind = kindCol
		}
	}
	key := [2]int{int(x), int(kind)}
	if t, ok := k.fixed[key]; ok {
		return t
	}
	n := k.p.body.Nodes[x]
	if n.Op == "reshape" {
		return k.operand(n.Inputs[0], want)
	}
	// A whole-row or per-column value read only to compute another invariant (a weight
	// loaded to be converted) lends its tile back once that one is made.
	u := k.p.soleUser[x]
	feeder := (kind == kindFull || kind == kindCol) && u >= 0 && k.p.invariant[u]
	var t int
	if k.chunked && (kind == kindFull || kind == kindCol) { // made again for every chunk
		t = k.alloc(kind, n.Type.DType, false)
		k.chunkTiles = append(k.chunkTiles, t)
		feeder = false
	} else if feeder {
		t = k.alloc(kind, n.Type.DType, false)
		k.feeders[t] = true
	} else {
		t = k.declare(fmt.Sprintf("inv%d_%s", x, kind), kind, n.Type.DType)
	}
	switch {
	case n.Op == core.OpParam:
		pi := 0
		for i, p := range k.p.body.Params {
			if p == x {
				pi = i
			}
		}
		view := k.window(k.params[pi], k.p.kind[x])
		if k.p.kind[x] == kindScalar && kind == kindCol {
			view = isa.GMView{Param: k.params[pi], Rows: 1, Cols: k.cw, RowStride: 0, ColStride: 0}
		}
		k.e.emit(isa.TLOAD, isa.TileOp(t), isa.GMOp(view))
	default:
		args := make([]int, len(n.Inputs))
		for j, in := range n.Inputs {
			args[j] = k.operand(in, kind)
		}
		k.compute(n, kind, t, args)
		for _, a := range args {
			if k.feeders[a] {
				delete(k.feeders, a)
				k.releaseNow(a)
			}
		}
	}
	k.fixed[key] = t
	return t
}

// reduce emits a row reduction: the input converted to the accumulate type, reduced
// along its rows, converted to the result dtype.
func (k *rowsKernel) reduce(v core.Value, n *core.Node) {
	red := reductions[n.Op]
	x := k.operand(n.Inputs[0], kindFull)
	in, out := k.e.prog.Tiles[x].DType, n.Type.DType
	acc := red.accumulateType(in, out)
	if in != acc {
		c := k.alloc(kindFull, acc, false)
		k.e.emit(isa.TCVT, isa.TileOp(c), isa.TileOp(x))
		x = c
		defer k.releaseNow(c)
	}
	r := k.alloc(kindRow, acc, false)
	k.e.emit(red.row, isa.TileOp(r), isa.TileOp(x))
	if acc != out {
		o := k.alloc(kindRow, out, false)
		k.e.emit(isa.TCVT, isa.TileOp(o), isa.TileOp(r))
		k.releaseNow(r)
		r = o
	}
	k.bind(v, r)
}

// releaseNow returns a tile no value holds to its pool.
func (k *rowsKernel) releaseNow(t int) {
	k.holders[t]++
	k.release(t)
}

// step emits an elementwise step of kind full or per-row for the current tile. A
// single instruction may write over an operand that dies here (the result over a tile
// that loads or stores touch, as the store reads it).
func (k *rowsKernel) step(v core.Value, n *core.Node) {
	kind := k.p.kind[v]
	args := make([]int, len(n.Inputs))
	for j, x := range n.Inputs {
		args[j] = k.operand(x, kind)
	}
	isRoot := v == k.p.body.Outputs[0]
	dst := -1
	// Per-row values of a pass over chunks stay for every later pass, whose steps read
	// them again, so only whole-row steps write in place there.
	if inPlace(n.Op) && (!k.chunked || kind == kindFull) {
		for _, x := range uniqueInputs(n) {
			t := k.tiles[x]
			if k.lastUse[x] == int(v) && !k.p.invariant[x] && k.holders[t] == 1 && (!isRoot || isSlot(k.slotOf, t)) &&
				k.e.prog.Tiles[t].DType == n.Type.DType && k.kindOf[t] == kind {
				dst = t
				break
			}
		}
	}
	if dst < 0 {
		dst = k.alloc(kind, n.Type.DType, isRoot)
	}
	k.compute(n, kind, dst, args)
	k.bind(v, dst)
}

// compute emits step n of a kind into dst from its operand tiles: operands converted
// to the dtypes the op computes in, then a broadcasting instruction when one operand
// of a binary step is per row or per column, else the op's own body over operands
// expanded to dst's shape.
func (k *rowsKernel) compute(n *core.Node, kind rowKind, dst int, args []int) {
	l := lowerings[n.Op]
	if l.body == nil { // a cast: one conversion, straight into dst
		k.e.emit(isa.TCVT, isa.TileOp(dst), isa.TileOp(args[0]))
		return
	}
	types := make([]dtype.DType, len(args))
	for j, a := range args {
		types[j] = k.e.prog.Tiles[a].DType
	}
	var temps []int
	want := l.operandTypes(types, n.Type.DType)
	for j, a := range args {
		if types[j] != want[j] {
			c := k.alloc(k.kindOf[a], want[j], false)
			k.e.emit(isa.TCVT, isa.TileOp(c), isa.TileOp(a))
			args[j] = c
			temps = append(temps, c)
		}
	}
	defer func() {
		for _, t := range temps {
			k.releaseNow(t)
		}
	}()
	if kind == kindFull && len(args) == 2 && n.Type.DType.IsFloat() {
		a, b := args[0], args[1]
		if k.kindOf[a] != kindFull && k.kindOf[b] == kindFull && commutative[n.Op] {
			a, b = b, a
		}
		if k.kindOf[a] == kindFull {
			ops := map[rowKind]map[string]isa.Opcode{kindRow: rowExpandOps, kindCol: colExpandOps}[k.kindOf[b]]
			if op, ok := ops[n.Op]; ok {
				k.e.emit(op, isa.TileOp(dst), isa.TileOp(a), isa.TileOp(b))
				return
			}
		}
	}
	for j, a := range args {
		if ak := k.kindOf[a]; ak != kind {
			c := k.alloc(kind, k.e.prog.Tiles[a].DType, false)
			expand := isa.TROWEXPAND
			if ak == kindCol {
				expand = isa.TCOLEXPAND
			}
			k.e.emit(expand, isa.TileOp(c), isa.TileOp(a))
			args[j] = c
			temps = append(temps, c)
		}
	}
	b := k.row
	if kind == kindFull {
		b = k.full
	} else if kind == kindCol {
		b = &vecBody{e: k.e, tr: 1, tc: k.tc, space: k.p.space}
	}
	b.attrs = n.Attrs
	mark := len(k.e.prog.Tiles)
	l.body(b, dst, args)
	for t := mark; t < len(k.e.prog.Tiles); t++ { // the body's scratch computes where its operands are valid
		if d := &k.e.prog.Tiles[t]; (kind == kindFull || kind == kindCol) && d.Cols == k.tc && k.p.cols < k.tc {
			d.ValidCols = k.p.cols
		}
	}
}

// rowsKernelOf starts the code generation of a block of the fused_rows op op.
func rowsKernelOf(e *emitter, op *TileOp) *rowsKernel {
	p, err := rowsPlanOf(op.Attrs)
	if err != nil {
		panic(fmt.Sprintf("fused_rows op with a body that is no row kernel reached code generation: %v", err)) // checked when fused
	}
	params := make([]int, len(op.Inputs))
	for i, t := range op.Inputs {
		params[i] = e.params[t]
	}
	k := newRowsKernel(e, p, op.Tile[0], op.Tile[1], op.Tile[2], params, e.params[op.Output])
	return k
}

// emitRows generates a vector block of a fused_rows op: its tiles of tr rows, slots
// alternating.
func emitRows(e *emitter, tg *TileGraph, op *TileOp, tiles []int) {
	k := rowsKernelOf(e, op)
	p := k.p
	for step, t := range tiles {
		r0 := t * k.tr
		if k.chunked {
			k.emitChunkedTile(r0, min(k.tr, p.rows-r0))
		} else {
			k.emitTile(step%k.slots, r0, min(k.tr, p.rows-r0))
		}
	}
}

// rowsPlanOf plans the body of a fused_rows op.
func rowsPlanOf(attrs core.Attrs) (*rowsPlan, error) {
	body, err := core.FusedBody(attrs)
	if err != nil {
		return nil, err
	}
	return planRows(body)
}
