package ptoas

import (
	"math"
	"strings"

	"pypto/dtype"
	"pypto/isa"
)

// readSpec says how a pto op becomes one of our instructions: order[i] is the op's
// operand (in its ODS order, sources then destination) that is our operand i.
type readSpec struct {
	op    isa.Opcode
	order []int
}

var readSpecs = map[string]readSpec{}

func init() {
	add := func(order []int, ops map[string]isa.Opcode) {
		for name, op := range ops {
			readSpecs[name] = readSpec{op, order}
		}
	}
	add([]int{2, 0, 1}, map[string]isa.Opcode{ // (a, b, dst)
		"tadd": isa.TADD, "tsub": isa.TSUB, "tmul": isa.TMUL, "tdiv": isa.TDIV, "tmin": isa.TMIN, "tmax": isa.TMAX,
		"trem": isa.TREM, "tprelu": isa.TPRELU, "tand": isa.TAND, "tor": isa.TOR, "txor": isa.TXOR, "tshl": isa.TSHL,
		"tshr": isa.TSHR, "tpartadd": isa.TPARTADD, "tpartmax": isa.TPARTMAX, "tpartmin": isa.TPARTMIN,
		"tgather": isa.TGATHER, "tgatherb": isa.TGATHERB, "tscatter": isa.TSCATTER,
		"trowexpandsub": isa.TROWEXPANDSUB, "trowexpandmul": isa.TROWEXPANDMUL, "trowexpanddiv": isa.TROWEXPANDDIV,
		"tcmp": isa.TCMP,
		// (src, scalar, dst)
		"tadds": isa.TADDS, "tsubs": isa.TSUBS, "tmuls": isa.TMULS, "tdivs": isa.TDIVS, "tmins": isa.TMINS,
		"tmaxs": isa.TMAXS, "trems": isa.TREMS, "tands": isa.TANDS, "tors": isa.TORS, "txors": isa.TXORS,
		"tlrelu": isa.TLRELU, "tcmps": isa.TCMPS,
		// (a, b, dst) of the cube; (mem, idx, dst)
		"tmatmul": isa.TMATMUL, "tmgather": isa.MGATHER,
	})
	add([]int{1, 0}, map[string]isa.Opcode{ // (src, dst)
		"tabs": isa.TABS, "tneg": isa.TNEG, "texp": isa.TEXP, "tlog": isa.TLOG, "tsqrt": isa.TSQRT, "trsqrt": isa.TRSQRT,
		"trecip": isa.TRECIP, "trelu": isa.TRELU, "tnot": isa.TNOT, "trowsum": isa.TROWSUM, "trowmax": isa.TROWMAX,
		"tcolmax": isa.TCOLMAX, "tcolmin": isa.TCOLMIN, "trowexpand": isa.TROWEXPAND, "tcolexpand": isa.TCOLEXPAND,
		"treshape": isa.TRESHAPE, "tcvt": isa.TCVT, "tmov": isa.TMOV, "texpands": isa.TEXPANDS,
		"tload": isa.TLOAD, "tstore": isa.TSTORE,
	})
	add([]int{2, 0}, map[string]isa.Opcode{"trowmin": isa.TROWMIN, "tcolsum": isa.TCOLSUM, "ttrans": isa.TTRANS}) // (src, tmp, dst)
	add([]int{3, 0, 1, 2}, map[string]isa.Opcode{"taddc": isa.TADDC, "tsubc": isa.TSUBC, "tsel": isa.TSEL, "tmatmul.bias": isa.TMATMUL_BIAS})
	add([]int{3, 1, 2}, map[string]isa.Opcode{"tmatmul.acc": isa.TMATMUL_ACC})                  // (acc_in, a, b, dst)
	add([]int{1, 0, 2}, map[string]isa.Opcode{"tsort32": isa.TSORT32})                          // (src, dst, idx)
	add([]int{2, 0, 1}, map[string]isa.Opcode{"tmscatter": isa.MSCATTER})                       // (src, idx, mem)
	add([]int{3, 0, 1, 2}, map[string]isa.Opcode{"textract": isa.TEXTRACT})                     // (src, row, col, dst)
	add([]int{1, 0}, map[string]isa.Opcode{"tmrgsort": isa.TMRGSORT, "tfillpad": isa.TFILLPAD}) // + an attribute
	add([]int{1, 0}, map[string]isa.Opcode{"tci": isa.TCI})                                     // (start, dst) + descending
}

var cmpByName = func() map[string]isa.Mode {
	m := map[string]isa.Mode{}
	for mode, n := range cmpNames {
		m[n] = mode
	}
	return m
}()

var roundByName = func() map[string]isa.Mode {
	m := map[string]isa.Mode{}
	for mode, n := range roundNames {
		m[n] = mode
	}
	return m
}()

// enumAttr reads `#pto<kind VALUE>` (or a bare VALUE).
func enumAttr(a attr) string {
	s := strings.TrimSuffix(strings.TrimPrefix(a.s, "#pto<"), ">")
	if i := strings.LastIndexByte(s, ' '); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// ptoOp writes one of our instructions for a pto op.
func (b *builder) ptoOp(o *mop) {
	name := strings.TrimPrefix(o.name, "pto.")
	spec, ok := readSpecs[name]
	if !ok {
		b.fail(o.pos, "op %s has no PyPTO instruction (see docs/pto-as.md for the ops the reader takes)", o.name)
	}
	info := spec.op.Info()
	if len(o.operands) != len(spec.order)+extraOperands(name) && !(name == "tmatmul" && len(o.operands) == 4) {
		b.fail(o.pos, "%s takes %d operands, has %d", o.name, len(spec.order)+extraOperands(name), len(o.operands))
	}
	if name == "tmatmul" && len(o.operands) == 4 { // tmatmul with its optional bias: (a, b, dst, bias)
		spec = readSpec{isa.TMATMUL_BIAS, []int{2, 0, 1, 3}}
		info = spec.op.Info()
	}
	in := isa.Instr{Op: spec.op, Args: make([]isa.Operand, len(info.Operands))}
	for i, k := range info.Operands {
		if i >= len(spec.order) {
			break
		}
		src := o.operands[spec.order[i]]
		switch k {
		case isa.KindTile:
			in.Args[i] = isa.TileOp(b.tileOf(o.pos, src))
		case isa.KindGM:
			in.Args[i] = b.gm(o.pos, src)
		case isa.KindImm:
			in.Args[i] = isa.ImmOp(b.immOf(o.pos, src))
		}
	}
	switch name {
	case "tcmp", "tcmps":
		m, ok := cmpByName[enumAttr(o.props["cmpMode"])]
		if !ok {
			b.fail(o.pos, "%s needs a cmpMode (#pto<cmp less_than> and the like)", o.name)
		}
		in.Mode = m
	case "tcvt":
		if a, ok := o.props["rmode"]; ok {
			m, ok := roundByName[enumAttr(a)]
			if !ok {
				b.fail(o.pos, "tcvt rounding mode %s", a.s)
			}
			in.Mode = m
		}
		// CAST_RINT (the default) rounds to nearest even whatever the types: from a
		// float to an integer that is our tcvt.rint (ours without a mode truncates).
		from, to := b.prog.Tiles[in.Args[1].Tile].DType, b.prog.Tiles[in.Args[0].Tile].DType
		if in.Mode == isa.ModeNone && from.IsFloat() && to.IsInt() && to != dtype.Bool {
			in.Mode = isa.RoundRint
		}
	case "tmatmul.acc":
		if o.operands[0] != o.operands[3] {
			b.fail(o.pos, "tmatmul.acc accumulating into another tile than its input: PyPTO's accumulates in place")
		}
	case "textract":
		in.Args[2] = isa.ImmOp(float64(b.constInt(o.pos, o.operands[1], "textract's row")))
		in.Args[3] = isa.ImmOp(float64(b.constInt(o.pos, o.operands[2], "textract's col")))
	case "tmrgsort":
		n, ok := intAttr(o.props, "blockLen")
		if !ok {
			b.fail(o.pos, "tmrgsort needs blockLen")
		}
		if n%2 != 0 {
			b.fail(o.pos, "tmrgsort's blockLen %d is not a whole number of (value, index) pairs (it counts f32 elements, two per pair)", n)
		}
		in.Args[2] = isa.ImmOp(float64(n / 2))
	case "tfillpad":
		if b.tilePad[in.Args[0].Tile] != padZero {
			b.fail(o.pos, "tfillpad into a tile whose pad value is not zero (pad=1): PyPTO fills with a value it names, here only 0")
		}
		in.Args[2] = isa.ImmOp(0)
	case "tci":
		step := 1.0
		if a, ok := o.props["descending"]; ok && a.kind == aBool && a.i != 0 {
			step = -1
		}
		in.Args = []isa.Operand{isa.TileOp(b.tileOf(o.pos, o.operands[1])), isa.ImmOp(b.immOf(o.pos, o.operands[0])), isa.ImmOp(step)}
	}
	b.emit(o.pos, in)
}

// extraOperands counts an op's operands that are not ours (scratch tiles).
func extraOperands(name string) int {
	switch name {
	case "trowmin", "tcolsum", "ttrans":
		return 1
	case "tmatmul.acc":
		return 1
	}
	return 0
}

func (b *builder) tileOf(pos Pos, name string) int {
	v := b.get(pos, name)
	if v.kind != vTile || v.tile < 0 {
		b.fail(pos, "%s is not a tile", name)
	}
	return v.tile
}

// immOf is a scalar operand's value: a constant (a float constant's exact value when
// it carries pypto.imm).
func (b *builder) immOf(pos Pos, name string) float64 {
	v := b.get(pos, name)
	if v.kind != vConst {
		b.fail(pos, "the scalar %s must be a constant: PyPTO's tile-scalar ops take an immediate", name)
	}
	if v.float {
		return v.f
	}
	return float64(v.i)
}

var _ = math.Inf
var _ = dtype.Invalid
