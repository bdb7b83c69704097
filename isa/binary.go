package isa

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"pypto/dtype"
)

// The binary form of a Program, for tools and caches that should not re-parse text:
//
//	offset  size  field
//	0       4     magic "PTOB"
//	4       2     format version, little endian (BinaryVersion)
//	6       4     payload length n, little endian
//	10      n     payload
//	10+n    4     CRC-32 (IEEE) of the payload, little endian
//
// The payload is the program's fields in declaration order: strings as a uvarint
// length and bytes; enums (core, dtype, location, layout, mode, operand kind, pipe) as
// one byte; opcodes and counts as uvarints; every other integer as a zigzag varint;
// immediates as the 8 little-endian bytes of their float64 (NaN payloads kept).
//
//	program := name core nparams {param} nregs {reg} ntiles {tile} ninstrs {instr}
//	param   := name dtype elems
//	reg     := name
//	tile    := name loc dtype rows cols validRows validCols validRowsReg validColsReg layout
//	instr   := opcode mode nargs {operand}
//	operand := kind (tile | gm | imm | pipe | reg)
//	gm      := param offset rows cols rowStride colStride offsetReg rowsReg colsReg
//
// Decode(Encode(p)) equals p for every p, valid or not, in every field that its
// operands' kinds use (an operand keeps only the fields of its Kind). The version changes whenever
// the payload's layout does; opcode numbers are part of it (opcodes.go appends only).

// BinaryVersion is the version of the payload layout that Encode writes and Decode reads.
const BinaryVersion = 1

var binaryMagic = [4]byte{'P', 'T', 'O', 'B'}

const headerSize = 10

// DecodeError is malformed binary input, with the byte offset where reading failed.
type DecodeError struct {
	Offset int
	Msg    string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("pto binary: at byte %d: %s", e.Offset, e.Msg)
}

// MarshalBinary is Encode, for encoding.BinaryMarshaler.
func (p *Program) MarshalBinary() ([]byte, error) { return Encode(p), nil }

// UnmarshalBinary is Decode into p, for encoding.BinaryUnmarshaler.
func (p *Program) UnmarshalBinary(data []byte) error {
	q, err := Decode(data)
	if err == nil {
		*p = *q
	}
	return err
}

// Encode returns the binary form of p.
func Encode(p *Program) []byte {
	var e encoder
	e.str(p.Name)
	e.byte(uint8(p.Core))
	e.count(len(p.Params))
	for _, prm := range p.Params {
		e.str(prm.Name)
		e.byte(uint8(prm.DType))
		e.int(prm.Elems)
	}
	e.count(len(p.Regs))
	for _, r := range p.Regs {
		e.str(r.Name)
	}
	e.count(len(p.Tiles))
	for _, t := range p.Tiles {
		e.str(t.Name)
		e.byte(uint8(t.Loc))
		e.byte(uint8(t.DType))
		for _, n := range []int{t.Rows, t.Cols, t.ValidRows, t.ValidCols, int(t.ValidRowsReg), int(t.ValidColsReg)} {
			e.int(n)
		}
		e.byte(uint8(t.Layout))
	}
	e.count(len(p.Body))
	for _, in := range p.Body {
		e.count(int(in.Op))
		e.byte(uint8(in.Mode))
		e.count(len(in.Args))
		for _, a := range in.Args {
			e.operand(a)
		}
	}
	out := make([]byte, headerSize, headerSize+len(e.buf)+4)
	copy(out, binaryMagic[:])
	binary.LittleEndian.PutUint16(out[4:], BinaryVersion)
	binary.LittleEndian.PutUint32(out[6:], uint32(len(e.buf)))
	out = append(out, e.buf...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(e.buf))
}

type encoder struct{ buf []byte }

func (e *encoder) byte(b uint8) { e.buf = append(e.buf, b) }
func (e *encoder) count(n int)  { e.buf = binary.AppendUvarint(e.buf, uint64(n)) }
func (e *encoder) int(n int)    { e.buf = binary.AppendVarint(e.buf, int64(n)) }
func (e *encoder) str(s string) { e.count(len(s)); e.buf = append(e.buf, s...) }
func (e *encoder) float(x float64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(x))
}

func (e *encoder) operand(a Operand) {
	e.byte(uint8(a.Kind))
	switch a.Kind {
	case KindTile:
		e.int(a.Tile)
	case KindGM:
		v := a.GM
		for _, n := range []int{v.Param, v.Offset, v.Rows, v.Cols, v.RowStride, v.ColStride, int(v.OffsetReg), int(v.RowsReg), int(v.ColsReg)} {
			e.int(n)
		}
	case KindImm:
		e.float(a.Imm)
	case KindPipe:
		e.byte(uint8(a.Pipe))
	case KindReg:
		e.int(a.Reg)
	}
}

// Decode reads a program in the binary form Encode writes. It checks the header,
// the length and the checksum before the payload, so a truncated or corrupted file is
// reported as such; errors are *DecodeError. Like Parse it checks structure only:
// Verify says whether the program is valid.
func Decode(data []byte) (*Program, error) {
	fail := func(off int, format string, args ...any) (*Program, error) {
		return nil, &DecodeError{Offset: off, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) < headerSize {
		if len(data) < 4 || [4]byte(data[:4]) == binaryMagic {
			return fail(len(data), "truncated header: %d bytes, want %d", len(data), headerSize)
		}
	}
	if [4]byte(data[:4]) != binaryMagic {
		return fail(0, "not a PTO binary (magic %q, want %q)", data[:4], binaryMagic[:])
	}
	if v := binary.LittleEndian.Uint16(data[4:]); v != BinaryVersion {
		return fail(4, "unsupported format version %d (this decoder reads version %d)", v, BinaryVersion)
	}
	n := int(binary.LittleEndian.Uint32(data[6:]))
	switch have := len(data) - headerSize - 4; {
	case have < n:
		return fail(len(data), "truncated: the header announces %d payload bytes plus a 4-byte checksum, the input has %d after the header", n, len(data)-headerSize)
	case have > n:
		return fail(headerSize+n+4, "%d bytes after the checksum", have-n)
	}
	payload := data[headerSize : headerSize+n]
	if got, want := crc32.ChecksumIEEE(payload), binary.LittleEndian.Uint32(data[headerSize+n:]); got != want {
		return fail(headerSize+n, "checksum mismatch (stored %08x, computed %08x): the payload is corrupt", want, got)
	}
	d := &decoder{buf: payload, base: headerSize}
	p := d.program()
	if d.err != nil {
		return nil, d.err
	}
	if d.pos != len(payload) {
		return fail(headerSize+d.pos, "%d payload bytes after the program", len(payload)-d.pos)
	}
	return p, nil
}

// decoder reads the payload; the first error sticks and later reads return zeros.
type decoder struct {
	buf  []byte
	pos  int
	base int // offset of buf in the input, for error offsets
	err  *DecodeError
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = &DecodeError{Offset: d.base + d.pos, Msg: fmt.Sprintf(format, args...)}
	}
}

func (d *decoder) byte(what string) uint8 {
	if d.err != nil {
		return 0
	}
	if d.pos >= len(d.buf) {
		d.fail("payload ends before %s", what)
		return 0
	}
	b := d.buf[d.pos]
	d.pos++
	return b
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.buf[d.pos:])
	switch {
	case n == 0:
		d.fail("payload ends inside %s", what)
	case n < 0:
		d.fail("%s overflows 64 bits", what)
	default:
		d.pos += n
	}
	return x
}

func (d *decoder) int(what string) int {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.buf[d.pos:])
	switch {
	case n == 0:
		d.fail("payload ends inside %s", what)
	case n < 0:
		d.fail("%s overflows 64 bits", what)
	default:
		d.pos += n
	}
	return int(x)
}

// count reads a list length; each element takes at least min bytes, so a length the
// rest of the payload cannot hold is corrupt (and is not allocated).
func (d *decoder) count(what string, min int) int {
	at := d.pos
	n := d.uvarint(what)
	if rest := len(d.buf) - d.pos; d.err == nil && n > uint64(rest/min) {
		d.pos = at
		d.fail("%s %d exceeds what the remaining %d bytes can hold", what, n, rest)
		return 0
	}
	return int(n)
}

func (d *decoder) str(what string) string {
	n := d.count(what+" length", 1)
	if d.err != nil {
		return ""
	}
	s := string(d.buf[d.pos : d.pos+n])
	d.pos += n
	return s
}

func (d *decoder) float(what string) float64 {
	if d.err != nil {
		return 0
	}
	if len(d.buf)-d.pos < 8 {
		d.fail("payload ends inside %s", what)
		return 0
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(d.buf[d.pos:]))
	d.pos += 8
	return x
}

func (d *decoder) program() *Program {
	p := &Program{Name: d.str("kernel name"), Core: CoreKind(d.byte("core kind"))}
	if n := d.count("param count", 3); n > 0 {
		p.Params = make([]Param, n)
		for i := range p.Params {
			p.Params[i] = Param{Name: d.str("param name"), DType: dtype.DType(d.byte("param dtype")), Elems: d.int("param elements")}
		}
	}
	if n := d.count("register count", 1); n > 0 {
		p.Regs = make([]RegDecl, n)
		for i := range p.Regs {
			p.Regs[i] = RegDecl{Name: d.str("register name")}
		}
	}
	if n := d.count("tile count", 10); n > 0 {
		p.Tiles = make([]TileDecl, n)
		for i := range p.Tiles {
			t := &p.Tiles[i]
			t.Name, t.Loc, t.DType = d.str("tile name"), Location(d.byte("tile location")), dtype.DType(d.byte("tile dtype"))
			t.Rows, t.Cols = d.int("tile rows"), d.int("tile cols")
			t.ValidRows, t.ValidCols = d.int("valid rows"), d.int("valid cols")
			t.ValidRowsReg, t.ValidColsReg = RegRef(d.int("valid rows register")), RegRef(d.int("valid cols register"))
			t.Layout = Layout(d.byte("tile layout"))
		}
	}
	if n := d.count("instruction count", 3); n > 0 {
		p.Body = make([]Instr, n)
		for i := range p.Body {
			p.Body[i] = d.instr()
		}
	}
	return p
}

func (d *decoder) instr() Instr {
	op := d.uvarint("opcode")
	if d.err == nil && op > math.MaxUint16 {
		d.fail("opcode %d is out of range", op)
	}
	in := Instr{Op: Opcode(op), Mode: Mode(d.byte("mode"))}
	if n := d.count("operand count", 1); n > 0 {
		in.Args = make([]Operand, n)
		for i := range in.Args {
			in.Args[i] = d.operand()
		}
	}
	return in
}

// operand reads one operand; a kind with no fields of its own (invalid ones, which
// Verify rejects) is just its byte, so that any program round-trips.
func (d *decoder) operand() Operand {
	a := Operand{Kind: OperandKind(d.byte("operand kind"))}
	switch a.Kind {
	case KindTile:
		a.Tile = d.int("tile index")
	case KindGM:
		v := &a.GM
		v.Param, v.Offset = d.int("view param"), d.int("view offset")
		v.Rows, v.Cols = d.int("view rows"), d.int("view cols")
		v.RowStride, v.ColStride = d.int("view row stride"), d.int("view col stride")
		v.OffsetReg, v.RowsReg, v.ColsReg = RegRef(d.int("view offset register")), RegRef(d.int("view rows register")), RegRef(d.int("view cols register"))
	case KindImm:
		a.Imm = d.float("immediate")
	case KindPipe:
		a.Pipe = Pipe(d.byte("pipe"))
	case KindReg:
		a.Reg = d.int("register index")
	}
	return a
}
