package isa

import (
	"fmt"
	"math"

	"pypto/dtype"
	"pypto/internal/checked"
)

// opRules holds the per-opcode checks of the verifier (the rules are listed in
// verify.go). They run after the operand kinds and indices have been checked, so they
// may index p.Tiles and p.Params freely. Every opcode must have an entry; a test checks.
var opRules = map[Opcode]func(v *verifier, in Instr) string{
	TLOAD:        checkLoad,
	TSTORE:       checkStore,
	TSTORE_FP:    checkStoreFP,
	TPREFETCH:    checkPrefetch,
	MGATHER:      checkMGather,
	MSCATTER:     checkMScatter,
	TMOV:         checkMov,
	TMOV_FP:      checkMovFP,
	TEXTRACT:     checkExtract,
	TINSERT:      checkInsert,
	TRESHAPE:     checkReshape,
	TTRANS:       checkTrans,
	TIMG2COL:     checkImg2col,
	TFILLPAD:     checkVectorSameType,
	TASSIGN:      checkAssign,
	TMATMUL:      checkMatmul,
	TMATMUL_ACC:  checkMatmul,
	TGEMV:        checkMatmul,
	TGEMV_ACC:    checkMatmul,
	TMATMUL_BIAS: checkMatmulBias,
	TGEMV_BIAS:   checkMatmulBias,
	TMATMUL_MX:   checkMatmulMX,
	TGEMV_MX:     checkMatmulMX,
	TADD:         checkVectorSameType,
	TMUL:         checkVectorSameType,
	TRELU:        checkVectorSameType,
	TCVT:         checkConvert,
	SET_FLAG:     checkFlag,
	WAIT_FLAG:    checkFlag,
	TSYNC:        func(*verifier, Instr) string { return "" }, // the pipe operand is checked with the operands
}

func init() {
	for _, op := range []Opcode{TSUB, TMIN, TMAX, TABS, TNEG, TADDC, TSUBC, TPARTADD, TPARTMUL, TPARTMAX, TPARTMIN, TDIV, TREM, TFMOD} {
		opRules[op] = checkVectorNumeric
	}
	for _, op := range []Opcode{TEXP, TLOG, TSQRT, TRSQRT, TRECIP, TPRELU} {
		opRules[op] = checkVectorFloat
	}
	for _, op := range []Opcode{TAND, TOR, TXOR, TNOT} {
		opRules[op] = checkVectorBitwise
	}
	for _, op := range []Opcode{TSHL, TSHR} {
		opRules[op] = checkVectorShift
	}
	for _, op := range []Opcode{TADDS, TSUBS, TMULS, TDIVS, TMINS, TMAXS, TFMODS, TREMS} {
		opRules[op] = checkTileScalarNumeric
	}
	for _, op := range []Opcode{TANDS, TORS, TXORS} {
		opRules[op] = checkTileScalarBitwise
	}
	for _, op := range []Opcode{TSHLS, TSHRS} {
		opRules[op] = checkTileScalarShift
	}
	opRules[TLRELU] = checkTileScalarFloat
	opRules[TCMP] = checkCompare
	opRules[TCMPS] = checkCompare
	opRules[TSEL] = checkSelect
	opRules[TSELS] = checkSelect
	opRules[TEXPANDS] = checkExpandScalar
	for _, op := range []Opcode{TROWSUM, TROWPROD, TROWMAX, TROWMIN} {
		opRules[op] = checkRowReduce
	}
	for _, op := range []Opcode{TCOLSUM, TCOLPROD, TCOLMAX, TCOLMIN} {
		opRules[op] = checkColReduce
	}
	opRules[TROWEXPAND] = checkRowExpand
	opRules[TCOLEXPAND] = checkColExpand
	for _, op := range []Opcode{TROWEXPANDADD, TROWEXPANDSUB, TROWEXPANDMUL, TROWEXPANDDIV, TROWEXPANDMAX, TROWEXPANDMIN, TROWEXPANDEXPDIF} {
		opRules[op] = checkRowExpandBinary
	}
	for _, op := range []Opcode{TCOLEXPANDADD, TCOLEXPANDSUB, TCOLEXPANDMUL, TCOLEXPANDDIV, TCOLEXPANDMAX, TCOLEXPANDMIN, TCOLEXPANDEXPDIF} {
		opRules[op] = checkColExpandBinary
	}
	opRules[TGATHER] = checkGather
	opRules[TGATHERB] = checkGather
	opRules[TSCATTER] = checkScatter
	opRules[TSORT32] = checkSort32
	opRules[TMRGSORT] = checkMrgSort
	opRules[TCI] = checkCI
	opRules[TTRI] = checkTri
	opRules[TQUANT] = checkQuant
	opRules[TDEQUANT] = checkDequant
	opRules[TPRINT] = func(*verifier, Instr) string { return "" } // any tile
	opRules[TPUSH] = checkPush
	opRules[TPOP] = checkPop
	opRules[TFREE] = checkFree
	for _, op := range []Opcode{SMOV, SADD, SSUB, SMUL, SDIV, SREM, SMIN, SMAX} {
		opRules[op] = func(*verifier, Instr) string { return "" } // operand kinds and integer immediates are all
	}
	opRules[SLD] = checkScalarLoad
	opRules[LOOP] = checkLoop
	opRules[ENDLOOP] = func(*verifier, Instr) string { return "" } // pairing is checkFlow's
}

func (v *verifier) tileOf(a Operand) TileDecl { return v.p.Tiles[a.Tile] }

func tileRef(t TileDecl) string { return "%" + quoteName(t.Name) }

func inLocs(l Location, locs ...Location) bool {
	for _, x := range locs {
		if l == x {
			return true
		}
	}
	return false
}

func checkLoad(v *verifier, in Instr) string {
	dst, view := v.tileOf(in.Args[0]), in.Args[1].GM
	prm := v.p.Params[view.Param]
	switch {
	case !inLocs(dst.Loc, Mat, Vec):
		return fmt.Sprintf("tload writes mat or vec tiles, not %s tile %s (load into mat, then tmov or textract into %s)", dst.Loc, tileRef(dst), dst.Loc)
	case prm.DType != dst.DType:
		return fmt.Sprintf("tload does not convert: param %%%s is %s, tile %s is %s", quoteName(prm.Name), prm.DType, tileRef(dst), dst.DType)
	}
	return checkView(in.Op, prm, view, dst, false)
}

func checkStore(v *verifier, in Instr) string {
	view, src := in.Args[0].GM, v.tileOf(in.Args[1])
	prm := v.p.Params[view.Param]
	switch {
	case !inLocs(src.Loc, Vec, Acc):
		return fmt.Sprintf("tstore reads vec or acc tiles, not %s tile %s", src.Loc, tileRef(src))
	case src.Loc == Vec && prm.DType != src.DType:
		return fmt.Sprintf("tstore from vec does not convert: tile %s is %s, param %%%s is %s (tcvt first)", tileRef(src), src.DType, quoteName(prm.Name), prm.DType)
	case src.Loc == Acc && !accStoreOK(src.DType, prm.DType):
		return fmt.Sprintf("tstore from acc cannot convert %s to %s (f32 stores as f32, f16 or bf16; i32 as i32)", src.DType, prm.DType)
	case in.Mode == StoreRelu && src.Loc != Acc:
		return fmt.Sprintf("tstore.relu is the fixpipe's activation: it stores acc tiles, not %s tile %s (trelu first)", src.Loc, tileRef(src))
	}
	return checkView(in.Op, prm, view, src, true)
}

func accStoreOK(from, to dtype.DType) bool {
	if from == dtype.Float32 {
		return to == dtype.Float32 || to == dtype.Float16 || to == dtype.BFloat16
	}
	return from == to
}

// checkView applies the GM view rules for a window moved to or from tile t; stores
// also must not write an element twice.
func checkView(op Opcode, prm Param, view GMView, t TileDecl, store bool) string {
	if view.Rows > t.Rows || view.Cols > t.Cols {
		if view.Rows >= 0 && view.Cols >= 0 {
			return fmt.Sprintf("view %dx%d is larger than tile %s (%dx%d)", view.Rows, view.Cols, tileRef(t), t.Rows, t.Cols)
		}
	}
	return checkWindow(op, prm, view, store)
}

// checkWindow checks that a view lies inside its param (with a zero offset register:
// a register offset is checked when it runs).
func checkWindow(op Opcode, prm Param, view GMView, store bool) string {
	name := "%" + quoteName(prm.Name)
	switch {
	case view.Rows < 0 || view.Cols < 0:
		return fmt.Sprintf("view shape %dx%d is negative", view.Rows, view.Cols)
	case view.Offset < 0 || view.RowStride < 0 || view.ColStride < 0:
		return fmt.Sprintf("view offset and strides must be non-negative, got offset %d, strides %d,%d", view.Offset, view.RowStride, view.ColStride)
	case view.Rows == 0 || view.Cols == 0:
		return ""
	case store && (view.Rows > 1 && view.RowStride == 0 || view.Cols > 1 && view.ColStride == 0):
		return fmt.Sprintf("%s view writes elements of %s more than once (zero stride over %dx%d)", op, name, view.Rows, view.Cols)
	}
	// Everything is non-negative here, so a sum that turns negative has overflowed.
	r, ok1 := checked.Mul(view.Rows-1, view.RowStride)
	c, ok2 := checked.Mul(view.Cols-1, view.ColStride)
	partial := view.Offset + r
	last := partial + c
	if !ok1 || !ok2 || partial < 0 || last < 0 || last >= prm.Elems {
		return fmt.Sprintf("view reaches past the end of %s (%d elements): offset %d + %d*%d + %d*%d", name, prm.Elems, view.Offset, view.Rows-1, view.RowStride, view.Cols-1, view.ColStride)
	}
	return ""
}

func checkMov(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	converts := false
	switch {
	case src.Loc == Mat && inLocs(dst.Loc, Left, Right, Bias, Scaling):
	case src.Loc == Acc && dst.Loc == Vec, src.Loc == Vec && dst.Loc == Vec:
		converts = true
	default:
		return fmt.Sprintf("tmov cannot move %s -> %s (allowed: mat->left, mat->right, mat->bias, mat->scaling, acc->vec, vec->vec)", src.Loc, dst.Loc)
	}
	switch {
	case dst.Rows != src.Rows || dst.Cols != src.Cols:
		return fmt.Sprintf("tmov copies whole tiles: %s is %dx%d, %s is %dx%d", tileRef(dst), dst.Rows, dst.Cols, tileRef(src), src.Rows, src.Cols)
	case !converts && dst.DType != src.DType:
		return fmt.Sprintf("tmov %s -> %s does not convert: %s is %s, %s is %s", src.Loc, dst.Loc, tileRef(src), src.DType, tileRef(dst), dst.DType)
	}
	return ""
}

// intImm converts an immediate that must be a non-negative integer no larger than max.
func intImm(x float64, max int) (int, bool) {
	if x != math.Trunc(x) || x < 0 || x > float64(max) {
		return 0, false
	}
	return int(x), true
}

func checkExtract(v *verifier, in Instr) string {
	dst, src := v.tileOf(in.Args[0]), v.tileOf(in.Args[1])
	switch {
	case src.Loc != Mat || !inLocs(dst.Loc, Left, Right):
		return fmt.Sprintf("textract moves mat -> left/right, not %s -> %s", src.Loc, dst.Loc)
	case dst.DType != src.DType:
		return fmt.Sprintf("textract does not convert: %s is %s, %s is %s", tileRef(src), src.DType, tileRef(dst), dst.DType)
	}
	row, okR := intImm(in.Args[2].Imm, src.Rows)
	col, okC := intImm(in.Args[3].Imm, src.Cols)
	switch {
	case !okR || !okC:
		return fmt.Sprintf("sub-tile offset (%v, %v) must be non-negative integers inside %s (%dx%d)", in.Args[2].Imm, in.Args[3].Imm, tileRef(src), src.Rows, src.Cols)
	case row+dst.Rows > src.Rows || col+dst.Cols > src.Cols:
		return fmt.Sprintf("sub-tile at (%d, %d) of size %dx%d does not fit in %s (%dx%d)", row, col, dst.Rows, dst.Cols, tileRef(src), src.Rows, src.Cols)
	}
	return ""
}

func checkMatmul(v *verifier, in Instr) string {
	dst, a, b := v.tileOf(in.Args[0]), v.tileOf(in.Args[1]), v.tileOf(in.Args[2])
	switch {
	case dst.Loc != Acc || a.Loc != Left || b.Loc != Right:
		return fmt.Sprintf("%s computes acc = left @ right, got %s = %s @ %s", in.Op, dst.Loc, a.Loc, b.Loc)
	case a.DType != b.DType:
		return fmt.Sprintf("%s operands differ in dtype: %s is %s, %s is %s", in.Op, tileRef(a), a.DType, tileRef(b), b.DType)
	case a.Cols != b.Rows:
		return fmt.Sprintf("%s inner dimensions differ: %s is %dx%d, %s is %dx%d", in.Op, tileRef(a), a.Rows, a.Cols, tileRef(b), b.Rows, b.Cols)
	case dst.Rows != a.Rows || dst.Cols != b.Cols:
		return fmt.Sprintf("%s result %s is %dx%d, want %dx%d", in.Op, tileRef(dst), dst.Rows, dst.Cols, a.Rows, b.Cols)
	}
	want := dtype.Float32
	if a.DType == dtype.Int8 && in.Op != TMATMUL_MX && in.Op != TGEMV_MX {
		want = dtype.Int32 // block scales are real numbers: MX products accumulate in f32
	}
	if dst.DType != want {
		return fmt.Sprintf("%s of %s operands accumulates in %s, not %s", in.Op, a.DType, want, dst.DType)
	}
	return ""
}

// checkVectorSameType: every operand in Vec with the destination's shape and dtype.
func checkVectorSameType(v *verifier, in Instr) string {
	if msg := checkVectorShapes(v, in); msg != "" {
		return msg
	}
	dst := v.tileOf(in.Args[0])
	for _, a := range in.Args[1:] {
		if a.Kind != KindTile {
			continue // an immediate (tfillpad's pad value)
		}
		if t := v.tileOf(a); t.DType != dst.DType {
			return fmt.Sprintf("%s does not convert: %s is %s, %s is %s (tcvt first)", in.Op, tileRef(dst), dst.DType, tileRef(t), t.DType)
		}
	}
	return ""
}

func checkVectorShapes(v *verifier, in Instr) string {
	dst := v.tileOf(in.Args[0])
	for _, a := range in.Args {
		if a.Kind != KindTile {
			continue
		}
		t := v.tileOf(a)
		switch {
		case t.Loc != Vec:
			return fmt.Sprintf("%s works on vec tiles, %s is in %s", in.Op, tileRef(t), t.Loc)
		case t.Rows != dst.Rows || t.Cols != dst.Cols:
			return fmt.Sprintf("%s operands differ in shape: %s is %dx%d, %s is %dx%d", in.Op, tileRef(dst), dst.Rows, dst.Cols, tileRef(t), t.Rows, t.Cols)
		}
	}
	return ""
}

func checkConvert(v *verifier, in Instr) string { return checkVectorShapes(v, in) }

func checkFlag(v *verifier, in Instr) string {
	src, dst, id := in.Args[0].Pipe, in.Args[1].Pipe, in.Args[2].Imm
	switch {
	case src == PipeAll || dst == PipeAll:
		return fmt.Sprintf("%s names two pipes; all is only for tsync", in.Op)
	case src == dst:
		return fmt.Sprintf("%s from pipe %s to itself (pipes are in order already; use two pipes)", in.Op, src)
	}
	if _, ok := intImm(id, NumEventIDs-1); !ok {
		return fmt.Sprintf("event id %v is not an integer in [0, %d)", id, NumEventIDs)
	}
	return ""
}
