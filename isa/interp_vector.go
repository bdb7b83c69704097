package isa

import (
	"fmt"
	"math"
	"slices"

	"pypto/dtype"
)

// Reference semantics of the vector instructions (see the Doc column of each row).

// execRules maps each opcode to its semantics; LOOP and ENDLOOP are machine.step's.
var execRules = map[Opcode]func(m *machine, in Instr) error{}

func init() {
	for op := range binaryKernels {
		switch info := op.Info(); {
		case info.Class == ClassElementwise:
			execRules[op] = execBinary
		case info.Class == ClassTileScalar:
			execRules[op] = execTileScalar
		case info.Class == ClassBroadcast:
			execRules[op] = execExpandBinary
		default:
			execRules[op] = execPart
		}
	}
	for op := range unaryKernels {
		execRules[op] = execUnary
	}
	for _, op := range []Opcode{TROWSUM, TROWPROD, TROWMAX, TROWMIN, TCOLSUM, TCOLPROD, TCOLMAX, TCOLMIN} {
		execRules[op] = execReduce
	}
	execRules[TNOT] = execNot
	execRules[TADDC] = execTernary
	execRules[TSUBC] = execTernary
	execRules[TCMP] = execCompare
	execRules[TCMPS] = execCompare
	execRules[TSEL] = execSelect
	execRules[TSELS] = execSelect
	execRules[TEXPANDS] = execExpandScalar
	execRules[TCVT] = execConvert
	execRules[TROWEXPAND] = execExpand
	execRules[TCOLEXPAND] = execExpand
	execRules[TFILLPAD] = execFillPad
	execRules[TTRANS] = execTrans
	execRules[TCI] = execCI
	execRules[TTRI] = execTri
	execRules[TQUANT] = execQuant
	execRules[TDEQUANT] = execDequant
	execRules[TGATHER] = execGather
	execRules[TGATHERB] = execGather
	execRules[TSCATTER] = execScatter
	execRules[TSORT32] = execSort32
	execRules[TMRGSORT] = execMrgSort
}

// eachValid calls f for every element of the operand's valid region, stopping at the
// first error.
func (m *machine) eachValid(a Operand, f func(r, c int) error) error {
	rows, cols, err := m.valid(a)
	if err != nil {
		return err
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if err := f(r, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// at reads element (r, c) of a tile operand.
func (m *machine) at(a Operand, r, c int) float64 { return m.tiles[a.Tile][r*m.decl(a).Cols+c] }

// set writes element (r, c) of a tile operand, rounding to its dtype.
func (m *machine) set(a Operand, r, c int, v float64) {
	t := m.decl(a)
	m.tiles[a.Tile][r*t.Cols+c] = dtype.Round(t.DType, v)
}

// setExact writes a value already rounded to the tile's dtype.
func (m *machine) setExact(a Operand, r, c int, v float64) { m.tiles[a.Tile][r*m.decl(a).Cols+c] = v }

func execBinary(m *machine, in Instr) error {
	k, dst, a, b := binaryKernels[in.Op], in.Args[0], in.Args[1], in.Args[2]
	d := m.decl(dst).DType
	return m.eachValid(dst, func(r, c int) error {
		v, err := k.apply(d, m.at(a, r, c), m.at(b, r, c))
		m.setExact(dst, r, c, v)
		return err
	})
}

func execTileScalar(m *machine, in Instr) error {
	k, dst, a := binaryKernels[in.Op], in.Args[0], in.Args[1]
	d := m.decl(dst).DType
	s := ScalarOperand(m.decl(a).DType, in.Args[2].Imm)
	return m.eachValid(dst, func(r, c int) error {
		v, err := k.apply(d, m.at(a, r, c), s)
		m.setExact(dst, r, c, v)
		return err
	})
}

// execExpandBinary: the b operand is a column (row forms) or a row (column forms).
func execExpandBinary(m *machine, in Instr) error {
	k, dst, a, b := binaryKernels[in.Op], in.Args[0], in.Args[1], in.Args[2]
	d := m.decl(dst).DType
	row := in.Op >= TROWEXPAND && in.Op <= TROWEXPANDEXPDIF
	return m.eachValid(dst, func(r, c int) error {
		var bv float64
		if row {
			bv = m.at(b, r, 0)
		} else {
			bv = m.at(b, 0, c)
		}
		v, err := k.apply(d, m.at(a, r, c), bv)
		m.setExact(dst, r, c, v)
		return err
	})
}

func execExpand(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	return m.eachValid(dst, func(r, c int) error {
		if in.Op == TROWEXPAND {
			m.set(dst, r, c, m.at(src, r, 0))
		} else {
			m.set(dst, r, c, m.at(src, 0, c))
		}
		return nil
	})
}

// execPart: where only one of a and b is valid, that one is copied.
func execPart(m *machine, in Instr) error {
	k, dst, a, b := binaryKernels[in.Op], in.Args[0], in.Args[1], in.Args[2]
	d := m.decl(dst).DType
	ar, ac, err := m.valid(a)
	if err != nil {
		return err
	}
	br, bc, err := m.valid(b)
	if err != nil {
		return err
	}
	return m.eachValid(dst, func(r, c int) error {
		inA, inB := r < ar && c < ac, r < br && c < bc
		switch {
		case inA && inB:
			v, err := k.apply(d, m.at(a, r, c), m.at(b, r, c))
			m.setExact(dst, r, c, v)
			return err
		case inA:
			m.set(dst, r, c, m.at(a, r, c))
		case inB:
			m.set(dst, r, c, m.at(b, r, c))
		}
		return nil
	})
}

func execUnary(m *machine, in Instr) error {
	k, dst, a := unaryKernels[in.Op], in.Args[0], in.Args[1]
	d := m.decl(dst).DType
	return m.eachValid(dst, func(r, c int) error {
		x := m.at(a, r, c)
		if d.IsInt() && (in.Op == TABS || in.Op == TNEG) {
			m.set(dst, r, c, float64(intUnary(in.Op, int64(x))))
			return nil
		}
		m.set(dst, r, c, k(x))
		return nil
	})
}

func intUnary(op Opcode, x int64) int64 {
	if op == TNEG || x < 0 {
		return -x
	}
	return x
}

func execNot(m *machine, in Instr) error {
	dst, a := in.Args[0], in.Args[1]
	d := m.decl(dst).DType
	return m.eachValid(dst, func(r, c int) error {
		m.setExact(dst, r, c, notValue(d, m.at(a, r, c)))
		return nil
	})
}

// execTernary: taddc a + b + c and tsubc a - b + c, rounded once.
func execTernary(m *machine, in Instr) error {
	dst, a, b, x := in.Args[0], in.Args[1], in.Args[2], in.Args[3]
	d := m.decl(dst).DType
	sign := 1.0
	if in.Op == TSUBC {
		sign = -1
	}
	return m.eachValid(dst, func(r, c int) error {
		av, bv, cv := m.at(a, r, c), m.at(b, r, c), m.at(x, r, c)
		if d.IsInt() {
			m.set(dst, r, c, float64(int64(av)+int64(sign)*int64(bv)+int64(cv)))
		} else {
			m.set(dst, r, c, av+sign*bv+cv)
		}
		return nil
	})
}

// maskBit and setMaskBit address bit c%8 of byte [r, c/8] of a packed mask tile.
func (m *machine) maskBit(mask Operand, r, c int) bool {
	return uint8(int8(m.at(mask, r, c/8)))>>(c%8)&1 == 1
}

func (m *machine) setMaskBit(mask Operand, r, c int, on bool) {
	b := uint8(int8(m.at(mask, r, c/8)))
	if on {
		b |= 1 << (c % 8)
	} else {
		b &^= 1 << (c % 8)
	}
	m.setExact(mask, r, c/8, float64(int8(b)))
}

func execCompare(m *machine, in Instr) error {
	mask, a := in.Args[0], in.Args[1]
	s := ScalarOperand(m.decl(a).DType, in.Args[2].Imm)
	return m.eachValid(a, func(r, c int) error {
		b := s
		if in.Op == TCMP {
			b = m.at(in.Args[2], r, c)
		}
		m.setMaskBit(mask, r, c, compare(in.Mode, m.at(a, r, c), b))
		return nil
	})
}

func execSelect(m *machine, in Instr) error {
	dst, mask, a := in.Args[0], in.Args[1], in.Args[2]
	return m.eachValid(dst, func(r, c int) error {
		switch {
		case m.maskBit(mask, r, c):
			m.set(dst, r, c, m.at(a, r, c))
		case in.Op == TSEL:
			m.set(dst, r, c, m.at(in.Args[3], r, c))
		default:
			m.set(dst, r, c, in.Args[3].Imm)
		}
		return nil
	})
}

func execExpandScalar(m *machine, in Instr) error {
	dst := in.Args[0]
	return m.eachValid(dst, func(r, c int) error {
		m.set(dst, r, c, in.Args[1].Imm)
		return nil
	})
}

func execConvert(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	d := m.decl(dst).DType
	return m.eachValid(dst, func(r, c int) error {
		m.setExact(dst, r, c, RoundTo(d, m.at(src, r, c), in.Mode))
		return nil
	})
}

// reduction is the running value of a row or column reduction.
type reduction struct {
	op Opcode
	d  dtype.DType
	f  float64
	i  int64
}

func newReduction(op Opcode, d dtype.DType) *reduction {
	r := &reduction{op: op, d: d}
	switch op {
	case TROWPROD, TCOLPROD:
		r.f, r.i = 1, 1
	case TROWMAX, TCOLMAX:
		r.f = math.Inf(-1)
		if d.IsInt() {
			lo, _ := intRange(d)
			r.f = lo
		}
	case TROWMIN, TCOLMIN:
		r.f = math.Inf(1)
		if d.IsInt() {
			_, hi := intRange(d)
			r.f = hi
		}
	}
	return r
}

func (r *reduction) add(x float64) {
	switch r.op {
	case TROWSUM, TCOLSUM:
		r.f += x
		r.i += int64(x)
	case TROWPROD, TCOLPROD:
		r.f *= x
		r.i *= int64(x)
	case TROWMAX, TCOLMAX:
		r.f = Max(r.f, x)
	case TROWMIN, TCOLMIN:
		r.f = Min(r.f, x)
	}
}

func (r *reduction) value() float64 {
	if r.d.IsInt() && r.op != TROWMAX && r.op != TROWMIN && r.op != TCOLMAX && r.op != TCOLMIN {
		return float64(r.i)
	}
	return r.f
}

func execReduce(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	d := m.decl(dst).DType
	rows, cols, err := m.valid(src)
	if err != nil {
		return err
	}
	// Float sums and products accumulate in fp32 in the vector unit's order (see
	// laneReduce); max and min give the same value in any order, integers are exact.
	lanes := !d.IsInt() && in.Op != TROWMAX && in.Op != TROWMIN && in.Op != TCOLMAX && in.Op != TCOLMIN
	mul := in.Op == TROWPROD || in.Op == TCOLPROD
	if in.Op >= TROWSUM && in.Op <= TROWMIN {
		xs := make([]float64, cols)
		for r := 0; r < rows; r++ {
			if lanes {
				for c := range xs {
					xs[c] = m.at(src, r, c)
				}
				m.set(dst, r, 0, float64(laneReduce(xs, mul)))
				continue
			}
			red := newReduction(in.Op, d)
			for c := 0; c < cols; c++ {
				red.add(m.at(src, r, c))
			}
			m.set(dst, r, 0, red.value())
		}
		return nil
	}
	for c := 0; c < cols; c++ {
		if lanes {
			m.set(dst, 0, c, float64(columnReduce(m, src, c, rows, mul)))
			continue
		}
		red := newReduction(in.Op, d)
		for r := 0; r < rows; r++ {
			red.add(m.at(src, r, c))
		}
		m.set(dst, 0, c, red.value())
	}
	return nil
}

// ReduceLanes is the number of fp32 accumulators of a float row reduction: one 256-byte
// repeat of the vector unit holds 64 fp32 lanes.
const ReduceLanes = 64

// laneReduce is a float row sum (or product) in the vector unit's order: the values
// (f16 and bf16 widened exactly) go to ReduceLanes fp32 lanes, element k to lane
// k % 64, each lane starting with its first element and adding the later ones one
// repeat at a time; then the lanes fold pairwise, lane i taking lane i+h for h = 32,
// 16, ..., 1 (a lane that got no element takes no part). Every operation rounds to
// fp32. An empty row gives the identity.
func laneReduce(xs []float64, mul bool) float32 {
	op := func(a, b float32) float32 { return a + b }
	if mul {
		op = func(a, b float32) float32 { return a * b }
	}
	if len(xs) == 0 {
		if mul {
			return 1
		}
		return 0
	}
	var acc [ReduceLanes]float32
	used := min(len(xs), ReduceLanes)
	for j := 0; j < used; j++ {
		acc[j] = float32(xs[j])
	}
	for k := ReduceLanes; k < len(xs); k++ {
		acc[k%ReduceLanes] = op(acc[k%ReduceLanes], float32(xs[k]))
	}
	for h := ReduceLanes / 2; h >= 1; h /= 2 {
		for i := 0; i < h && i+h < used; i++ {
			acc[i] = op(acc[i], acc[i+h])
		}
	}
	return acc[0]
}

// columnReduce is a float column sum (or product): each column is a lane, adding the
// rows one at a time in increasing row order in fp32, starting with row 0.
func columnReduce(m *machine, src Operand, c, rows int, mul bool) float32 {
	if rows == 0 {
		if mul {
			return 1
		}
		return 0
	}
	acc := float32(m.at(src, 0, c))
	for r := 1; r < rows; r++ {
		if mul {
			acc *= float32(m.at(src, r, c))
		} else {
			acc += float32(m.at(src, r, c))
		}
	}
	return acc
}

// execFillPad writes the whole of dst: src inside src's valid region, v elsewhere.
func execFillPad(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	t := m.decl(dst)
	vr, vc, err := m.valid(src)
	if err != nil {
		return err
	}
	pad := dtype.Round(t.DType, in.Args[2].Imm)
	for r := 0; r < t.Rows; r++ {
		for c := 0; c < t.Cols; c++ {
			if r < vr && c < vc {
				m.set(dst, r, c, m.at(src, r, c))
			} else {
				m.setExact(dst, r, c, pad)
			}
		}
	}
	return nil
}

func execTrans(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	cols := m.decl(src).Cols
	from := slices.Clone(m.vals(src)) // so that a square tile can transpose in place
	return m.eachValid(dst, func(r, c int) error {
		m.set(dst, r, c, from[c*cols+r])
		return nil
	})
}

func execCI(m *machine, in Instr) error {
	dst := in.Args[0]
	cols := m.decl(dst).Cols
	start, step := in.Args[1].Imm, in.Args[2].Imm
	return m.eachValid(dst, func(r, c int) error {
		m.set(dst, r, c, start+float64(r*cols+c)*step)
		return nil
	})
}

func execTri(m *machine, in Instr) error {
	dst, d := in.Args[0], int(in.Args[1].Imm)
	return m.eachValid(dst, func(r, c int) error {
		on := c-r <= d
		if in.Mode == TriUpper {
			on = c-r >= d
		}
		m.setExact(dst, r, c, b2f(on))
		return nil
	})
}

func execQuant(m *machine, in Instr) error {
	dst, src, scale, off := in.Args[0], in.Args[1], in.Args[2], in.Args[3]
	d := m.decl(dst).DType
	return m.eachValid(dst, func(r, c int) error {
		m.setExact(dst, r, c, saturate(d, m.at(src, r, c)*m.at(scale, r, 0)+m.at(off, r, 0)))
		return nil
	})
}

func execDequant(m *machine, in Instr) error {
	dst, src, scale, off := in.Args[0], in.Args[1], in.Args[2], in.Args[3]
	return m.eachValid(dst, func(r, c int) error {
		m.set(dst, r, c, (m.at(src, r, c)-m.at(off, r, 0))*m.at(scale, r, 0))
		return nil
	})
}

// execGather covers tgather (element indices) and tgatherb (byte offsets).
func execGather(m *machine, in Instr) error {
	dst, src, idx := in.Args[0], in.Args[1], in.Args[2]
	st := m.decl(src)
	n := st.Rows * st.Cols
	from := slices.Clone(m.vals(src)) // dst may be src
	return m.eachValid(dst, func(r, c int) error {
		i := int(m.at(idx, r, c))
		if in.Op == TGATHERB {
			size := st.DType.Size()
			if i%size != 0 {
				return fmt.Errorf("byte offset %d at (%d, %d) is not a multiple of the %d-byte %s element", i, r, c, size, st.DType)
			}
			i /= size
		}
		if i < 0 || i >= n {
			return fmt.Errorf("index %d at (%d, %d) is outside %s's %d elements", i, r, c, tileRef(st), n)
		}
		m.set(dst, r, c, from[i])
		return nil
	})
}

func execScatter(m *machine, in Instr) error {
	dst, src, idx := in.Args[0], in.Args[1], in.Args[2]
	dt := m.decl(dst)
	n := dt.Rows * dt.Cols
	return m.eachValid(src, func(r, c int) error {
		i := int(m.at(idx, r, c))
		if i < 0 || i >= n {
			return fmt.Errorf("index %d at (%d, %d) is outside %s's %d elements", i, r, c, tileRef(dt), n)
		}
		m.tiles[dst.Tile][i] = dtype.Round(dt.DType, m.at(src, r, c))
		return nil
	})
}

// pair is a (value, index) element of the sort instructions.
type pair struct{ v, i float64 }

// descending orders pairs by value, largest first, NaN above every number; ties keep
// their order because callers sort stably.
func descending(a, b pair) int {
	an, bn := math.IsNaN(a.v), math.IsNaN(b.v)
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	case a.v > b.v:
		return -1
	case a.v < b.v:
		return 1
	}
	return 0
}

func execSort32(m *machine, in Instr) error {
	dst, src, idx := in.Args[0], in.Args[1], in.Args[2]
	st := m.decl(src)
	for r := 0; r < st.Rows; r++ {
		for b := 0; b < st.Cols; b += 32 {
			ps := make([]pair, 32)
			for i := range ps {
				ps[i] = pair{m.at(src, r, b+i), m.at(idx, r, b+i)}
			}
			slices.SortStableFunc(ps, descending)
			for i, p := range ps {
				m.set(dst, r, 2*(b+i), p.v)
				m.set(dst, r, 2*(b+i)+1, p.i)
			}
		}
	}
	return nil
}

func execMrgSort(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	st := m.decl(src)
	n := int(in.Args[2].Imm)
	pairs := st.Cols / 2
	out := make([]pair, pairs)
	for r := 0; r < st.Rows; r++ {
		for i := range out {
			out[i] = pair{m.at(src, r, 2*i), m.at(src, r, 2*i+1)}
		}
		// Each group of 4 sorted runs merges into one; a stable sort of the group is
		// that merge with ties taken from earlier runs first.
		for g := 0; g < pairs; g += 4 * n {
			slices.SortStableFunc(out[g:min(g+4*n, pairs)], descending)
		}
		for i, p := range out {
			m.set(dst, r, 2*i, p.v)
			m.set(dst, r, 2*i+1, p.i)
		}
	}
	return nil
}
