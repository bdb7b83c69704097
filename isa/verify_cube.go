package isa

import (
	"fmt"
	"math"

	"pypto/dtype"
)

// Rules of the memory, matrix, movement, queue and scalar instructions beyond the
// first set (verify_ops.go).

// AddrAlign is the byte alignment of a tile address in each buffer (TASSIGN):
// docs/sources.md's 32 B for L1 and UB, one 512 B fractal for L0A/L0B, 64 B for
// L0C; BT's 64 B and the scaling buffer's 32 B are assumed, as in device presets.
func AddrAlign(loc Location) int {
	switch loc {
	case Left, Right:
		return 512
	case Acc, Bias:
		return 64
	}
	return 32
}

// checkScaleCols: a per-column fixpipe scale is an f32 Scaling tile with the data's cols.
func checkScaleCols(op Opcode, fp, data TileDecl) string {
	if fp.Loc != Scaling || fp.DType != dtype.Float32 || fp.Cols != data.Cols {
		return fmt.Sprintf("%s scale %s must be a scaling f32 tile with %d cols like %s, not %s %s[%dx%d]",
			op, tileRef(fp), data.Cols, tileRef(data), fp.Loc, fp.DType, fp.Rows, fp.Cols)
	}
	return ""
}

func checkStoreFP(v *verifier, in Instr) string {
	view, src, fp := in.Args[0].GM, v.tileOf(in.Args[1]), v.tileOf(in.Args[2])
	prm := v.p.Params[view.Param]
	switch {
	case src.Loc != Acc:
		return fmt.Sprintf("%s reads acc tiles, not %s tile %s", in.Op, src.Loc, tileRef(src))
	case !numericClass.ok(prm.DType):
		return fmt.Sprintf("%s cannot store into %s param %%%s", in.Op, prm.DType, quoteName(prm.Name))
	}
	return first(checkScaleCols(in.Op, fp, src), checkView(in.Op, prm, view, src, true))
}

func checkPrefetch(v *verifier, in Instr) string {
	view := in.Args[0].GM
	return checkWindow(in.Op, v.p.Params[view.Param], view, false)
}

func checkMGather(v *verifier, in Instr) string {
	dst, view, idx := v.tileOf(in.Args[0]), in.Args[1].GM, v.tileOf(in.Args[2])
	return checkIndexed(v, in, dst, view, idx, false)
}

func checkMScatter(v *verifier, in Instr) string {
	view, src, idx := in.Args[0].GM, v.tileOf(in.Args[1]), v.tileOf(in.Args[2])
	return checkIndexed(v, in, src, view, idx, true)
}

// checkIndexed: mgather / mscatter move a Vec tile to or from GM elements chosen by an
// i32 index tile of the same shape; the window bounds the indices.
func checkIndexed(v *verifier, in Instr, t TileDecl, view GMView, idx TileDecl, store bool) string {
	prm := v.p.Params[view.Param]
	switch {
	case t.Loc != Vec || idx.Loc != Vec:
		return fmt.Sprintf("%s works on vec tiles, got %s %s and index %s %s", in.Op, t.Loc, tileRef(t), idx.Loc, tileRef(idx))
	case prm.DType != t.DType:
		return fmt.Sprintf("%s does not convert: param %%%s is %s, tile %s is %s", in.Op, quoteName(prm.Name), prm.DType, tileRef(t), t.DType)
	}
	return first(checkIndex(in.Op, idx, t), checkWindow(in.Op, prm, view, store))
}

func checkMovFP(v *verifier, in Instr) string {
	dst, src, fp := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), v.tileOf(in.Args[2])
	switch {
	case src.Loc != Acc || dst.Loc != Vec:
		return fmt.Sprintf("%s moves acc -> vec, not %s -> %s", in.Op, src.Loc, dst.Loc)
	case !numericClass.ok(dst.DType):
		return fmt.Sprintf("%s cannot convert into %s", in.Op, dst.DType)
	}
	return first(sameShape(in.Op, dst, src), checkScaleCols(in.Op, fp, src))
}

func checkInsert(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	switch {
	case src.Loc == Acc && dst.Loc == Mat:
		if !accStoreOK(src.DType, dst.DType) {
			return fmt.Sprintf("%s from acc cannot convert %s to %s (f32 goes to f32, f16 or bf16; i32 to i32)", in.Op, src.DType, dst.DType)
		}
	case src.Loc == Vec && dst.Loc == Vec:
		if msg := sameDType(in.Op, dst, src); msg != "" {
			return msg
		}
	default:
		return fmt.Sprintf("%s moves acc -> mat or vec -> vec, not %s -> %s", in.Op, src.Loc, dst.Loc)
	}
	row, okR := intImm(in.Args[2].Imm, dst.Rows)
	col, okC := intImm(in.Args[3].Imm, dst.Cols)
	switch {
	case !okR || !okC:
		return fmt.Sprintf("window offset (%v, %v) must be non-negative integers inside %s (%dx%d)", in.Args[2].Imm, in.Args[3].Imm, tileRef(dst), dst.Rows, dst.Cols)
	case row+src.Rows > dst.Rows || col+src.Cols > dst.Cols:
		return fmt.Sprintf("%s of size %dx%d at (%d, %d) does not fit in %s (%dx%d)", tileRef(src), src.Rows, src.Cols, row, col, tileRef(dst), dst.Rows, dst.Cols)
	}
	return ""
}

func checkReshape(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	db, _ := tileBytes(dst)
	sb, _ := tileBytes(src)
	switch {
	case dst.Loc != src.Loc:
		return fmt.Sprintf("%s stays in one buffer: %s is in %s, %s in %s", in.Op, tileRef(dst), dst.Loc, tileRef(src), src.Loc)
	case dst.Layout != LayoutND || src.Layout != LayoutND:
		return fmt.Sprintf("%s reinterprets row-major bytes: %s is %s, %s is %s", in.Op, tileRef(dst), dst.Layout, tileRef(src), src.Layout)
	case db != sb:
		return fmt.Sprintf("%s keeps the bytes: %s has %d, %s has %d", in.Op, tileRef(dst), db, tileRef(src), sb)
	}
	return ""
}

func checkImg2col(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	switch {
	case src.Loc != Mat || dst.Loc != Left:
		return fmt.Sprintf("%s moves mat -> left, not %s -> %s", in.Op, src.Loc, dst.Loc)
	case dst.DType != src.DType:
		return sameDType(in.Op, dst, src)
	}
	g, msg := img2colGeometry(in, src)
	if msg != "" {
		return msg
	}
	if dst.Rows < g.outRows() || dst.Cols < g.outCols() {
		return fmt.Sprintf("%s result needs %dx%d, %s is %dx%d", in.Op, g.outRows(), g.outCols(), tileRef(dst), dst.Rows, dst.Cols)
	}
	return ""
}

// img2col is the geometry of a TIMG2COL: an H x W image of C channels stored
// pixel-major (src[y*W+x, ch]), a kh x kw kernel, stride s, pl and pr columns of padding
// left and right, pt rows above, and oh x ow output positions.
type img2col struct {
	h, w, c, kh, kw, s, pl, pr, pt, oh, ow int
}

func (g img2col) outRows() int { return g.oh * g.ow }
func (g img2col) outCols() int { return g.kh * g.kw * g.c }

// at is the source pixel (y, x) of output row r, column ow and kernel tap (i, j).
func (g img2col) at(r, ow, i, j int) (y, x int) { return r*g.s - g.pt + i, ow*g.s - g.pl + j }

func img2colGeometry(in Instr, src TileDecl) (img2col, string) {
	var vals [8]int
	for i := range vals {
		x, ok := intImm(in.Args[2+i].Imm, 1<<20)
		if !ok || (i < 4 || i == 7) && x < 1 {
			return img2col{}, fmt.Sprintf("%s parameters W, kh, kw, s, oh >= 1 and pl, pr, pt >= 0 must be integers, got %v", in.Op, in.Args[2+i].Imm)
		}
		vals[i] = x
	}
	g := img2col{w: vals[0], c: src.Cols, kh: vals[1], kw: vals[2], s: vals[3], pl: vals[4], pr: vals[5], pt: vals[6], oh: vals[7]}
	if src.Rows%g.w != 0 {
		return g, fmt.Sprintf("%s: %s has %d rows, not whole image rows of %d pixels", in.Op, tileRef(src), src.Rows, g.w)
	}
	g.h = src.Rows / g.w
	if g.w+g.pl+g.pr < g.kw {
		return g, fmt.Sprintf("%s: a %d-wide kernel does not fit the padded %d-pixel rows", in.Op, g.kw, g.w+g.pl+g.pr)
	}
	g.ow = (g.w+g.pl+g.pr-g.kw)/g.s + 1
	return g, ""
}

func checkAssign(v *verifier, in Instr) string {
	t := v.tileOf(in.Args[0])
	align := AddrAlign(t.Loc)
	addr, ok := intImm(in.Args[1].Imm, math.MaxInt32)
	if !ok || addr%align != 0 {
		return fmt.Sprintf("%s address %v is not a non-negative integer multiple of the %s alignment (%d bytes)", in.Op, in.Args[1].Imm, t.Loc, align)
	}
	if v.capacity != nil {
		size, _ := tileBytes(t)
		if c := v.capacity(t.Loc); addr+size > c {
			return fmt.Sprintf("%s places %s at [%d, %d), past the %d-byte %s buffer", in.Op, tileRef(t), addr, addr+size, c, t.Loc)
		}
	}
	return ""
}

func checkMatmulBias(v *verifier, in Instr) string {
	if msg := checkMatmul(v, Instr{Op: in.Op, Args: in.Args[:3]}); msg != "" {
		return msg
	}
	dst, bias := v.tileOf(in.Args[0]), v.tileOf(in.Args[3])
	if bias.Loc != Bias || bias.DType != dst.DType || bias.Cols != dst.Cols {
		return fmt.Sprintf("%s bias %s must be a bias %s tile with %d cols, not %s %s[%dx%d]", in.Op, tileRef(bias), dst.DType, dst.Cols, bias.Loc, bias.DType, bias.Rows, bias.Cols)
	}
	return ""
}

// checkMatmulMX: operands dst, a, as, b, bs.
func checkMatmulMX(v *verifier, in Instr) string {
	if msg := checkMatmul(v, Instr{Op: in.Op, Args: []Operand{in.Args[0], in.Args[1], in.Args[3]}}); msg != "" {
		// checkMatmul knows the MX opcodes accumulate i8 in f32.
		return msg
	}
	a, as, b, bs := v.tileOf(in.Args[1]), v.tileOf(in.Args[2]), v.tileOf(in.Args[3]), v.tileOf(in.Args[4])
	if a.Cols%32 != 0 {
		return fmt.Sprintf("%s scales blocks of 32 along k: %s has %d cols", in.Op, tileRef(a), a.Cols)
	}
	for _, s := range []struct {
		t          TileDecl
		rows, cols int
	}{{as, a.Rows, a.Cols / 32}, {bs, b.Rows / 32, b.Cols}} {
		if s.t.Loc != Scaling || s.t.DType != dtype.Float32 || s.t.Rows != s.rows || s.t.Cols != s.cols {
			return fmt.Sprintf("%s scale %s must be a scaling f32[%dx%d] tile, not %s %s[%dx%d]", in.Op, tileRef(s.t), s.rows, s.cols, s.t.Loc, s.t.DType, s.t.Rows, s.t.Cols)
		}
	}
	return ""
}

func queueID(op Opcode, q float64) string {
	if _, ok := intImm(q, NumQueues-1); !ok {
		return fmt.Sprintf("%s queue %v is not an integer in [0, %d)", op, q, NumQueues)
	}
	return ""
}

func checkPush(v *verifier, in Instr) string {
	src := v.tileOf(in.Args[1])
	if src.Loc != Acc && src.Loc != Vec {
		return fmt.Sprintf("%s sends acc or vec tiles, not %s tile %s", in.Op, src.Loc, tileRef(src))
	}
	return queueID(in.Op, in.Args[0].Imm)
}

func checkPop(v *verifier, in Instr) string {
	dst := v.tileOf(in.Args[0])
	if dst.Loc != Mat && dst.Loc != Vec {
		return fmt.Sprintf("%s receives into mat or vec tiles, not %s tile %s", in.Op, dst.Loc, tileRef(dst))
	}
	return queueID(in.Op, in.Args[1].Imm)
}

func checkFree(v *verifier, in Instr) string { return queueID(in.Op, in.Args[0].Imm) }

func checkScalarLoad(v *verifier, in Instr) string {
	view := in.Args[1].GM
	prm := v.p.Params[view.Param]
	switch {
	case prm.DType != dtype.Int32 && prm.DType != dtype.Int8:
		return fmt.Sprintf("%s reads integers, param %%%s is %s", in.Op, quoteName(prm.Name), prm.DType)
	case view.Rows != 1 || view.Cols != 1 || view.RowsReg != 0 || view.ColsReg != 0:
		return fmt.Sprintf("%s reads one element: the view must be 1x1, not %dx%d", in.Op, view.Rows, view.Cols)
	}
	return checkWindow(in.Op, prm, view, false)
}

func checkLoop(v *verifier, in Instr) string {
	if c := in.Args[1]; c.Kind == KindImm && c.Imm < 0 {
		return fmt.Sprintf("loop count %v is negative", c.Imm)
	}
	return ""
}
