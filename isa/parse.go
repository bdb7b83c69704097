package isa

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"pypto/dtype"
)

// ParseError is a syntax error in assembly text, at a 1-based line and byte column.
type ParseError struct {
	File      string // the file name for ParseFile, "" for Parse
	Line, Col int
	Msg       string // "expected ..., found ..."
}

func (e *ParseError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}

// Parse reads one program in the text form printed by Format. Blank lines and comments
// ('#' or '//' to the end of the line) may appear anywhere, before 'kernel' and after
// 'end' included; indentation is free. Declarations may come between instructions but
// each name must be declared before it is used. Parse checks syntax and names only:
// operand kinds come from the opcode table, everything else is Verify's job, so that
// wrong programs can be written down and verified. Errors are *ParseError.
func Parse(src string) (*Program, error) {
	return parse("", src)
}

// ParseFile reads and parses the program in a file; errors carry the file name.
func ParseFile(path string) (*Program, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, string(data))
}

func parse(file, src string) (*Program, error) {
	p := &asmParser{file: file, names: map[string]declared{}}
	lines := strings.Split(src, "\n")
	for i, text := range lines {
		ln := &line{text: text, num: i + 1, p: p}
		ln.skipSpace()
		if ln.atEnd() {
			continue
		}
		if err := p.line(ln); err != nil {
			return nil, err
		}
	}
	if p.state != afterEnd {
		last := lines[len(lines)-1]
		want := "'end'"
		if p.state == beforeHeader {
			want = "'kernel'"
		}
		return nil, &ParseError{File: file, Line: len(lines), Col: len(last) + 1, Msg: "expected " + want + ", found end of input"}
	}
	return p.prog, nil
}

type parseState uint8

const (
	beforeHeader parseState = iota
	inBody
	afterEnd
)

// declKind is what a %name refers to.
type declKind uint8

const (
	declParam declKind = iota
	declTile
	declReg
)

var declKindNames = [...]string{declParam: "param", declTile: "tile", declReg: "reg"}

// declared records what a name refers to, for operand checks and duplicate reports.
type declared struct {
	kind  declKind
	index int
	line  int
}

type asmParser struct {
	file  string
	state parseState
	prog  *Program
	names map[string]declared
}

// line scans one line of text; every instruction and declaration fits on one line, so
// positions in errors are simply this line's number and a byte offset into it.
type line struct {
	text string
	pos  int
	num  int
	p    *asmParser
}

func (l *line) errorf(col int, format string, args ...any) *ParseError {
	return &ParseError{File: l.p.file, Line: l.num, Col: col + 1, Msg: fmt.Sprintf(format, args...)}
}

// skipSpace skips blanks; a comment runs to the end of the line.
func (l *line) skipSpace() {
	for l.pos < len(l.text) {
		switch c := l.text[l.pos]; {
		case c == ' ' || c == '\t' || c == '\r':
			l.pos++
		case c == '#' || strings.HasPrefix(l.text[l.pos:], "//"):
			l.pos = len(l.text)
		default:
			return
		}
	}
}

func (l *line) atEnd() bool { return l.pos >= len(l.text) }

func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '.' }

// found describes what is at the current position, for "expected X, found Y".
func (l *line) found() string {
	if l.atEnd() {
		return "end of line"
	}
	rest := l.text[l.pos:]
	if rest[0] == '"' {
		if n, ok := stringLiteralLen(rest); ok {
			return rest[:n]
		}
	}
	n := 0
	for n < len(rest) && n < 40 && isWordByte(rest[n]) {
		n++
	}
	if n == 0 {
		n = 1
	}
	return "'" + rest[:n] + "'"
}

// word reads a run of letters, digits and dots (keywords, opcodes, pipes, dtypes).
func (l *line) word() (string, int) {
	l.skipSpace()
	start := l.pos
	for l.pos < len(l.text) && isWordByte(l.text[l.pos]) {
		l.pos++
	}
	return l.text[start:l.pos], start
}

// expect consumes the punctuation c or reports what was there instead.
func (l *line) expect(c byte, context string) *ParseError {
	l.skipSpace()
	if l.atEnd() || l.text[l.pos] != c {
		return l.errorf(l.pos, "expected '%c'%s, found %s", c, context, l.found())
	}
	l.pos++
	return nil
}

// expectEnd checks that only blanks or a comment remain.
func (l *line) expectEnd(context string) *ParseError {
	l.skipSpace()
	if !l.atEnd() {
		return l.errorf(l.pos, "expected end of line %s, found %s", context, l.found())
	}
	return nil
}

// integer reads an optionally negative decimal integer; negative values are syntax so
// that any Program prints and parses back, and Verify rejects them where they are wrong.
func (l *line) integer(what string) (int, *ParseError) {
	l.skipSpace()
	start := l.pos
	if l.pos < len(l.text) && l.text[l.pos] == '-' {
		l.pos++
	}
	for l.pos < len(l.text) && isDigit(l.text[l.pos]) {
		l.pos++
	}
	tok := l.text[start:l.pos]
	n, err := strconv.Atoi(tok)
	if err != nil {
		l.pos = start
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, l.errorf(start, "expected %s, found %s, which is out of range", what, tok)
		}
		return 0, l.errorf(start, "expected %s (an integer), found %s", what, l.found())
	}
	return n, nil
}

// name reads an identifier or a quoted string.
func (l *line) name(what string) (string, int, *ParseError) {
	l.skipSpace()
	start := l.pos
	rest := l.text[l.pos:]
	switch {
	case rest != "" && rest[0] == '"':
		n, ok := stringLiteralLen(rest)
		if !ok {
			return "", start, l.errorf(start, "expected %s, found an unterminated string", what)
		}
		s, err := strconv.Unquote(rest[:n])
		if err != nil {
			return "", start, l.errorf(start, "expected %s, found invalid quoted string %s", what, rest[:n])
		}
		if s == "" {
			return "", start, l.errorf(start, "expected %s, found an empty name", what)
		}
		l.pos += n
		return s, start, nil
	case rest != "" && isLetter(rest[0]):
		w, _ := l.word()
		return w, start, nil
	}
	return "", start, l.errorf(start, "expected %s (identifier or quoted string), found %s", what, l.found())
}

// ref reads %name.
func (l *line) ref(what string) (string, int, *ParseError) {
	l.skipSpace()
	start := l.pos
	if l.atEnd() || l.text[l.pos] != '%' {
		return "", start, l.errorf(start, "expected %s (%%name), found %s", what, l.found())
	}
	l.pos++
	if l.atEnd() || (l.text[l.pos] != '"' && !isLetter(l.text[l.pos])) {
		return "", start, l.errorf(l.pos, "expected %s name after '%%', found %s", what, l.found())
	}
	s, _, err := l.name(what + " name")
	return s, start, err
}

func stringLiteralLen(s string) (int, bool) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

func (l *line) dtype() (dtype.DType, *ParseError) {
	w, at := l.word()
	for _, d := range dtype.All {
		if d.String() == w {
			return d, nil
		}
	}
	l.pos = at
	return dtype.Invalid, l.errorf(at, "expected dtype (f32, f16, bf16, i8, i32, bool), found %s", l.found())
}

// line dispatches on the first word of a non-blank line.
func (p *asmParser) line(l *line) *ParseError {
	w, at := l.word()
	switch p.state {
	case beforeHeader:
		if w != "kernel" {
			l.pos = at
			return l.errorf(at, "expected 'kernel', found %s", l.found())
		}
		return p.header(l)
	case afterEnd:
		l.pos = at
		return l.errorf(at, "expected end of input after 'end', found %s", l.found())
	}
	switch w {
	case "end":
		p.state = afterEnd
		return l.expectEnd("after 'end'")
	case "param":
		return p.param(l)
	case "tile":
		return p.tile(l)
	case "reg":
		return p.reg(l)
	}
	op, mode, ok := lookupInstr(w)
	if !ok {
		l.pos = at
		return l.errorf(at, "expected instruction, 'param', 'tile' or 'end', found %s", l.found())
	}
	if !op.Takes(mode) {
		return l.errorf(at, "expected %s, found '%s'", modeChoices(op), w)
	}
	return p.instr(l, op, mode)
}

// lookupInstr splits an opcode word into the opcode and its mode suffix. Whole names
// are tried first, so an opcode whose name has a dot (tmatmul.acc) is never read as
// another opcode with a mode.
func lookupInstr(w string) (Opcode, Mode, bool) {
	if op, ok := LookupOpcode(w); ok {
		return op, ModeNone, true
	}
	i := strings.LastIndexByte(w, '.')
	if i < 0 {
		return OpInvalid, ModeNone, false
	}
	op, ok := LookupOpcode(w[:i])
	m, okm := ParseMode(w[i+1:])
	if !ok || !okm {
		return OpInvalid, ModeNone, false
	}
	return op, m, true
}

// modeChoices says how an opcode may be spelt with its modes.
func modeChoices(op Opcode) string {
	info := op.Info()
	var forms []string
	if !info.ModeRequired {
		forms = append(forms, op.String())
	}
	for _, m := range info.Modes {
		forms = append(forms, op.String()+"."+m.String())
	}
	if len(forms) == 1 {
		return forms[0]
	}
	return "one of " + strings.Join(forms, " ")
}

// header := 'kernel' name core
func (p *asmParser) header(l *line) *ParseError {
	name, _, err := l.name("kernel name")
	if err != nil {
		return err
	}
	w, at := l.word()
	var core CoreKind
	switch w {
	case Cube.String():
		core = Cube
	case Vector.String():
		core = Vector
	default:
		l.pos = at
		return l.errorf(at, "expected core kind (cube or vector), found %s", l.found())
	}
	p.prog = &Program{Name: name, Core: core}
	p.state = inBody
	return l.expectEnd("after the kernel header")
}

func (p *asmParser) declare(l *line, name string, at int, d declared) *ParseError {
	if prev, dup := p.names[name]; dup {
		return l.errorf(at, "%%%s is already declared on line %d", quoteName(name), prev.line)
	}
	p.names[name] = d
	return nil
}

// param := 'param' %name ':' dtype '[' elems ']'
func (p *asmParser) param(l *line) *ParseError {
	name, at, err := l.ref("param")
	if err != nil {
		return err
	}
	if err := l.expect(':', " after the param name"); err != nil {
		return err
	}
	dt, err := l.dtype()
	if err != nil {
		return err
	}
	if err := l.expect('[', " after the dtype"); err != nil {
		return err
	}
	elems, err := l.integer("element count")
	if err != nil {
		return err
	}
	if err := l.expect(']', " after the element count"); err != nil {
		return err
	}
	if err := p.declare(l, name, at, declared{kind: declParam, index: len(p.prog.Params), line: l.num}); err != nil {
		return err
	}
	p.prog.Params = append(p.prog.Params, Param{Name: name, DType: dt, Elems: elems})
	return l.expectEnd("after the param declaration")
}

// reg := 'reg' %name
func (p *asmParser) reg(l *line) *ParseError {
	name, at, err := l.ref("reg")
	if err != nil {
		return err
	}
	if err := p.declare(l, name, at, declared{kind: declReg, index: len(p.prog.Regs), line: l.num}); err != nil {
		return err
	}
	p.prog.Regs = append(p.prog.Regs, RegDecl{Name: name})
	return l.expectEnd("after the reg declaration")
}

// tile := 'tile' %name ':' location dtype '[' rows 'x' cols ']' ['valid' vdim 'x' vdim] [layout]
// vdim := integer | %reg | '*'
func (p *asmParser) tile(l *line) *ParseError {
	name, at, err := l.ref("tile")
	if err != nil {
		return err
	}
	if err := l.expect(':', " after the tile name"); err != nil {
		return err
	}
	w, wat := l.word()
	loc, ok := ParseLocation(w)
	if !ok {
		l.pos = wat
		return l.errorf(wat, "expected location (mat, left, right, acc, vec, bias, scaling), found %s", l.found())
	}
	dt, err := l.dtype()
	if err != nil {
		return err
	}
	if err := l.expect('[', " after the dtype"); err != nil {
		return err
	}
	rows, cols, err := l.dims()
	if err != nil {
		return err
	}
	if err := l.expect(']', " after the tile shape"); err != nil {
		return err
	}
	t := TileDecl{Name: name, Loc: loc, DType: dt, Rows: rows, Cols: cols}
	w, wat = l.word()
	if w == "valid" {
		if t.ValidRows, t.ValidRowsReg, err = p.validDim(l, "valid rows"); err != nil {
			return err
		}
		if err := l.expect('x', " between the valid rows and cols"); err != nil {
			return err
		}
		if t.ValidCols, t.ValidColsReg, err = p.validDim(l, "valid cols"); err != nil {
			return err
		}
		w, wat = l.word()
	}
	if w != "" {
		lay, ok := ParseLayout(w)
		if !ok {
			l.pos = wat
			return l.errorf(wat, "expected 'valid', a layout (nd, dn, nz, zn) or end of line after the tile shape, found %s", l.found())
		}
		t.Layout = lay
	}
	if err := p.declare(l, name, at, declared{kind: declTile, index: len(p.prog.Tiles), line: l.num}); err != nil {
		return err
	}
	p.prog.Tiles = append(p.prog.Tiles, t)
	return l.expectEnd("after the tile declaration")
}

// validDim reads a valid size: an integer, a register or '*' (all, the zero value).
func (p *asmParser) validDim(l *line, what string) (int, RegRef, *ParseError) {
	l.skipSpace()
	switch {
	case !l.atEnd() && l.text[l.pos] == '*':
		l.pos++
		return 0, 0, nil
	case !l.atEnd() && l.text[l.pos] == '%':
		d, err := p.lookup(l, declReg)
		return 0, UseReg(d.index), err
	}
	if l.atEnd() || !isDigit(l.text[l.pos]) && l.text[l.pos] != '-' {
		return 0, 0, l.errorf(l.pos, "expected %s (an integer, a register or '*'), found %s", what, l.found())
	}
	n, err := l.integer(what)
	return n, 0, err
}

// dims := rows 'x' cols
func (l *line) dims() (int, int, *ParseError) {
	rows, err := l.integer("rows")
	if err != nil {
		return 0, 0, err
	}
	if err := l.expect('x', " between rows and cols"); err != nil {
		return 0, 0, err
	}
	cols, err := l.integer("cols")
	return rows, cols, err
}

// instr := opcode['.'mode] [operand {',' operand}], operand kinds from the opcode table.
func (p *asmParser) instr(l *line, op Opcode, mode Mode) *ParseError {
	kinds := op.Info().Operands
	in := Instr{Op: op, Mode: mode}
	if len(kinds) > 0 {
		in.Args = make([]Operand, len(kinds))
	}
	for i, k := range kinds {
		if i > 0 {
			if err := l.expect(',', fmt.Sprintf(" before operand %d of %s", i+1, op)); err != nil {
				return err
			}
		}
		a, err := p.operand(l, k)
		if err != nil {
			return err
		}
		in.Args[i] = a
	}
	if err := l.expectEnd(fmt.Sprintf("after the %d operands of %s (%s)", len(kinds), op, kindList(kinds))); err != nil {
		return err
	}
	p.prog.Body = append(p.prog.Body, in)
	return nil
}

func kindList(kinds []OperandKind) string {
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = k.String()
	}
	return strings.Join(parts, ", ")
}

func (p *asmParser) operand(l *line, k OperandKind) (Operand, *ParseError) {
	switch k {
	case KindTile:
		d, err := p.lookup(l, declTile)
		return TileOp(d.index), err
	case KindGM:
		d, err := p.lookup(l, declParam)
		if err != nil {
			return Operand{}, err
		}
		v, err := p.view(l, d.index)
		return GMOp(v), err
	case KindReg:
		d, err := p.lookup(l, declReg)
		return RegOp(d.index), err
	case KindScalar:
		if l.skipSpace(); !l.atEnd() && l.text[l.pos] == '%' {
			d, err := p.lookup(l, declReg)
			return RegOp(d.index), err
		}
		v, err := l.number()
		return ImmOp(v), err
	case KindImm:
		v, err := l.number()
		return ImmOp(v), err
	case KindPipe:
		w, at := l.word()
		pp, ok := ParsePipe(w)
		if !ok {
			l.pos = at
			return Operand{}, l.errorf(at, "expected pipe (s, mte1, mte2, mte3, m, v, fix, all), found %s", l.found())
		}
		return PipeOp(pp), nil
	}
	return Operand{}, l.errorf(l.pos, "opcode table has an operand of unknown kind %d", k)
}

// lookup reads %name and resolves it to a declaration of the wanted kind.
func (p *asmParser) lookup(l *line, want declKind) (declared, *ParseError) {
	what := declKindNames[want]
	name, at, err := l.ref(what)
	if err != nil {
		return declared{}, err
	}
	d, ok := p.names[name]
	switch {
	case !ok:
		return declared{}, l.errorf(at, "expected %s, found %%%s, which is not declared", what, quoteName(name))
	case d.kind != want:
		return declared{}, l.errorf(at, "expected %s, found %s %%%s", what, declKindNames[d.kind], quoteName(name))
	}
	return d, nil
}

// view := '[' offset ';' vrows 'x' vcols ';' rowStride ',' colStride ']', after the param.
// offset := integer | %reg ['+' integer];  vrows, vcols := integer | %reg '<=' integer
func (p *asmParser) view(l *line, param int) (GMView, *ParseError) {
	v := GMView{Param: param}
	var err *ParseError
	if err = l.expect('[', " after the param of a GM view"); err != nil {
		return v, err
	}
	if l.skipSpace(); !l.atEnd() && l.text[l.pos] == '%' {
		d, err := p.lookup(l, declReg)
		if err != nil {
			return v, err
		}
		v.OffsetReg = UseReg(d.index)
		if l.skipSpace(); !l.atEnd() && l.text[l.pos] == '+' {
			l.pos++
			if v.Offset, err = l.integer("offset after '+'"); err != nil {
				return v, err
			}
		}
	} else if v.Offset, err = l.integer("offset (an integer or a register)"); err != nil {
		return v, err
	}
	if err = l.expect(';', " after the view offset"); err != nil {
		return v, err
	}
	if v.Rows, v.RowsReg, err = p.bound(l, "rows"); err != nil {
		return v, err
	}
	if err = l.expect('x', " between rows and cols"); err != nil {
		return v, err
	}
	if v.Cols, v.ColsReg, err = p.bound(l, "cols"); err != nil {
		return v, err
	}
	if err = l.expect(';', " after the view shape"); err != nil {
		return v, err
	}
	if v.RowStride, err = l.integer("row stride"); err != nil {
		return v, err
	}
	if err = l.expect(',', " between the row and col strides"); err != nil {
		return v, err
	}
	if v.ColStride, err = l.integer("col stride"); err != nil {
		return v, err
	}
	return v, l.expect(']', " closing the GM view")
}

// bound reads a view dimension: an integer, or %reg '<=' integer.
func (p *asmParser) bound(l *line, what string) (int, RegRef, *ParseError) {
	if l.skipSpace(); l.atEnd() || l.text[l.pos] != '%' {
		n, err := l.integer(what)
		return n, 0, err
	}
	d, err := p.lookup(l, declReg)
	if err != nil {
		return 0, 0, err
	}
	l.skipSpace()
	if !strings.HasPrefix(l.text[l.pos:], "<=") {
		return 0, 0, l.errorf(l.pos, "expected '<=' and the largest %s after the register, found %s", what, l.found())
	}
	l.pos += 2
	n, err := l.integer("largest " + what)
	return n, UseReg(d.index), err
}

// number reads an immediate: anything strconv.ParseFloat accepts (including NaN, Inf).
func (l *line) number() (float64, *ParseError) {
	l.skipSpace()
	start := l.pos
	for l.pos < len(l.text) && (isWordByte(l.text[l.pos]) || l.text[l.pos] == '+' || l.text[l.pos] == '-') {
		l.pos++
	}
	tok := l.text[start:l.pos]
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		l.pos = start
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, l.errorf(start, "expected number, found %s, which is out of range of float64", tok)
		}
		if tok != "" {
			return 0, l.errorf(start, "expected number, found '%s'", tok)
		}
		return 0, l.errorf(start, "expected number, found %s", l.found())
	}
	return v, nil
}

// ParseInstr reads one instruction in the text form, its operands named after p's
// params, registers and tiles (what FormatInstr prints). p is not changed.
func ParseInstr(p *Program, text string) (Instr, error) {
	ap := &asmParser{names: map[string]declared{}, prog: &Program{Name: p.Name, Core: p.Core, Params: p.Params, Regs: p.Regs, Tiles: p.Tiles}, state: inBody}
	for i, prm := range p.Params {
		ap.names[prm.Name] = declared{kind: declParam, index: i}
	}
	for i, r := range p.Regs {
		ap.names[r.Name] = declared{kind: declReg, index: i}
	}
	for i, t := range p.Tiles {
		ap.names[t.Name] = declared{kind: declTile, index: i}
	}
	l := &line{text: text, num: 1, p: ap}
	l.skipSpace()
	w, at := l.word()
	op, mode, ok := lookupInstr(w)
	if !ok {
		return Instr{}, l.errorf(at, "expected instruction, found '%s'", w)
	}
	if !op.Takes(mode) {
		return Instr{}, l.errorf(at, "expected %s, found '%s'", modeChoices(op), w)
	}
	if err := ap.instr(l, op, mode); err != nil {
		return Instr{}, err
	}
	return ap.prog.Body[0], nil
}
