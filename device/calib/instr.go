package calib

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// The single-instruction measurements (docs/sources.md, "instr-cycles"): each row is
// one PTO instruction run alone on a 910B3-class core, its measured cycles and the
// precision the vendor's own cost model reaches on it. InstrCase writes the
// instruction as the one-instruction program it describes (operands already in UB
// or L0, or the load from GM) and reads the simulator's cycles for it from the
// instruction's trace record.

//go:embed instr_cycles.tsv
var instrTable string

// InstrRow is one measured row.
type InstrRow struct {
	Op, Case string
	Args     map[string]string // the kernel template arguments
	ArgsText string
	Measured int64
	// VendorPrecision is 1 - |measured - model| / measured of the vendor's own cost
	// model on the row.
	VendorPrecision float64
}

// InstrRows parses the table.
func InstrRows() ([]InstrRow, error) {
	var out []InstrRow
	for n, line := range strings.Split(instrTable, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			return nil, fmt.Errorf("calib: instr_cycles.tsv line %d: %d fields, want 5", n+1, len(f))
		}
		meas, err1 := strconv.ParseInt(f[3], 10, 64)
		vp, err2 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("calib: instr_cycles.tsv line %d: bad number", n+1)
		}
		args := map[string]string{}
		for _, kv := range strings.Split(f[2], ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return nil, fmt.Errorf("calib: instr_cycles.tsv line %d: argument %q is not k=v", n+1, kv)
			}
			args[k] = v
		}
		out = append(out, InstrRow{Op: f[0], Case: f[1], Args: args, ArgsText: f[2], Measured: meas, VendorPrecision: vp})
	}
	return out, nil
}

// InstrCase is a row as something the simulator runs: the program and which of its
// instructions is measured, or why the row is left out.
type InstrCase struct {
	InstrRow
	Prog *isa.Program
	PC   int // the measured instruction's index in Prog.Body
	// NoLatency says the row is compared with the instruction's cycles less the
	// memory's access latency: a load's set-up and data (the rows are shorter than
	// any GM access latency: 1 KB in 28 cycles).
	NoLatency bool
	// Left is why the row is not counted (empty: it is); Prog is nil when the row
	// cannot be run at all.
	Left string
}

// Name is the row's name in reports: op/case.
func (c InstrCase) Name() string { return c.Op + "/" + c.Case }

// Reasons rows are left out.
const (
	leftInt16 = "not run: the ISA has no 16-bit integer type (dtype: i8, i32); the model would cost it as a 2-byte integer"
	leftNoOp  = "suspect: 4 cycles for a whole tile of integer divisions, below any vector instruction's start-up (the source flags it: probably no work done)"
	leftSort  = "suspect: cycles equal to the row count with no start-up (8 for 8 rows, 32 for 32), as the source flags for 8x32; 15 compare-exchange stages over the pairs cannot take one cycle a row"
	leftFast  = "suspect: the tile's bytes in fewer cycles than the vector unit reads them (8 KB in 14 cycles, 16 KB in 32: 512-585 B per cycle against the 256 of npu-facts, which every other row is consistent with); 14 cycles is also below the start-up of any other measured vector instruction"
	leftPort  = "suspect: a contiguous load faster than a core's L2 read port (npu-facts: 110 B per cycle): 18 KB and 24 KB in 96 cycles each (192 and 256 B per cycle)"
	leftF16   = "not run: TSORT32 sorts f32 (the top-k kernel converts f16 first)"
	leftChain = "suspect: a column maximum of 16 rows is 15 maxima in a chain per column (the destination is one row and the source is read only: no tile to halve into), and the 64-row rows measure a step of that chain at 40 (f32) and 42 (f16) cycles, 7 for int16 (the unit's result latency); 102 cycles is 6.4 a step, what one elementwise pass over the tile costs (tadd f16 16x256: 92), and the row reductions of the same 16x256 tiles are faster than the unit reads their bytes"
	leftExp   = "suspect: the same 2 KB in 32 rows of 64 bytes, 8 repeats, as the f16 32x32 exp, which measures 47; the other four exp rows lie within a cycle of 31 plus 2 a repeat (47, 63, 95, 159), which gives 47 here; no count of repeats, rows or bytes tells the two rows apart, and the f32 rows of 16 and 64 repeats lie on the line of the f16 rows of 8 and 32"
)

// InstrCases builds every row's program.
func InstrCases() ([]InstrCase, error) {
	rows, err := InstrRows()
	if err != nil {
		return nil, err
	}
	out := make([]InstrCase, len(rows))
	for i, r := range rows {
		c, err := buildInstrCase(r)
		if err != nil {
			return nil, fmt.Errorf("calib: %s/%s: %w", r.Op, r.Case, err)
		}
		out[i] = c
	}
	return out, nil
}

// elemType is a template argument's element type; ok is false for int16_t, which the
// ISA lacks.
func elemType(s string) (dtype.DType, bool) {
	switch s {
	case "float":
		return dtype.Float32, true
	case "half":
		return dtype.Float16, true
	case "int32_t":
		return dtype.Int32, true
	case "int8_t":
		return dtype.Int8, true
	}
	return dtype.Invalid, false
}

func (r InstrRow) int(keys ...string) int {
	for _, k := range keys {
		if v, ok := r.Args[k]; ok {
			n, err := strconv.Atoi(v)
			if err == nil {
				return n
			}
		}
	}
	return 0
}

// buildInstrCase writes row r as its program.
func buildInstrCase(r InstrRow) (InstrCase, error) {
	c := InstrCase{InstrRow: r}
	b := &progBuilder{p: &isa.Program{Name: r.Op + "_" + r.Case, Core: isa.Vector}}
	typ := r.Args["T"]
	if typ == "" {
		typ = r.Args["SrcT"]
	}
	dt, ok := elemType(typ)
	if r.Op == "tsort32" {
		dt, ok = elemType(r.Args["T0"])
	}
	if r.Op == "tmatmul" {
		dt, ok = elemType(r.Args["AType"])
	}
	if !ok {
		c.Left = leftInt16
		return c, nil
	}
	rows, cols := r.int("rows", "row"), r.int("cols", "col")
	vec := func(name string, d dtype.DType, rr, cc int) isa.Operand { return b.tile(name, isa.Vec, d, rr, cc) }
	switch r.Op {
	case "tabs", "texp", "trsqrt":
		op := map[string]isa.Opcode{"tabs": isa.TABS, "texp": isa.TEXP, "trsqrt": isa.TRSQRT}[r.Op]
		c.PC = b.op(op, vec("dst", dt, rows, cols), vec("src", dt, rows, cols))
		if r.Op == "texp" && dt == dtype.Float32 && rows*cols == 512 {
			c.Left = leftExp
		}
	case "tadd", "tmul", "tdiv":
		op := map[string]isa.Opcode{"tadd": isa.TADD, "tmul": isa.TMUL, "tdiv": isa.TDIV}[r.Op]
		c.PC = b.op(op, vec("dst", dt, rows, cols), vec("a", dt, rows, cols), vec("b", dt, rows, cols))
	case "tadds", "tdivs":
		// The scalar / tile form of tdivs (cases 5 to 8) measures as the tile / scalar
		// one (205 and 328 cycles both); the ISA has the tile / scalar form, run for both.
		op := map[string]isa.Opcode{"tadds": isa.TADDS, "tdivs": isa.TDIVS}[r.Op]
		c.PC = b.op(op, vec("dst", dt, rows, cols), vec("src", dt, rows, cols), isa.ImmOp(3))
		if r.Op == "tdivs" && dt.IsInt() {
			c.Left = leftNoOp
		}
	case "tcvt":
		src, _ := elemType(r.Args["SrcT"])
		dst, _ := elemType(r.Args["DstT"])
		c.PC = b.op(isa.TCVT, vec("dst", dst, rows, cols), vec("src", src, rows, cols))
	case "trowmax", "trowsum":
		op := map[string]isa.Opcode{"trowmax": isa.TROWMAX, "trowsum": isa.TROWSUM}[r.Op]
		c.PC = b.op(op, vec("dst", dt, rows, 32/dt.Size()), vec("src", dt, rows, cols))
		if cols == 256 {
			c.Left = leftFast
		}
	case "tcolmax":
		c.PC = b.op(isa.TCOLMAX, vec("dst", dt, 1, cols), vec("src", dt, rows, cols))
		if cols == 256 {
			c.Left = leftChain
		}
	case "trowexpand":
		c.PC = b.op(isa.TROWEXPAND, vec("dst", dt, rows, cols), vec("src", dt, rows, 32/dt.Size()))
	case "tsel":
		mask := vec("mask", dtype.Int8, rows, max(32, (cols+7)/8))
		c.PC = b.op(isa.TSEL, vec("dst", dt, rows, cols), mask, vec("a", dt, rows, cols), vec("b", dt, rows, cols))
	case "ttrans":
		c.PC = b.op(isa.TTRANS, vec("dst", dt, cols, rows), vec("src", dt, rows, cols))
	case "tsort32":
		if dt != dtype.Float32 {
			c.Left = leftF16
			return c, nil
		}
		c.PC = b.op(isa.TSORT32, vec("dst", dt, rows, 2*cols), vec("src", dt, rows, cols), vec("idx", dtype.Int32, rows, cols))
		c.Left = leftSort
	case "tmatmul":
		m, k, n := r.int("M"), r.int("K"), r.int("N")
		b.p.Core = isa.Cube
		c.PC = b.op(isa.TMATMUL, b.tile("c", isa.Acc, dtype.Float32, m, n), b.tile("a", isa.Left, dt, m, k), b.tile("b", isa.Right, dt, k, n))
	case "tload":
		// A column-major GM matrix (DN) of gRows x gCols read into the row-major tile
		// kTRows x kTCols: element (r, c) at r + c * gRows.
		gr, gc := r.int("gRows"), r.int("gCols")
		p := b.param("src", dt, gr*gc)
		t := b.tile("dst", isa.Vec, dt, r.int("kTRows"), r.int("kTCols"))
		c.PC = b.op(isa.TLOAD, t, isa.GMOp(isa.GMView{Param: p, Rows: gr, Cols: gc, RowStride: 1, ColStride: gr}))
		c.NoLatency = true
	case "tloadconv":
		// A convolution operand in its layout is contiguous in GM: an activation in
		// NC1HWC0 (N*C1*H*W rows of C0 = 32 bytes) or a weight in fractal-Z
		// (C1*H*W*N rows of C0), loaded into L1 as they lie.
		c0 := 32 / dt.Size()
		n := max(1, r.int("N"))
		rr := n * r.int("C1") * r.int("H") * r.int("W")
		b.p.Core = isa.Cube
		p := b.param("src", dt, rr*c0)
		c.PC = b.op(isa.TLOAD, b.tile("dst", isa.Mat, dt, rr, c0), isa.GMOp(isa.GMView{Param: p, Rows: rr, Cols: c0, RowStride: c0, ColStride: 1}))
		c.NoLatency = true
		if strings.Contains(r.Case, "fractalz") {
			c.Left = leftPort
		}
	default:
		return c, fmt.Errorf("no program for op %q", r.Op)
	}
	c.Prog = b.p
	return c, nil
}

// progBuilder assembles a one-instruction program.
type progBuilder struct{ p *isa.Program }

func (b *progBuilder) param(name string, dt dtype.DType, elems int) int {
	b.p.Params = append(b.p.Params, isa.Param{Name: name, DType: dt, Elems: elems})
	return len(b.p.Params) - 1
}

func (b *progBuilder) tile(name string, loc isa.Location, dt dtype.DType, rows, cols int) isa.Operand {
	b.p.Tiles = append(b.p.Tiles, isa.TileDecl{Name: name, Loc: loc, DType: dt, Rows: rows, Cols: cols})
	return isa.TileOp(len(b.p.Tiles) - 1)
}

func (b *progBuilder) op(op isa.Opcode, args ...isa.Operand) int {
	b.p.Body = append(b.p.Body, isa.Instr{Op: op, Args: args})
	return len(b.p.Body) - 1
}

// Cycles runs the case's program alone on chip (timing only) and returns the
// simulator's cycles for the measured instruction, read from its trace record: its
// start-to-completion cycles, less the memory's latency for a load.
func (c InstrCase) Cycles(chip *device.Chip) (int64, error) {
	if c.Prog == nil {
		return 0, fmt.Errorf("calib: %s is not run: %s", c.Name(), c.Left)
	}
	m, err := device.Compile(chip, c.Prog)
	if err != nil {
		return 0, err
	}
	addrs := make([]int, len(c.Prog.Params))
	size := 0
	for i, p := range c.Prog.Params {
		addrs[i] = size
		n, _ := p.Bytes()
		size += (n + 511) / 512 * 512
	}
	st, err := device.RunTask(chip, make([]byte, max(size, 512)), c.Prog.Core, []device.Block{{Prog: m, ParamAddrs: addrs}},
		device.RunOptions{NoValues: true, Trace: true, NoTimingCache: true})
	if err != nil {
		return 0, err
	}
	for _, e := range st.Trace {
		if e.PC >= 0 && m.Instrs[e.PC].Src == c.PC {
			if c.NoLatency {
				return e.Cycles() - e.Latency, nil
			}
			return e.Cycles(), nil
		}
	}
	return 0, fmt.Errorf("calib: %s: the measured instruction has no trace record", c.Name())
}
