package ptoas

import (
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// Compares. ptoas 0.1.1 rejects pto.tcmps and writes pto.tcmp as TCMP(EQ) without its
// tiles (KNOWN_DEFECTS of pypto.tools.ptoas), so tcmp and tcmps are written as a group
// of integer ops the release compiles:
//
//   - each operand becomes an i32 key that orders like its values: an integer is its
//     value (i8 and bool converted), a float's bits (f16 and bf16 converted to f32,
//     exactly; treshape to i32) give key = (mag ^ s) - s with mag = bits & 0x7fffffff
//     and s = bits >> 31, so that -0 and +0 have key 0; a float is NaN where
//     (0x7f800000 - mag) >> 31 is -1;
//   - L = a < b and G = b < a on the keys, as -1/0, by an overflow-safe signed
//     less-than (Hacker's Delight: ((x - y) ^ ((x ^ y) & ((x - y) ^ x))) >> 31);
//     tcmps compares with the keys of the f32 (or integer) neighbours of its scalar,
//     so that a scalar between two representable values compares exactly;
//   - the predicate from L, G and NaN with and/or/xor;
//   - packMask packs the -1/0 predicate into the mask's bits.
func init() {
	opWriters[isa.TCMP] = writeCompare
	opWriters[isa.TCMPS] = writeCompare
}

// opSeq writes the ops of one group in order, marking the first with the instruction.
type opSeq struct {
	w *writer
	g func(int) string
	k int
}

func (s *opSeq) op(name, props string, ops ...operand) {
	s.w.op(name, props, s.g(s.k), ops...)
	s.k++
}

// barrier drains every pipe: ptoas 0.1.1 inserts no synchronisation for tgather (nor,
// in a kernel with one, for much around it), so a group that gathers orders itself
// against the ops before and after it, in both forms.
func (s *opSeq) barrier() {
	s.w.line(`"pto.barrier"() <{pipe = #pto.pipe<PIPE_ALL>}> {%s} : () -> ()`, s.g(s.k))
	s.k++
}

// tci writes 0, 1, 2, ... into i32 tile t, then a barrier: tci is a scalar-pipe
// instruction, and ptoas 0.1.1 inserts no synchronisation for it either.
func (s *opSeq) tci(t operand) {
	s.op("tci", "descending = false", s.i32(0), t)
	s.barrier()
}

// i32 is an i32 scalar constant.
func (s *opSeq) i32(v int64) operand { return operand{s.w.scalarImm(float64(v), dtype.Int32), "i32"} }

// scratch declares a Vec ND scratch tile rows x cols of dtype d, all of it valid.
func (s *opSeq) scratch(d dtype.DType, rows, cols int) operand {
	return s.w.scratchDecl(isa.TileDecl{Name: "tmp", Loc: isa.Vec, DType: d, Rows: rows, Cols: cols})
}

// fill is a new rows x cols i32 scratch tile holding v everywhere.
func (s *opSeq) fill(v int64, rows, cols int) operand {
	t := s.scratch(dtype.Int32, rows, cols)
	s.op("texpands", "", s.i32(v), t)
	return t
}

// scratchDecl declares scratch tile t where the group needs it; its valid sizes are
// written as values (validOperands, valueValid).
func (w *writer) scratchDecl(t isa.TileDecl) operand {
	valid, typed := w.validOperands(t), valueValid(t)
	text, err := tileType(typed, padNull)
	if err != nil {
		w.fail("%v", err)
	}
	typ := w.alias(text, aliasName(typed, padNull))
	name := w.value("tmp")
	w.line("%s = pto.alloc_tile%s {pypto.temp} : %s", name, valid, typ)
	return operand{name, typ}
}

// cmpKeys are the i32 keys of a compare's operand, and its NaN lanes (-1) for floats.
type cmpKeys struct {
	key, nan operand
	hasNaN   bool
}

// keysOf converts tile operand x (declared d) to keys.
func (s *opSeq) keysOf(x operand, d isa.TileDecl, c31 operand) cmpKeys {
	r, c := d.Rows, d.Cols
	switch d.DType {
	case dtype.Int32:
		return cmpKeys{key: x}
	case dtype.Int8, dtype.Bool:
		k := s.scratch(dtype.Int32, r, c)
		s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", x, k)
		return cmpKeys{key: k}
	}
	if d.DType != dtype.Float32 {
		f := s.scratch(dtype.Float32, r, c)
		s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", x, f)
		x = f
	}
	bits := s.scratch(dtype.Int32, r, c)
	s.op("treshape", "", x, bits)
	mag, sign := s.scratch(dtype.Int32, r, c), s.scratch(dtype.Int32, r, c)
	s.op("tands", "", bits, s.i32(0x7fffffff), mag)
	s.op("tshr", "", bits, c31, sign)
	key := s.scratch(dtype.Int32, r, c)
	s.op("txor", "", mag, sign, key)
	s.op("tsub", "", key, sign, key)
	nan := s.fill(0x7f800000, r, c)
	s.op("tsub", "", nan, mag, nan)
	s.op("tshr", "", nan, c31, nan)
	return cmpKeys{key: key, nan: nan, hasNaN: true}
}

// less writes -1 where x < y and 0 elsewhere (signed, without overflow) into a new
// rows x cols tile.
func (s *opSeq) less(x, y, c31 operand, rows, cols int) operand {
	d, t, u := s.scratch(dtype.Int32, rows, cols), s.scratch(dtype.Int32, rows, cols), s.scratch(dtype.Int32, rows, cols)
	s.op("tsub", "", x, y, d)
	s.op("txor", "", x, y, t)
	s.op("txor", "", d, x, u)
	s.op("tand", "", t, u, t)
	s.op("txor", "", d, t, t)
	s.op("tshr", "", t, c31, t)
	return t
}

// lessThanConst is key < k as -1/0; k beyond the i32 range makes it constant.
func (s *opSeq) lessThanConst(key operand, k int64, c31 operand, rows, cols int) operand {
	switch {
	case k > math.MaxInt32:
		return s.fill(-1, rows, cols)
	case k <= math.MinInt32:
		return s.fill(0, rows, cols)
	}
	return s.less(key, s.fill(k, rows, cols), c31, rows, cols)
}

// greaterThanConst is k < key as -1/0.
func (s *opSeq) greaterThanConst(key operand, k int64, c31 operand, rows, cols int) operand {
	switch {
	case k >= math.MaxInt32:
		return s.fill(0, rows, cols)
	case k < math.MinInt32:
		return s.fill(-1, rows, cols)
	}
	return s.less(s.fill(k, rows, cols), key, c31, rows, cols)
}

// scalarKeys are the keys of the smallest value of dtype d at or above s (ceil) and
// of the largest at or below it (floor), in the key order of keysOf: a < s is
// key(a) < ceil, a > s is key(a) > floor, a == s is ceil <= key(a) <= floor (empty
// when s falls between two values).
func scalarKeys(d dtype.DType, s float64) (ceil, floor int64) {
	if !d.IsFloat() {
		return int64(math.Max(math.Min(math.Ceil(s), 1<<40), -(1 << 40))), int64(math.Max(math.Min(math.Floor(s), 1<<40), -(1 << 40)))
	}
	key := func(f float32) int64 {
		b := math.Float32bits(f)
		mag := int64(b & 0x7fffffff)
		if b>>31 == 1 {
			return -mag
		}
		return mag
	}
	up, down := float32(s), float32(s)
	if float64(up) < s {
		up = math.Nextafter32(up, float32(math.Inf(1)))
	}
	if float64(down) > s {
		down = math.Nextafter32(down, float32(math.Inf(-1)))
	}
	return key(up), key(down)
}

// writeCompare writes tcmp (mask, a, b) and tcmps (mask, a, s).
func writeCompare(w *writer, in isa.Instr) {
	mask, a := w.p.Tiles[in.Args[0].Tile], w.p.Tiles[in.Args[1].Tile]
	if a.Layout != isa.LayoutND || mask.Layout != isa.LayoutND {
		w.fail("%s on a tile that is not ND: its group of ops reads the tile's bits row by row (treshape), which needs ND", in.Op)
	}
	if mask.ValidRowsReg != 0 || mask.ValidColsReg != 0 || (mask.ValidRows != 0 && mask.ValidRows != mask.Rows) || (mask.ValidCols != 0 && mask.ValidCols != mask.Cols) {
		w.fail("%s into mask tile %s, whose valid region is not the whole tile: the ops that stand for the compare write the mask's valid region only", in.Op, mask.Name)
	}
	s := &opSeq{w: w, g: w.group(in)}
	rows, cols := a.Rows, a.Cols
	s.barrier()
	c31 := s.fill(31, rows, cols)
	pred := s.predicate(in, a, c31)
	s.packMask(pred, a, w.tileOp(in, 0), mask)
	s.barrier()
}

// predicate writes in's predicate over all of a's tile as -1/0 i32.
func (s *opSeq) predicate(in isa.Instr, a isa.TileDecl, c31 operand) operand {
	w := s.w
	rows, cols := a.Rows, a.Cols
	if in.Op == isa.TCMPS && math.IsNaN(in.Args[2].Imm) {
		if in.Mode == isa.CmpNE {
			return s.fill(-1, rows, cols)
		}
		return s.fill(0, rows, cols)
	}
	ka := s.keysOf(w.tileOp(in, 1), a, c31)
	var lt, gt operand
	nan, hasNaN := ka.nan, ka.hasNaN
	if in.Op == isa.TCMP {
		kb := s.keysOf(w.tileOp(in, 2), a, c31)
		lt = s.less(ka.key, kb.key, c31, rows, cols)
		gt = s.less(kb.key, ka.key, c31, rows, cols)
		if hasNaN {
			s.op("tor", "", nan, kb.nan, nan)
		}
	} else {
		// The immediate as the instruction uses it: rounded to the tile's dtype.
		ceil, floor := scalarKeys(a.DType, isa.ScalarOperand(a.DType, in.Args[2].Imm))
		lt = s.lessThanConst(ka.key, ceil, c31, rows, cols)
		gt = s.greaterThanConst(ka.key, floor, c31, rows, cols)
	}
	// a < b: L & ~N; a > b: G & ~N; a <= b: ~(G | N); a >= b: ~(L | N);
	// a == b: ~(L | G | N); a != b: L | G | N.
	p := lt
	switch in.Mode {
	case isa.CmpLT, isa.CmpGT:
		if in.Mode == isa.CmpGT {
			p = gt
		}
		if hasNaN {
			s.op("txors", "", nan, s.i32(-1), nan)
			s.op("tand", "", p, nan, p)
		}
		return p
	case isa.CmpLE, isa.CmpGE:
		if in.Mode == isa.CmpLE {
			p = gt
		}
	case isa.CmpEQ, isa.CmpNE:
		s.op("tor", "", lt, gt, p)
	default:
		w.fail("%s needs a predicate (.eq .ne .lt .le .gt .ge)", in.Op)
	}
	if hasNaN {
		s.op("tor", "", p, nan, p)
	}
	if in.Mode != isa.CmpNE {
		s.op("txors", "", p, s.i32(-1), p)
	}
	return p
}

// packMask packs pred (-1/0 i32, shaped like tile a) into mask tile m: bit c%8 of
// m[r, c/8] is set where pred[r, c] is -1, for (r, c) in a's valid region; every other
// bit of m is kept.
//
// Each element gets the weight of its bit, 1 << (c % 8) (see bitWeights). Where bits
// are kept, the weight is 257 << (c % 8): bit c%8 + 8 says "inside a's valid region",
// bit c%8 the predicate; the old byte is then kept where its inside bit is 0.
func (s *opSeq) packMask(pred operand, a isa.TileDecl, m operand, md isa.TileDecl) {
	rows, cols, mcols := a.Rows, a.Cols, md.Cols
	partial := a.ValidRowsReg != 0 || a.ValidColsReg != 0 || (a.ValidRows != 0 && a.ValidRows != rows) || (a.ValidCols != 0 && a.ValidCols != cols)
	keep := partial || mcols*8 > cols
	weight := int64(1)
	if keep {
		weight = 257
	}
	weights := s.bitWeights(rows, cols, weight)
	y := s.scratch(dtype.Int32, rows, cols)
	if keep {
		s.op("tor", "", pred, s.fill(-256, rows, cols), y)
		s.op("tand", "", y, weights, y)
	} else {
		s.op("tand", "", pred, weights, y)
	}
	if partial {
		// -1 inside a's valid region, 0 outside: fill a tile with a's valid region,
		// and add it partially to a tile of zeros.
		v := a
		v.Name, v.DType, v.Layout = "tmp", dtype.Int32, isa.LayoutND
		inside := s.w.scratchDecl(v)
		s.op("texpands", "", s.i32(-1), inside)
		zero := s.fill(0, rows, cols)
		s.op("tpartadd", "", inside, zero, zero)
		s.op("tand", "", y, zero, y)
	}
	bytes, part := s.scratch(dtype.Int32, rows, mcols), s.scratch(dtype.Int32, rows, mcols)
	idx := s.byteIndex(rows, cols, mcols)
	s.gatherBytes(y, idx, bytes, s.scratch(dtype.Int32, rows, mcols), part)
	if keep {
		if mcols*8 > cols {
			// Bytes past a's columns: the clamped indices read the last byte again;
			// clear them so that the old bytes are kept.
			cv := isa.TileDecl{Name: "tmp", Loc: isa.Vec, DType: dtype.Int32, Rows: rows, Cols: mcols, ValidCols: cols / 8}
			live := s.w.scratchDecl(cv)
			s.op("texpands", "", s.i32(-1), live)
			zero := s.fill(0, rows, mcols)
			s.op("tpartadd", "", live, zero, zero)
			s.op("tand", "", bytes, zero, bytes)
		}
		old := s.scratch(dtype.Int32, rows, mcols)
		s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", m, old)
		c8 := s.fill(8, rows, mcols)
		s.op("tshr", "", bytes, c8, part)
		s.op("txors", "", part, s.i32(-1), part)
		s.op("tand", "", old, part, old)
		s.op("tands", "", bytes, s.i32(255), bytes)
		s.op("tor", "", bytes, old, bytes)
	}
	s.toMask(bytes, s.fill(24, rows, mcols), m)
}

// bitWeights is a rows x cols i32 tile of base << (c % 8), the weight of each
// element's bit in its mask byte (flat & 7 == c & 7: a tile's columns are a multiple
// of 8, as its rows are whole 32-byte blocks).
func (s *opSeq) bitWeights(rows, cols int, base int64) operand {
	if cols%8 != 0 {
		s.w.fail("a mask of %dx%d elements: the columns are not whole bytes", rows, cols)
	}
	shift := s.scratch(dtype.Int32, rows, cols)
	s.tci(shift)
	s.op("tands", "", shift, s.i32(7), shift)
	weights := s.fill(base, rows, cols)
	s.op("tshl", "", weights, shift, weights)
	return weights
}

// byteIndex is the rows x mcols i32 tile of the flat index of each mask byte's first
// element in a rows x cols tile: r*cols + min(8j, cols-8) (bytes past the columns read
// the last byte again), computed in f32, every value an integer below 2^24 and so
// exact, as the dialect has no integer division.
func (s *opSeq) byteIndex(rows, cols, mcols int) operand {
	if mcols*8 < cols {
		s.w.fail("a mask of %d bytes a row for %d columns", mcols, cols)
	}
	if rows*mcols*8 >= 1<<24 || rows*cols >= 1<<24 {
		s.w.fail("a mask of %dx%d elements: its indices are not exact in f32", rows, cols)
	}
	f32 := func(v int) operand { return operand{s.w.scalarImm(float64(v), dtype.Float32), "f32"} }
	idx := s.scratch(dtype.Int32, rows, mcols)
	fi, fj := s.scratch(dtype.Float32, rows, mcols), s.scratch(dtype.Float32, rows, mcols)
	s.tci(idx)
	s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", idx, fi)
	s.op("trems", "", fi, f32(mcols), fj)
	s.op("tsub", "", fi, fj, fi)
	s.op("tdivs", "", fi, f32(mcols), fi)
	s.op("tmuls", "", fi, f32(cols), fi)
	s.op("tmuls", "", fj, f32(8), fj)
	s.op("tmins", "", fj, f32(cols-8), fj)
	s.op("tadd", "", fi, fj, fi)
	s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", fi, idx)
	return idx
}

// gatherBytes ORs the eight weighted elements of each byte of y into bytes: eight
// gathers from idx, idx + 1, ..., idx + 7 (next holds each index, part each gather;
// both shaped like bytes).
func (s *opSeq) gatherBytes(y, idx, bytes, next, part operand) {
	s.op("tgather", "", y, idx, bytes)
	for k := 1; k < 8; k++ {
		s.op("tadds", "", idx, s.i32(int64(k)), next)
		s.op("tgather", "", y, next, part)
		s.op("tor", "", bytes, part, bytes)
	}
}

// toMask converts bytes (i32 values 0..255) into the i8 mask m: sign-extended first
// (<< 24 then >> 24, c24 a tile of 24), so that the conversion is exact.
func (s *opSeq) toMask(bytes, c24, m operand) {
	s.op("tshl", "", bytes, c24, bytes)
	s.op("tshr", "", bytes, c24, bytes)
	s.op("tcvt", "rmode = #pto<round_mode CAST_RINT>", bytes, m)
}
