package isa

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"pypto/dtype"
)

// Reference semantics of the memory, matrix, movement, queue, debug, sync and scalar
// instructions.

func init() {
	for op, f := range map[Opcode]func(m *machine, in Instr) error{
		TLOAD: execLoad, TSTORE: execStore, TSTORE_FP: execStoreFP, TPREFETCH: execPrefetch,
		MGATHER: execMGather, MSCATTER: execMScatter,
		TMATMUL: execMatmul, TMATMUL_ACC: execMatmul, TMATMUL_BIAS: execMatmul, TMATMUL_MX: execMatmul,
		TGEMV: execMatmul, TGEMV_ACC: execMatmul, TGEMV_BIAS: execMatmul, TGEMV_MX: execMatmul,
		TMOV: execMov, TMOV_FP: execMovFP, TEXTRACT: execExtract, TINSERT: execInsert,
		TRESHAPE: execReshape, TIMG2COL: execImg2col,
		TASSIGN: execNothing, SET_FLAG: execNothing, WAIT_FLAG: execNothing, TSYNC: execNothing,
		TPRINT: execPrint, TPUSH: execPush, TPOP: execPop, TFREE: execFree,
		SMOV: execScalar, SADD: execScalar, SSUB: execScalar, SMUL: execScalar, SDIV: execScalar,
		SREM: execScalar, SMIN: execScalar, SMAX: execScalar, SLD: execScalarLoad,
	} {
		execRules[op] = f
	}
}

// execNothing is the semantics of instructions that order or place but compute
// nothing: flags, barriers and TASSIGN (the reference keeps every tile apart).
func execNothing(*machine, Instr) error { return nil }

// execLoad writes the whole tile: the window, then zeros.
func execLoad(m *machine, in Instr) error {
	dst := in.Args[0]
	w, err := m.window(in.Args[1].GM)
	if err != nil {
		return err
	}
	t := m.decl(dst)
	vals := m.vals(dst)
	clear(vals)
	for r := 0; r < w.rows; r++ {
		for c := 0; c < w.cols; c++ {
			vals[r*t.Cols+c] = w.load(r, c)
		}
	}
	return nil
}

func execStore(m *machine, in Instr) error {
	w, err := m.window(in.Args[0].GM)
	if err != nil {
		return err
	}
	src := in.Args[1]
	for r := 0; r < w.rows; r++ {
		for c := 0; c < w.cols; c++ {
			v := m.at(src, r, c)
			switch in.Mode {
			case AtomicAdd:
				v, _ = addK().apply(w.dt, w.load(r, c), v)
			case StoreRelu:
				v = unaryKernels[TRELU](v)
			}
			dtype.Store(w.dt, w.buf, w.index(r, c), v)
		}
	}
	return nil
}

func execStoreFP(m *machine, in Instr) error {
	w, err := m.window(in.Args[0].GM)
	if err != nil {
		return err
	}
	src, fp := in.Args[1], in.Args[2]
	for r := 0; r < w.rows; r++ {
		for c := 0; c < w.cols; c++ {
			dtype.Store(w.dt, w.buf, w.index(r, c), quantise(w.dt, m.at(src, r, c)*m.at(fp, 0, c)))
		}
	}
	return nil
}

func execPrefetch(m *machine, in Instr) error {
	_, err := m.window(in.Args[0].GM)
	return err
}

// flatIndex resolves an mgather / mscatter index against its window.
func (w window) flatIndex(i int, r, c int) (int, error) {
	if i < 0 || i >= w.rows*w.cols {
		return 0, fmt.Errorf("index %d at (%d, %d) is outside the %dx%d window", i, r, c, w.rows, w.cols)
	}
	return w.index(i/w.cols, i%w.cols), nil
}

func execMGather(m *machine, in Instr) error {
	dst, idx := in.Args[0], in.Args[2]
	w, err := m.window(in.Args[1].GM)
	if err != nil {
		return err
	}
	return m.eachValid(dst, func(r, c int) error {
		e, err := w.flatIndex(int(m.at(idx, r, c)), r, c)
		if err == nil {
			m.setExact(dst, r, c, dtype.Load(w.dt, w.buf, e))
		}
		return err
	})
}

func execMScatter(m *machine, in Instr) error {
	src, idx := in.Args[1], in.Args[2]
	w, err := m.window(in.Args[0].GM)
	if err != nil {
		return err
	}
	return m.eachValid(src, func(r, c int) error {
		e, err := w.flatIndex(int(m.at(idx, r, c)), r, c)
		if err == nil {
			v := m.at(src, r, c)
			if in.Mode == AtomicAdd {
				v, _ = addK().apply(w.dt, dtype.Load(w.dt, w.buf, e), v)
			}
			dtype.Store(w.dt, w.buf, e, v)
		}
		return err
	})
}

// execMatmul covers the matmul and gemv forms: operands dst, a, b (plus bias, or
// dst, a, as, b, bs for the MX forms). It computes dst's valid region (only row 0 for
// gemv) over k < a's valid cols, summing exactly in float64 (int64 for integers) and
// rounding once.
func execMatmul(m *machine, in Instr) error {
	mx := in.Op == TMATMUL_MX || in.Op == TGEMV_MX
	dst, a, b := in.Args[0], in.Args[1], in.Args[2]
	var as, bs Operand
	if mx {
		as, b, bs = in.Args[2], in.Args[3], in.Args[4]
	}
	rows, cols, err := m.valid(dst)
	if err != nil {
		return err
	}
	_, k, err := m.valid(a)
	if err != nil {
		return err
	}
	gemv := in.Op == TGEMV || in.Op == TGEMV_ACC || in.Op == TGEMV_BIAS || in.Op == TGEMV_MX
	if gemv {
		rows = min(rows, 1)
	}
	accumulate := in.Op == TMATMUL_ACC || in.Op == TGEMV_ACC
	bias := in.Op == TMATMUL_BIAS || in.Op == TGEMV_BIAS
	isInt := m.decl(dst).DType.IsInt()
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			var sf float64
			var si int64
			if accumulate {
				sf, si = m.at(dst, r, c), int64(m.at(dst, r, c))
			}
			if bias {
				sf, si = m.at(in.Args[3], 0, c), int64(m.at(in.Args[3], 0, c))
			}
			for x := 0; x < k; x++ {
				av, bv := m.at(a, r, x), m.at(b, x, c)
				if mx {
					av *= m.at(as, r, x/32)
					bv *= m.at(bs, x/32, c)
				}
				sf += av * bv
				si += int64(av) * int64(bv)
			}
			if isInt {
				sf = float64(si)
			}
			m.set(dst, r, c, sf)
		}
	}
	return nil
}

// execMov copies and converts the whole tile.
func execMov(m *machine, in Instr) error {
	d := m.decl(in.Args[0]).DType
	dst, src := m.vals(in.Args[0]), m.vals(in.Args[1])
	for i, v := range src {
		dst[i] = dtype.Round(d, v)
	}
	return nil
}

func execMovFP(m *machine, in Instr) error {
	dst, src, fp := in.Args[0], in.Args[1], in.Args[2]
	t := m.decl(dst)
	for r := 0; r < t.Rows; r++ {
		for c := 0; c < t.Cols; c++ {
			m.setExact(dst, r, c, quantise(t.DType, m.at(src, r, c)*m.at(fp, 0, c)))
		}
	}
	return nil
}

func execExtract(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	r0, c0 := int(in.Args[2].Imm), int(in.Args[3].Imm)
	t := m.decl(dst)
	for r := 0; r < t.Rows; r++ {
		for c := 0; c < t.Cols; c++ {
			m.set(dst, r, c, m.at(src, r0+r, c0+c))
		}
	}
	return nil
}

func execInsert(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	r0, c0 := int(in.Args[2].Imm), int(in.Args[3].Imm)
	t := m.decl(src)
	from := slices.Clone(m.vals(src)) // dst may be src
	for r := 0; r < t.Rows; r++ {
		for c := 0; c < t.Cols; c++ {
			m.set(dst, r0+r, c0+c, from[r*t.Cols+c])
		}
	}
	return nil
}

// execReshape reinterprets the row-major bytes of src as dst.
func execReshape(m *machine, in Instr) error {
	dt, st := m.decl(in.Args[0]), m.decl(in.Args[1])
	bytes := dtype.Encode(st.DType, m.vals(in.Args[1]))
	copy(m.vals(in.Args[0]), dtype.Decode(dt.DType, bytes, dt.Rows*dt.Cols))
	return nil
}

func execImg2col(m *machine, in Instr) error {
	dst, src := in.Args[0], in.Args[1]
	g, msg := img2colGeometry(in, m.decl(src))
	if msg != "" {
		return fmt.Errorf("%s", msg)
	}
	clear(m.vals(dst))
	for oh := 0; oh < g.oh; oh++ {
		for ow := 0; ow < g.ow; ow++ {
			for i := 0; i < g.kh; i++ {
				for j := 0; j < g.kw; j++ {
					y, x := g.at(oh, ow, i, j)
					if y < 0 || y >= g.h || x < 0 || x >= g.w {
						continue
					}
					for ch := 0; ch < g.c; ch++ {
						m.set(dst, oh*g.ow+ow, (i*g.kw+j)*g.c+ch, m.at(src, y*g.w+x, ch))
					}
				}
			}
		}
	}
	return nil
}

// execPrint writes "name[rows x cols] dtype:" and one line of values per valid row.
func execPrint(m *machine, in Instr) error {
	t := m.decl(in.Args[0])
	rows, cols, err := m.valid(in.Args[0])
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s[%dx%d] valid %dx%d:\n", tileRef(t), t.DType, t.Rows, t.Cols, rows, cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if c > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatFloat(m.at(in.Args[0], r, c), 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	_, err = m.sh.print.Write([]byte(b.String()))
	return err
}

func execPush(m *machine, in Instr) error {
	q := &m.sh.queues[int(in.Args[0].Imm)]
	if len(q.entries) >= QueueDepth {
		return errBlocked
	}
	t := m.decl(in.Args[1])
	q.entries = append(q.entries, tileValue{rows: t.Rows, cols: t.Cols, vals: slices.Clone(m.vals(in.Args[1]))})
	return nil
}

func execPop(m *machine, in Instr) error {
	q := &m.sh.queues[int(in.Args[1].Imm)]
	if q.popped >= len(q.entries) {
		return errBlocked
	}
	e, t := q.entries[q.popped], m.decl(in.Args[0])
	if e.rows != t.Rows || e.cols != t.Cols {
		return fmt.Errorf("queue %d holds a %dx%d tile, %s is %dx%d", int(in.Args[1].Imm), e.rows, e.cols, tileRef(t), t.Rows, t.Cols)
	}
	dst := m.vals(in.Args[0])
	for i, v := range e.vals {
		dst[i] = dtype.Round(t.DType, v)
	}
	q.popped++
	return nil
}

func execFree(m *machine, in Instr) error {
	q := &m.sh.queues[int(in.Args[0].Imm)]
	if q.popped == 0 {
		return fmt.Errorf("tfree of queue %d, which has no popped entry", int(in.Args[0].Imm))
	}
	q.entries = q.entries[1:]
	q.popped--
	return nil
}

func execScalar(m *machine, in Instr) error {
	var v int64
	switch in.Op {
	case SMOV:
		v = m.scalar(in.Args[1])
	default:
		a, b := m.scalar(in.Args[1]), m.scalar(in.Args[2])
		switch in.Op {
		case SADD:
			v = a + b
		case SSUB:
			v = a - b
		case SMUL:
			v = a * b
		case SDIV, SREM:
			if b == 0 {
				return fmt.Errorf("scalar division by zero")
			}
			if v = a / b; in.Op == SREM {
				v = a % b
			}
		case SMIN:
			v = min(a, b)
		case SMAX:
			v = max(a, b)
		}
	}
	m.regs[in.Args[0].Reg] = v
	return nil
}

func execScalarLoad(m *machine, in Instr) error {
	w, err := m.window(in.Args[1].GM)
	if err == nil {
		m.regs[in.Args[0].Reg] = int64(w.load(0, 0))
	}
	return err
}

// loop enters a loop (or skips it when the count is 0).
func (m *machine) loop(in Instr) (int, error) {
	count := m.scalar(in.Args[1])
	if count < 0 {
		return 0, fmt.Errorf("loop count %d is negative", count)
	}
	counter := in.Args[0].Reg
	m.regs[counter] = 0
	if count == 0 {
		return m.ends[m.pc] + 1, nil
	}
	m.loops = append(m.loops, loopFrame{start: m.pc, counter: counter, count: count})
	return m.pc + 1, nil
}

// endloop counts an iteration and goes back to the body or past the loop; the counter
// ends equal to the count.
func (m *machine) endloop() (int, error) {
	f := &m.loops[len(m.loops)-1]
	f.iter++
	m.regs[f.counter] = f.iter
	if f.iter < f.count {
		return f.start + 1, nil
	}
	m.loops = m.loops[:len(m.loops)-1]
	return m.pc + 1, nil
}
