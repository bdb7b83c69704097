package ptoas

import (
	"fmt"
	"strings"

	"pypto/dtype"
	"pypto/isa"
)

// The pto ops: tensor views and subviews (GM windows), tiles, flags, and the
// instructions.

func (b *builder) constInt(pos Pos, name, what string) int {
	v := b.scalarOf(pos, name)
	if v.kind != vConst {
		b.fail(pos, "%s must be known when the program is written (a constant or the block index)", what)
	}
	return int(v.i)
}

// tensorView: pto.make_tensor_view %ptr, shape = [...] strides = [...]. The strides
// must be constants; the shape only documents the tensor.
func (b *builder) tensorView(o *mop) {
	if len(o.operands) != 1 || len(o.lists) != 2 {
		b.fail(o.pos, "pto.make_tensor_view takes a pointer, a shape and strides")
	}
	ptr := b.get(o.pos, o.operands[0])
	g := &gmView{el: ptrElem(o.resTypes)}
	switch ptr.kind {
	case vPtr:
		g.param = ptr.param
	case vQueue:
		g.param = -1 - ptr.param
	default:
		b.fail(o.pos, "pto.make_tensor_view of %s, which is not a pointer argument", o.operands[0])
	}
	if len(o.lists[0]) != len(o.lists[1]) || len(o.lists[1]) < 2 || len(o.lists[1]) > 3 {
		b.fail(o.pos, "a tensor view of rank %d: PTO-AS views here are of rank 2 (or 3 with a unit leading stride)", len(o.lists[1]))
	}
	for _, s := range o.lists[1] {
		st := b.constInt(o.pos, s, "a tensor view's stride")
		if st < 0 {
			b.fail(o.pos, "negative stride %d", st)
		}
		g.strides = append(g.strides, st)
	}
	b.define(o, &val{kind: vView, gm: g})
}

func ptrElem(types []string) string {
	if len(types) == 0 {
		return ""
	}
	t := types[0]
	if i := strings.LastIndex(t, "x"); i >= 0 {
		return strings.TrimSuffix(t[i+1:], ">")
	}
	return ""
}

// subview: a window of a tensor view at offsets, of sizes (bounded by the tile_view
// type's static shape when a register gives them).
func (b *builder) subview(o *mop) {
	if len(o.operands) != 1 || len(o.lists) != 2 {
		b.fail(o.pos, "pto.subview takes a tensor view, offsets and sizes")
	}
	src := b.get(o.pos, o.operands[0])
	if src.kind != vView {
		b.fail(o.pos, "pto.subview of %s, which is not a tensor view", o.operands[0])
	}
	g := *src.gm
	rank := len(g.strides)
	if len(o.lists[0]) != rank || len(o.lists[1]) != rank {
		b.fail(o.pos, "pto.subview of a rank-%d view with %d offsets and %d sizes", rank, len(o.lists[0]), len(o.lists[1]))
	}
	g.offsets, g.sizes = nil, nil
	for i := range rank {
		g.offsets = append(g.offsets, b.scalarOf(o.pos, o.lists[0][i]))
		g.sizes = append(g.sizes, b.scalarOf(o.pos, o.lists[1][i]))
	}
	if rank == 3 {
		if s := g.sizes[0]; s.kind != vConst || s.i != 1 {
			b.fail(o.pos, "a window of a rank-3 view must have size 1 in its first dimension")
		}
	}
	shape, el, ok := tileViewShape(o.resTypes)
	if !ok {
		b.fail(o.pos, "pto.subview's result type is %v, want !pto.tile_view<RxCxT>", o.resTypes)
	}
	g.bounds, g.el = shape, el
	b.define(o, &val{kind: vSub, gm: &g})
}

// tileViewShape reads !pto.tile_view<RxCxT>.
func tileViewShape(types []string) ([]int, string, bool) {
	if len(types) != 1 || !strings.HasPrefix(types[0], "!pto.tile_view<") {
		return nil, "", false
	}
	parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(types[0], "!pto.tile_view<"), ">"), "x")
	if len(parts) != 3 {
		return nil, "", false
	}
	r, ok1 := parseInt(parts[0])
	c, ok2 := parseInt(parts[1])
	if !ok1 || !ok2 || r < 0 || c < 0 {
		return nil, "", false
	}
	return []int{r, c}, parts[2], true
}

// gm turns a subview into our GM view: offset = sum of offsets times strides (a
// register plus a constant folds into the view; anything else is computed into a
// register first), rows and cols the sizes (a register's bounded by the type).
func (b *builder) gm(pos Pos, name string) isa.Operand {
	v := b.get(pos, name)
	if v.kind != vSub {
		b.fail(pos, "%s is not a GM window (a pto.subview)", name)
	}
	g := v.gm
	if g.param < 0 {
		b.fail(pos, "a window of a queue's buffer outside the queue's ops")
	}
	rank := len(g.strides)
	rs, cs := g.strides[rank-2], g.strides[rank-1]
	var off *val = &val{kind: vConst}
	for i := range rank {
		term := b.fold(&val{kind: vExpr, op: "mul", a: g.offsets[i], b: &val{kind: vConst, i: int64(g.strides[i])}})
		off = b.fold(&val{kind: vExpr, op: "add", a: off, b: term})
	}
	view := isa.GMView{Param: g.param, RowStride: rs, ColStride: cs}
	switch off.kind {
	case vConst:
		view.Offset = int(off.i)
	case vReg:
		b.current(pos, off)
		view.OffsetReg, view.Offset = isa.UseReg(off.reg), int(off.i)
	default:
		if off.kind == vExpr && off.op == "add" && off.b.kind == vConst { // computed part + constant
			view.Offset = int(off.b.i)
			off = off.a
		}
		r := b.newReg("off")
		b.into(pos, r, off)
		b.version[r]++
		view.OffsetReg = isa.UseReg(r)
	}
	for i, dst := range []*int{&view.Rows, &view.Cols} {
		s := g.sizes[rank-2+i]
		bound := g.bounds[i]
		switch {
		case s.kind == vConst:
			if int(s.i) != bound {
				b.fail(pos, "a window of %d %s whose type says %d", s.i, []string{"rows", "cols"}[i], bound)
			}
			*dst = bound
		case s.kind == vReg && s.i == 0:
			b.current(pos, s)
			*dst = bound
			if i == 0 {
				view.RowsReg = isa.UseReg(s.reg)
			} else {
				view.ColsReg = isa.UseReg(s.reg)
			}
		default:
			r := b.newReg("size")
			b.into(pos, r, s)
			b.version[r]++
			*dst = bound
			if i == 0 {
				view.RowsReg = isa.UseReg(r)
			} else {
				view.ColsReg = isa.UseReg(r)
			}
		}
	}
	if prm := b.prog.Params[g.param]; g.el != "" {
		el, _ := elemType(prm.DType)
		if el != g.el {
			b.fail(pos, "a window of %s elements over %s, whose elements are %s", g.el, prm.Name, el)
		}
	}
	return isa.GMOp(view)
}

// tileBuf is a parsed !pto.tile_buf type.
type tileBuf struct {
	decl isa.TileDecl
	el   string
	pad  int
	vr   bool // v_row is '?'
	vc   bool
}

// parseTileBuf reads !pto.tile_buf<loc=..., dtype=..., ...>.
func parseTileBuf(t string) (tileBuf, error) {
	var tb tileBuf
	if !strings.HasPrefix(t, "!pto.tile_buf<") {
		return tb, fmt.Errorf("type %s is not a !pto.tile_buf", t)
	}
	fields := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(t, "!pto.tile_buf<"), ">"), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return tb, fmt.Errorf("tile type field %q is not key=value", kv)
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	num := func(key string) (int, error) {
		s, ok := fields[key]
		if !ok {
			return 0, fmt.Errorf("tile type without %s", key)
		}
		n, ok := parseInt(s)
		if !ok || n < 0 {
			return 0, fmt.Errorf("tile type %s=%s is not a size", key, s)
		}
		return n, nil
	}
	d := &tb.decl
	for loc, name := range locNames {
		if fields["loc"] == name {
			d.Loc = loc
		}
	}
	if d.Loc == isa.LocInvalid {
		return tb, fmt.Errorf("tile location %q (want mat, left, right, acc, ub or bias)", fields["loc"])
	}
	tb.el = fields["dtype"]
	dt, ok := elemDType(tb.el)
	if !ok {
		return tb, fmt.Errorf("tile dtype %q (want f32, f16, bf16, i8 or i32)", tb.el)
	}
	d.DType = dt
	var err error
	if d.Rows, err = num("rows"); err != nil {
		return tb, err
	}
	if d.Cols, err = num("cols"); err != nil {
		return tb, err
	}
	if d.Rows == 0 || d.Cols == 0 || d.Rows > 1<<16 || d.Cols > 1<<16 {
		return tb, fmt.Errorf("tile shape %dx%d", d.Rows, d.Cols)
	}
	for i, key := range []string{"v_row", "v_col"} {
		s, ok := fields[key]
		full := []int{d.Rows, d.Cols}[i]
		var n int
		switch {
		case !ok:
			n = full
		case s == "?" || s == "-1":
			if i == 0 {
				tb.vr = true
			} else {
				tb.vc = true
			}
			continue
		default:
			v, ok := parseInt(s)
			if !ok || v < 0 || v > full {
				return tb, fmt.Errorf("tile %s=%s outside 0..%d", key, s, full)
			}
			n = v
		}
		if n != full {
			if i == 0 {
				d.ValidRows = n
			} else {
				d.ValidCols = n
			}
		}
	}
	bl, sl := fields["blayout"], fields["slayout"]
	if bl == "" {
		bl = "row_major"
	}
	if sl == "" {
		sl = "none_box"
	}
	found := false
	for lay, names := range layoutNames {
		if names[0] == bl && names[1] == sl {
			d.Layout, found = lay, true
		}
	}
	if !found {
		return tb, fmt.Errorf("tile layout blayout=%s, slayout=%s has no PyPTO layout", bl, sl)
	}
	if p, ok := fields["pad"]; ok {
		n, ok := parseInt(p)
		if !ok || n < 0 || n > 3 {
			return tb, fmt.Errorf("tile pad=%s", p)
		}
		tb.pad = n
	}
	return tb, nil
}

// allocTile declares a tile.
func (b *builder) allocTile(o *mop) {
	if len(o.resTypes) != 1 || len(o.results) != 1 {
		b.fail(o.pos, "pto.alloc_tile has one result")
	}
	tb, err := parseTileBuf(o.resTypes[0])
	if err != nil {
		b.fail(o.pos, "%v", err)
	}
	d := tb.decl
	if s, ok := strAttr(o.attrs, "pypto.dtype"); ok && s == "bool" {
		d.DType = dtype.Bool
	}
	name := strings.TrimPrefix(o.results[0], "%")
	if s, ok := strAttr(o.attrs, "pypto.name"); ok {
		name = s
	}
	d.Name = b.freshName(name)
	valid := o.namedOps
	if len(o.operands) > 0 { // generic form: operands in order valid_row, valid_col
		valid = map[string]string{}
		keys := []string{"valid_row", "valid_col"}
		if !tb.vr {
			keys = keys[1:]
		}
		for i, v := range o.operands {
			if i < len(keys) {
				valid[keys[i]] = v
			}
		}
	}
	for i, key := range []string{"valid_row", "valid_col"} {
		dyn := []bool{tb.vr, tb.vc}[i]
		vname, given := valid[key]
		if dyn != given {
			b.fail(o.pos, "the tile type's %s is %s but the op %s a %s operand", []string{"v_row", "v_col"}[i], map[bool]string{true: "'?'", false: "fixed"}[dyn], map[bool]string{true: "gives", false: "has no"}[given], key)
		}
		if !given {
			continue
		}
		v := b.scalarOf(o.pos, vname)
		var ref isa.RegRef
		n := 0
		switch {
		case v.kind == vConst:
			n = int(v.i)
			if full := []int{d.Rows, d.Cols}[i]; n == full {
				n = 0
			} else if n < 0 || n > full {
				b.fail(o.pos, "%s = %d outside 0..%d", key, n, full)
			}
		case v.kind == vReg && v.i == 0:
			b.current(o.pos, v)
			ref = isa.UseReg(v.reg)
		default:
			r := b.newReg(d.Name + "_" + key)
			b.into(o.pos, r, v)
			b.version[r]++
			ref = isa.UseReg(r)
		}
		if i == 0 {
			d.ValidRows, d.ValidRowsReg = n, ref
		} else {
			d.ValidCols, d.ValidColsReg = n, ref
		}
	}
	b.prog.Tiles = append(b.prog.Tiles, d)
	b.tilePad = append(b.tilePad, tb.pad)
	t := len(b.prog.Tiles) - 1
	addr := -1
	if a, ok := intAttr(o.attrs, "pypto.addr"); ok {
		if a < 0 {
			b.fail(o.pos, "pypto.addr = %d is negative", a)
		}
		addr = int(a)
	}
	b.setAddr(o.pos, t, addr)
	b.define(o, &val{kind: vTile, tile: t})
}

// setAddr records a tile's address (-1: not placed).
func (b *builder) setAddr(pos Pos, t, addr int) {
	for len(b.addrs) <= t {
		b.addrs = append(b.addrs, -1)
	}
	if addr < 0 {
		return
	}
	if prev := b.addrs[t]; prev >= 0 && prev != addr {
		b.fail(pos, "tile %s is placed at %d and at %d; a tile has one address", b.prog.Tiles[t].Name, prev, addr)
	}
	b.addrs[t] = addr
	b.placed = true
	b.manual = true
}

// tassign: pto.tassign %tile, %addr (newer dialects; ptoas 0.1.1 rejects it).
func (b *builder) tassign(o *mop) {
	if len(o.operands) != 2 {
		b.fail(o.pos, "pto.tassign takes a tile and an address")
	}
	ti, ai := 0, 1
	if t := b.get(o.pos, o.operands[1]); t.kind == vTile { // custom form ins(addr) outs(tile)
		ti, ai = 1, 0
	}
	t := b.get(o.pos, o.operands[ti])
	if t.kind != vTile || t.tile < 0 {
		b.fail(o.pos, "pto.tassign of %s, which is not a tile", o.operands[ti])
	}
	b.setAddr(o.pos, t.tile, b.constInt(o.pos, o.operands[ai], "a tile's address"))
}

var pipeByName = func() map[string]isa.Pipe {
	m := map[string]isa.Pipe{}
	for p, n := range pipeNames {
		m[n] = p
	}
	return m
}()

func (b *builder) pipe(pos Pos, s string) isa.Pipe {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "#pto.pipe<"), "<"), ">")
	p, ok := pipeByName[s]
	if !ok {
		b.fail(pos, "unknown pipe %s (PIPE_S, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_M, PIPE_V, PIPE_FIX, PIPE_ALL)", s)
	}
	return p
}

// flag: pto.set_flag[<src>, <dst>, <EVENT_IDn>] / wait_flag.
func (b *builder) flag(o *mop) {
	op := isa.SET_FLAG
	if o.name == "pto.wait_flag" {
		op = isa.WAIT_FLAG
	}
	parts := o.pipes
	if len(parts) != 3 { // generic form: src_pipe, dst_pipe, event_id properties
		parts = []string{o.props["src_pipe"].s, o.props["dst_pipe"].s, o.props["event_id"].s}
	}
	ev := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(parts[2], "#pto.event<"), "EVENT_ID"), ">")
	ev = strings.TrimPrefix(ev, "EVENT_ID")
	id, ok := parseInt(ev)
	if !ok || id < 0 || id >= maxEventIDs {
		b.fail(o.pos, "event %s: want EVENT_ID0 to EVENT_ID%d", parts[2], maxEventIDs-1)
	}
	b.manual = true
	b.emit(o.pos, isa.Instr{Op: op, Args: []isa.Operand{isa.PipeOp(b.pipe(o.pos, parts[0])), isa.PipeOp(b.pipe(o.pos, parts[1])), isa.ImmOp(float64(id))}})
}

// barrier: pto.barrier on a pipe (PIPE_ALL: every pipe).
func (b *builder) barrier(o *mop) {
	s := ""
	if len(o.pipes) == 1 {
		s = o.pipes[0]
	} else if a, ok := o.props["pipe"]; ok {
		s = a.s
	}
	b.manual = true
	b.emit(o.pos, isa.Instr{Op: isa.TSYNC, Args: []isa.Operand{isa.PipeOp(b.pipe(o.pos, s))}})
}
