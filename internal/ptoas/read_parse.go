package ptoas

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"pypto/dtype"
)

// The reader's parser: a module of functions of ops, in MLIR's generic form or in
// the custom forms PTO-AS programs commonly use (the pto ops' `ins(...) outs(...)`,
// make_tensor_view, subview, alloc_tile, set_flag / wait_flag, scf.for / scf.if,
// arith constants and integer ops, func.func and return).

// mop is one parsed op.
type mop struct {
	pos      Pos
	results  []string
	name     string
	operands []string
	types    []string // operand types (where the form gives them)
	resTypes []string
	props    map[string]attr
	attrs    map[string]attr
	regions  [][]*mop

	// Custom forms' extra parts.
	iv         string            // scf.for induction variable
	lists      [][]string        // make_tensor_view shape/strides, subview offsets/sizes
	pipes      []string          // set_flag / wait_flag: src pipe, dst pipe, event
	namedOps   map[string]string // alloc_tile valid_row / valid_col
	insCount   int               // ins(...) outs(...): how many operands are ins
	symbol     string            // func.func name
	args       []funcArg
	elseRegion bool
}

type funcArg struct {
	name, typ string
	attrs     map[string]attr
	pos       Pos
}

// attr is an attribute value: a number (with its type), a string, a bool, a unit, an
// array, or any other MLIR attribute kept as text.
type attr struct {
	kind  attrKind
	i     int64
	f     float64
	isInt bool
	s     string // string value, or the raw text of other attributes
	typ   string
	list  []attr
	pos   Pos
}

type attrKind uint8

const (
	aRaw attrKind = iota
	aNumber
	aString
	aBool
	aUnit
	aArray
)

type parser struct {
	file    string
	toks    []token
	at      int
	aliases map[string]string
}

func (p *parser) peek() token { return p.toks[p.at] }
func (p *parser) next() token {
	t := p.toks[p.at]
	if t.kind != tEOF {
		p.at++
	}
	return t
}

func (p *parser) errorf(pos Pos, format string, args ...any) *ReadError {
	return &ReadError{File: p.file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// describe names a token in an error message.
func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tString:
		return strconv.Quote(t.text)
	}
	return "'" + t.text + "'"
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return (t.kind == tPunct || t.kind == tIdent) && t.text == text
}

func (p *parser) accept(text string) bool {
	if p.is(text) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expect(text, context string) error {
	if p.accept(text) {
		return nil
	}
	t := p.peek()
	return p.errorf(t.pos, "expected '%s'%s, found %s", text, context, describe(t))
}

func (p *parser) value(context string) (string, error) {
	t := p.peek()
	if t.kind != tValue {
		return "", p.errorf(t.pos, "expected an SSA value (%%name)%s, found %s", context, describe(t))
	}
	p.next()
	return t.text, nil
}

// typ reads a type: a builtin (index, i64, f32, ...), a dialect type, or an alias,
// which it resolves.
func (p *parser) typ(context string) (string, error) {
	t := p.peek()
	switch t.kind {
	case tType:
		p.next()
		if !strings.Contains(t.text, "<") {
			if def, ok := p.aliases[t.text]; ok {
				return def, nil
			}
			if !strings.Contains(t.text, ".") {
				return "", p.errorf(t.pos, "unknown type alias %s", t.text)
			}
		}
		return t.text, nil
	case tIdent:
		p.next()
		if p.is("<") { // memref<...>, vector<...>: read the bracketed rest as text
			var b strings.Builder
			b.WriteString(t.text)
			depth := 0
			for {
				n := p.next()
				if n.kind == tEOF {
					return "", p.errorf(t.pos, "type %s not closed", t.text)
				}
				b.WriteString(n.text)
				if n.text == "<" {
					depth++
				} else if n.text == ">" {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			return b.String(), nil
		}
		return t.text, nil
	}
	return "", p.errorf(t.pos, "expected a type%s, found %s", context, describe(t))
}

// parseModule reads the whole text: type aliases, then a module of functions (or
// functions at the top level).
func parseModule(file, src string) ([]*mop, error) {
	toks, err := tokenize(file, src)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, toks: toks, aliases: map[string]string{}}
	var funcs []*mop
	for {
		t := p.peek()
		switch {
		case t.kind == tEOF:
			if len(funcs) == 0 {
				return nil, p.errorf(t.pos, "expected a func.func, found end of input")
			}
			return funcs, nil
		case t.kind == tType && p.toks[p.at+1].text == "=":
			p.next()
			p.next()
			def, err := p.typ(" after '='")
			if err != nil {
				return nil, err
			}
			p.aliases[t.text] = def
		case t.kind == tIdent && t.text == "module":
			p.next()
			if p.accept("attributes") {
				if _, err := p.attrDict(); err != nil {
					return nil, err
				}
			}
			if err := p.expect("{", " to open the module"); err != nil {
				return nil, err
			}
			for !p.is("}") {
				f, err := p.function()
				if err != nil {
					return nil, err
				}
				funcs = append(funcs, f)
			}
			p.next()
		case t.kind == tIdent && (t.text == "func.func" || t.text == "func"):
			f, err := p.function()
			if err != nil {
				return nil, err
			}
			funcs = append(funcs, f)
		default:
			return nil, p.errorf(t.pos, "expected 'module', a func.func or a type alias, found %s", describe(t))
		}
	}
}

// function := 'func.func' @name '(' args ')' ['attributes' dict] '{' ops '}'
func (p *parser) function() (*mop, error) {
	t := p.next()
	if t.text != "func.func" && t.text != "func" {
		return nil, p.errorf(t.pos, "expected func.func, found %s", describe(t))
	}
	if t.text == "func" {
		if err := p.expect(".", ""); err != nil {
			return nil, err
		}
	}
	f := &mop{pos: t.pos, name: "func.func", attrs: map[string]attr{}}
	p.accept("private")
	sym := p.next()
	if sym.kind != tSymbol {
		return nil, p.errorf(sym.pos, "expected the function's @name, found %s", describe(sym))
	}
	f.symbol = strings.Trim(sym.text[1:], `"`)
	if err := p.expect("(", " before the function's arguments"); err != nil {
		return nil, err
	}
	for !p.is(")") {
		if len(f.args) > 0 {
			if err := p.expect(",", " between arguments"); err != nil {
				return nil, err
			}
		}
		at := p.peek().pos
		name, err := p.value(" (an argument)")
		if err != nil {
			return nil, err
		}
		if err := p.expect(":", " after the argument name"); err != nil {
			return nil, err
		}
		ty, err := p.typ(" for the argument")
		if err != nil {
			return nil, err
		}
		a := funcArg{name: name, typ: ty, pos: at}
		if p.is("{") {
			if a.attrs, err = p.attrDict(); err != nil {
				return nil, err
			}
		}
		f.args = append(f.args, a)
	}
	p.next()
	if p.accept("->") {
		return nil, p.errorf(p.peek().pos, "a kernel function returns nothing; remove the result types")
	}
	if p.accept("attributes") {
		d, err := p.attrDict()
		if err != nil {
			return nil, err
		}
		f.attrs = d
	}
	body, err := p.region()
	if err != nil {
		return nil, err
	}
	f.regions = [][]*mop{body}
	return f, nil
}

// region := '{' op* '}'
func (p *parser) region() ([]*mop, error) {
	if err := p.expect("{", " to open a region"); err != nil {
		return nil, err
	}
	var ops []*mop
	for !p.is("}") {
		if p.peek().kind == tEOF {
			return nil, p.errorf(p.peek().pos, "expected '}' to close the region, found end of input")
		}
		o, err := p.op()
		if err != nil {
			return nil, err
		}
		ops = append(ops, o)
	}
	p.next()
	return ops, nil
}

// op := [results '='] (generic | custom)
func (p *parser) op() (*mop, error) {
	o := &mop{pos: p.peek().pos, props: map[string]attr{}, attrs: map[string]attr{}}
	if p.peek().kind == tValue {
		for {
			v, err := p.value("")
			if err != nil {
				return nil, err
			}
			o.results = append(o.results, v)
			if !p.accept(",") {
				break
			}
		}
		if err := p.expect("=", " after the op's results"); err != nil {
			return nil, err
		}
	}
	t := p.peek()
	switch t.kind {
	case tString:
		p.next()
		o.name = t.text
		return o, p.generic(o)
	case tIdent:
		p.next()
		o.name = t.text
		return o, p.custom(o)
	}
	return nil, p.errorf(t.pos, "expected an op, found %s", describe(t))
}

// generic := '(' operands ')' ['(' regions ')'] ['<{' props '}>'] [dict] ':' '(' types ')' '->' results
func (p *parser) generic(o *mop) error {
	if err := p.expect("(", " after the op name"); err != nil {
		return err
	}
	ops, err := p.valueList(")")
	if err != nil {
		return err
	}
	o.operands = ops
	if p.is("(") { // regions
		p.next()
		for !p.is(")") {
			r, err := p.region()
			if err != nil {
				return err
			}
			o.regions = append(o.regions, r)
			p.accept(",")
		}
		p.next()
	}
	if p.accept("<{") {
		d, err := p.attrEntries("}>")
		if err != nil {
			return err
		}
		o.props = d
	}
	if p.is("{") {
		if o.attrs, err = p.attrDict(); err != nil {
			return err
		}
	}
	if err := p.expect(":", " before the op's type"); err != nil {
		return err
	}
	if err := p.expect("(", " to open the operand types"); err != nil {
		return err
	}
	if o.types, err = p.typeList(")"); err != nil {
		return err
	}
	if err := p.expect("->", " before the result types"); err != nil {
		return err
	}
	if p.accept("(") {
		if o.resTypes, err = p.typeList(")"); err != nil {
			return err
		}
	} else {
		ty, err := p.typ(" (the result type)")
		if err != nil {
			return err
		}
		o.resTypes = []string{ty}
	}
	if len(o.types) != len(o.operands) {
		return p.errorf(o.pos, "%s has %d operands and %d operand types", o.name, len(o.operands), len(o.types))
	}
	if len(o.resTypes) != len(o.results) {
		return p.errorf(o.pos, "%s has %d results and %d result types", o.name, len(o.results), len(o.resTypes))
	}
	return nil
}

// valueList reads SSA values separated by commas up to close (consumed).
func (p *parser) valueList(close string) ([]string, error) {
	return list(p, close, " between operands", func() (string, error) { return p.value("") })
}

// typeList reads types separated by commas up to close (consumed).
func (p *parser) typeList(close string) ([]string, error) {
	return list(p, close, " between types", func() (string, error) { return p.typ("") })
}

// list reads items separated by commas up to close (consumed).
func list(p *parser, close, between string, item func() (string, error)) ([]string, error) {
	var out []string
	for !p.is(close) {
		if len(out) > 0 {
			if err := p.expect(",", between); err != nil {
				return nil, err
			}
		}
		v, err := item()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	p.next()
	return out, nil
}

// attrDict := '{' entries '}'
func (p *parser) attrDict() (map[string]attr, error) {
	if err := p.expect("{", " to open an attribute dictionary"); err != nil {
		return nil, err
	}
	return p.attrEntries("}")
}

// attrEntries reads `name [= value]` pairs separated by commas up to close.
func (p *parser) attrEntries(close string) (map[string]attr, error) {
	out := map[string]attr{}
	for !p.is(close) {
		if len(out) > 0 {
			if err := p.expect(",", " between attributes"); err != nil {
				return nil, err
			}
		}
		t := p.next()
		if t.kind != tIdent && t.kind != tString {
			return nil, p.errorf(t.pos, "expected an attribute name, found %s", describe(t))
		}
		if p.accept("=") {
			v, err := p.attrValue()
			if err != nil {
				return nil, err
			}
			out[t.text] = v
		} else {
			out[t.text] = attr{kind: aUnit, pos: t.pos}
		}
	}
	p.next()
	return out, nil
}

// attrValue reads one attribute value.
func (p *parser) attrValue() (attr, error) {
	t := p.peek()
	a := attr{pos: t.pos}
	switch {
	case t.kind == tNumber:
		p.next()
		if err := p.number(t, &a); err != nil {
			return a, err
		}
		if p.accept(":") {
			ty, err := p.typ(" after the number")
			if err != nil {
				return a, err
			}
			a.typ = ty
			if a.isInt && strings.HasPrefix(t.text, "0x") && isFloatType(ty) {
				a.f, a.isInt = floatFromBits(uint64(a.i), ty), false
			}
		}
		return a, nil
	case t.kind == tString:
		p.next()
		a.kind, a.s = aString, t.text
		return a, nil
	case t.kind == tIdent && (t.text == "true" || t.text == "false"):
		p.next()
		a.kind, a.isInt = aBool, true
		if t.text == "true" {
			a.i = 1
		}
		return a, nil
	case t.kind == tAttr || t.kind == tType:
		p.next()
		a.kind, a.s = aRaw, t.text
		return a, nil
	case t.kind == tPunct && t.text == "[":
		p.next()
		a.kind = aArray
		for !p.is("]") {
			if len(a.list) > 0 {
				if err := p.expect(",", " between array elements"); err != nil {
					return a, err
				}
			}
			v, err := p.attrValue()
			if err != nil {
				return a, err
			}
			a.list = append(a.list, v)
		}
		p.next()
		return a, nil
	case t.kind == tIdent && p.toks[p.at+1].text == "<":
		// array<i32: 1, 2>, dense<...> and the like: kept as text.
		p.next()
		var b strings.Builder
		b.WriteString(t.text)
		depth := 0
		for {
			n := p.next()
			if n.kind == tEOF {
				return a, p.errorf(t.pos, "attribute %s not closed", t.text)
			}
			b.WriteString(n.text)
			if n.kind == tPunct && n.text == "," || n.text == ":" {
				b.WriteByte(' ')
			}
			if n.text == "<" {
				depth++
			} else if n.text == ">" {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		a.kind, a.s = aRaw, b.String()
		return a, nil
	case t.kind == tIdent:
		p.next()
		a.kind, a.s = aRaw, t.text
		return a, nil
	}
	return a, p.errorf(t.pos, "expected an attribute value, found %s", describe(t))
}

// number reads an integer or float literal (a 0x literal is an integer, or a float's
// bits when its type says so).
func (p *parser) number(t token, a *attr) error {
	a.kind = aNumber
	text := t.text
	if strings.HasPrefix(text, "0x") {
		v, err := strconv.ParseUint(text[2:], 16, 64)
		if err != nil {
			return p.errorf(t.pos, "malformed hexadecimal literal %s", text)
		}
		a.i, a.isInt, a.f = int64(v), true, float64(int64(v))
		return nil
	}
	if !strings.ContainsAny(text, ".eE") {
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return p.errorf(t.pos, "integer literal %s does not fit 64 bits", text)
		}
		a.i, a.isInt, a.f = v, true, float64(v)
		return nil
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(v, 0) {
		return p.errorf(t.pos, "malformed float literal %s", text)
	}
	a.f = v
	return nil
}

func isFloatType(ty string) bool { return ty == "f16" || ty == "bf16" || ty == "f32" || ty == "f64" }

// floatFromBits is the float whose bits a hexadecimal literal of type ty gives.
func floatFromBits(bits uint64, ty string) float64 {
	switch ty {
	case "f32":
		return float64(math.Float32frombits(uint32(bits)))
	case "f16":
		return float64(dtype.Float16ToFloat32(uint16(bits)))
	case "bf16":
		return float64(dtype.BFloat16ToFloat32(uint16(bits)))
	}
	return math.Float64frombits(bits)
}
