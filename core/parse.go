package core

import (
	"fmt"
	"strconv"
	"strings"

	"pypto/dtype"
)

// Parse reads a graph in the text form printed by Format. Whitespace and line breaks
// are free; "//" starts a comment that runs to the end of the line. Every op result is
// re-inferred with InferOp and must match the written type, so a parsed graph always
// passes Verify. Errors are *Error of kind ValueError whose message starts with
// "line:col:" (1-based, columns in bytes) and says what was expected and what was found.
func Parse(src string) (g *Graph, err error) {
	p := &parser{sc: scanner{src: src, line: 1, col: 1}}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseBailout)
			if !ok {
				panic(r)
			}
			g, err = nil, pe.err
		}
	}()
	return p.graph(), nil
}

// parseBailout carries a syntax error up the recursive descent to Parse.
type parseBailout struct{ err *Error }

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokInt
	tokString
	tokPunct // one of % ( ) { } [ ] , : =
	tokOther // any other byte, reported as unexpected
)

type token struct {
	kind      tokKind
	text      string
	line, col int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return t.text
	}
	return "'" + t.text + "'"
}

// scanner splits the source into tokens, tracking line and column for errors.
type scanner struct {
	src       string
	pos       int
	line, col int
}

func (s *scanner) advance(n int) {
	for i := 0; i < n && s.pos < len(s.src); i++ {
		if s.src[s.pos] == '\n' {
			s.line++
			s.col = 1
		} else {
			s.col++
		}
		s.pos++
	}
}

// skipSpace skips whitespace and // comments.
func (s *scanner) skipSpace() {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.advance(1)
		case strings.HasPrefix(s.src[s.pos:], "//"):
			end := strings.IndexByte(s.src[s.pos:], '\n')
			if end < 0 {
				end = len(s.src) - s.pos
			}
			s.advance(end)
		default:
			return
		}
	}
}

func (s *scanner) next() (token, *Error) {
	s.skipSpace()
	t := token{line: s.line, col: s.col}
	if s.pos >= len(s.src) {
		return t, nil
	}
	start := s.pos
	c := s.src[s.pos]
	switch {
	case isLetter(c):
		n := 1
		for start+n < len(s.src) && (isLetter(s.src[start+n]) || isDigit(s.src[start+n]) || s.src[start+n] == '.') {
			n++
		}
		t.kind = tokIdent
		s.advance(n)
	case isDigit(c):
		n := 1
		for start+n < len(s.src) && isDigit(s.src[start+n]) {
			n++
		}
		t.kind = tokInt
		s.advance(n)
	case c == '"':
		n, err := stringLiteralLen(s.src[start:])
		if err != "" {
			return t, s.errorAt(t, "%s", err)
		}
		t.kind = tokString
		s.advance(n)
	case strings.IndexByte("%(){}[],:=", c) >= 0:
		t.kind = tokPunct
		s.advance(1)
	default:
		t.kind = tokOther
		s.advance(1)
	}
	t.text = s.src[start:s.pos]
	return t, nil
}

// stringLiteralLen returns the length of the double-quoted Go string literal at the
// start of s, or a description of what is wrong with it.
func stringLiteralLen(s string) (int, string) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1, ""
		case '\n':
			return 0, "string literal not terminated before the end of the line"
		}
	}
	return 0, "string literal not terminated"
}

func (s *scanner) errorAt(t token, format string, args ...any) *Error {
	return Errorf(ValueError, "%d:%d: %s", t.line, t.col, fmt.Sprintf(format, args...))
}

// parser is a recursive-descent parser with one token of lookahead, taken by re-scanning
// from a saved scanner state so that attribute values can be read as raw text.
type parser struct {
	sc     scanner
	g      *Graph
	params map[string]Value
}

func (p *parser) fail(t token, format string, args ...any) {
	panic(parseBailout{p.sc.errorAt(t, format, args...)})
}

func (p *parser) next() token {
	t, err := p.sc.next()
	if err != nil {
		panic(parseBailout{err})
	}
	return t
}

func (p *parser) peek() token {
	saved := p.sc
	t := p.next()
	p.sc = saved
	return t
}

func (p *parser) isPunct(t token, c string) bool { return t.kind == tokPunct && t.text == c }

func (p *parser) expectPunct(c, what string) token {
	t := p.next()
	if !p.isPunct(t, c) {
		p.fail(t, "expected '%s'%s, found %s", c, what, t)
	}
	return t
}

// graph := 'graph' name '(' [param {',' param}] ')' '{' {node} 'return' value {',' value} '}'
func (p *parser) graph() *Graph {
	if t := p.next(); t.kind != tokIdent || t.text != "graph" {
		p.fail(t, "expected 'graph', found %s", t)
	}
	p.g = &Graph{Name: p.name("graph name")}
	p.params = map[string]Value{}
	p.expectPunct("(", " after the graph name")
	if !p.isPunct(p.peek(), ")") {
		for {
			p.param()
			if !p.isPunct(p.peek(), ",") {
				break
			}
			p.next()
		}
	}
	p.expectPunct(")", " after the parameters")
	p.expectPunct("{", " before the graph body")
	for {
		t := p.peek()
		if t.kind == tokIdent && t.text == "return" {
			p.next()
			break
		}
		if !p.isPunct(t, "%") {
			p.fail(t, "expected %%%d = op(...) or 'return', found %s", len(p.g.Nodes), t)
		}
		p.node()
	}
	for {
		p.g.Outputs = append(p.g.Outputs, p.value())
		if !p.isPunct(p.peek(), ",") {
			break
		}
		p.next()
	}
	p.expectPunct("}", " after the return values")
	if t := p.next(); t.kind != tokEOF {
		p.fail(t, "expected end of input after the graph, found %s", t)
	}
	return p.g
}

// name reads an identifier or a quoted string.
func (p *parser) name(what string) string {
	t := p.next()
	switch t.kind {
	case tokIdent:
		return t.text
	case tokString:
		s, err := strconv.Unquote(t.text)
		if err != nil {
			p.fail(t, "invalid quoted %s %s", what, t.text)
		}
		return s
	}
	p.fail(t, "expected %s (identifier or quoted string), found %s", what, t)
	return ""
}

// param := '%' name ':' type
func (p *parser) param() {
	p.expectPunct("%", " before a parameter name")
	if t := p.peek(); t.kind == tokInt {
		p.fail(t, "expected parameter name, found %s (numbers name op results; quote the name: %%\"%s\")", t, t.text)
	}
	nt := p.peek()
	name := p.name("parameter name")
	if name == "" {
		p.fail(nt, "expected parameter name, found an empty name")
	}
	if _, dup := p.params[name]; dup {
		p.fail(nt, "parameter %%%s is declared twice", quoteName(name))
	}
	p.expectPunct(":", " after the parameter name")
	t := p.tensorType()
	v := Value(len(p.g.Nodes))
	p.g.Nodes = append(p.g.Nodes, &Node{Op: OpParam, Type: t, Name: name})
	p.g.Params = append(p.g.Params, v)
	p.params[name] = v
}

// node := '%' int '=' op '(' [value {',' value}] ')' [attrs] ':' type
func (p *parser) node() {
	p.next() // '%'
	want := len(p.g.Nodes)
	t := p.next()
	if t.kind != tokInt {
		p.fail(t, "expected result number %d after '%%' (only parameters have names), found %s", want, t)
	}
	if n, err := strconv.Atoi(t.text); err != nil || n != want {
		p.fail(t, "expected result %%%d (results are numbered in order), found %%%s", want, t.text)
	}
	p.expectPunct("=", " after the result")
	opTok := p.next()
	if opTok.kind != tokIdent {
		p.fail(opTok, "expected op name, found %s", opTok)
	}
	p.expectPunct("(", " after the op name")
	var inputs []Value
	if !p.isPunct(p.peek(), ")") {
		for {
			inputs = append(inputs, p.value())
			if !p.isPunct(p.peek(), ",") {
				break
			}
			p.next()
		}
	}
	p.expectPunct(")", " after the op inputs")
	attrs := Attrs{}
	if p.isPunct(p.peek(), "{") {
		attrs = p.attrs()
	}
	p.expectPunct(":", " before the result type")
	typeTok := p.peek()
	written := p.tensorType()

	types := make([]TensorType, len(inputs))
	for i, in := range inputs {
		types[i] = p.g.Nodes[in].Type
	}
	inferred, full, err := InferOp(opTok.text, types, attrs)
	if err != nil {
		e := p.sc.errorAt(opTok, "%s", err.Message)
		e.Causes, e.Suggestions = err.Causes, err.Suggestions
		panic(parseBailout{e})
	}
	if !inferred.Equal(written) {
		p.fail(typeTok, "written type %s does not match the type %s infers, %s", written, opTok.text, inferred)
	}
	p.g.Nodes = append(p.g.Nodes, &Node{Op: opTok.text, Inputs: inputs, Attrs: full, Type: inferred})
}

// value := '%' int | '%' name
func (p *parser) value() Value {
	p.expectPunct("%", " before a value")
	t := p.peek()
	if t.kind == tokInt {
		p.next()
		n, err := strconv.Atoi(t.text)
		if err == nil && n < len(p.g.Params) {
			p.fail(t, "expected a value defined earlier, found %%%s (parameters are referred to by name)", t.text)
		}
		if err != nil || n >= len(p.g.Nodes) {
			p.fail(t, "expected a value defined earlier, found %%%s", t.text)
		}
		return Value(n)
	}
	name := p.name("value")
	v, ok := p.params[name]
	if !ok {
		p.fail(t, "expected a value defined earlier, found %%%s, which is not a parameter", quoteName(name))
	}
	return v
}

// attrs := '{' [key '=' value {',' key '=' value}] '}'. Values are read as raw text and
// decoded by parseAttr, the inverse of the printer's formatAttr.
func (p *parser) attrs() Attrs {
	p.next() // '{'
	out := Attrs{}
	if p.isPunct(p.peek(), "}") {
		p.next()
		return out
	}
	for {
		k := p.next()
		if k.kind != tokIdent {
			p.fail(k, "expected attribute name, found %s", k)
		}
		if _, dup := out[k.text]; dup {
			p.fail(k, "attribute %s is given twice", k.text)
		}
		p.expectPunct("=", " after the attribute name")
		out[k.text] = p.attrValue()
		t := p.next()
		if p.isPunct(t, "}") {
			return out
		}
		if !p.isPunct(t, ",") {
			p.fail(t, "expected ',' or '}' after an attribute, found %s", t)
		}
	}
}

func (p *parser) attrValue() any {
	p.sc.skipSpace()
	at := token{line: p.sc.line, col: p.sc.col}
	rest := p.sc.src[p.sc.pos:]
	n := 0
	switch {
	case strings.HasPrefix(rest, `"`):
		var msg string
		if n, msg = stringLiteralLen(rest); msg != "" {
			p.fail(at, "%s", msg)
		}
	case strings.HasPrefix(rest, "["):
		// Lists print on one line, so a missing ']' is reported on that line rather
		// than matched against some later bracket.
		line, _, _ := strings.Cut(rest, "\n")
		n = strings.IndexByte(line, ']') + 1
		if n == 0 {
			p.fail(at, "expected ']' closing the list attribute on the same line")
		}
	default:
		for n < len(rest) && strings.IndexByte(" \t\r\n,}{", rest[n]) < 0 && !strings.HasPrefix(rest[n:], "//") {
			n++
		}
	}
	if n == 0 {
		t := p.peek()
		p.fail(t, "expected attribute value (bool, int, float, \"string\" or [ints]), found %s", t)
	}
	v, err := parseAttr(rest[:n])
	if err != nil {
		p.fail(at, "expected attribute value (bool, int, float, \"string\" or [ints]), found %q", rest[:n])
	}
	p.sc.advance(n)
	return v
}

// tensorType := dtype '[' [dim {',' dim}] ']' ['@' layout], with dtypes in their short
// spelling and dims in Dim syntax. The shape is read as raw text up to the ']' on the
// same line, because a dim may hold "//", which elsewhere starts a comment.
func (p *parser) tensorType() TensorType {
	t := p.next()
	dt := dtype.Invalid
	if t.kind == tokIdent {
		for _, d := range dtype.All {
			if d.String() == t.text {
				dt = d
			}
		}
	}
	if dt == dtype.Invalid {
		p.fail(t, "expected dtype (f32, f16, bf16, i8, i32, bool), found %s", t)
	}
	p.expectPunct("[", " after the dtype")
	at := token{line: p.sc.line, col: p.sc.col}
	line, _, _ := strings.Cut(p.sc.src[p.sc.pos:], "\n")
	end := strings.IndexByte(line, ']')
	if end < 0 {
		p.fail(at, "expected ']' closing the shape on the same line")
	}
	body := line[:end]
	p.sc.advance(end + 1)
	suffix := ""
	if rest := p.sc.src[p.sc.pos:]; strings.HasPrefix(rest, "@") {
		n := 1
		for n < len(rest) && (isLetter(rest[n]) || isDigit(rest[n])) {
			n++
		}
		if n < len(rest) && rest[n] == '(' {
			if c := strings.IndexByte(rest[n:], ')'); c >= 0 {
				n += c + 1
			}
		}
		suffix = rest[:n]
		p.sc.advance(n)
	}
	dims, off, err := parseDimsAt(body, true)
	if err != nil {
		p.fail(token{line: at.line, col: at.col + off}, "%v", err)
	}
	tt, msg := typeWithLayout(dt, dims, suffix)
	if msg == "" {
		msg = checkType(tt) // what Verify would reject, so parsed graphs verify
	}
	if msg != "" {
		p.fail(t, "%s", msg)
	}
	return tt
}
