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
	p := &parser{sc: NewLexer(src, "%(){}[],:=", false)}
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

// errorAt is a syntax error at t.
func errorAt(t Token, format string, args ...any) *Error {
	return Errorf(ValueError, "%d:%d: %s", t.Line, t.Col, fmt.Sprintf(format, args...))
}

// parser is a recursive-descent parser with one Token of lookahead, taken by re-scanning
// from a saved scanner state so that attribute values can be read as raw text.
type parser struct {
	sc     Lexer
	g      *Graph
	params map[string]Value
}

func (p *parser) fail(t Token, format string, args ...any) {
	panic(parseBailout{errorAt(t, format, args...)})
}

func (p *parser) next() Token {
	t, msg := p.sc.Next()
	if msg != "" {
		p.fail(t, "%s", msg)
	}
	return t
}

func (p *parser) peek() Token {
	saved := p.sc
	t := p.next()
	p.sc = saved
	return t
}

func (p *parser) isPunct(t Token, c string) bool { return t.Kind == TokPunct && t.Text == c }

func (p *parser) expectPunct(c, what string) Token {
	t := p.next()
	if !p.isPunct(t, c) {
		p.fail(t, "expected '%s'%s, found %s", c, what, t)
	}
	return t
}

// graph := 'graph' name '(' [param {',' param}] ')' '{' {node} 'return' value {',' value} '}'
func (p *parser) graph() *Graph {
	if t := p.next(); t.Kind != TokIdent || t.Text != "graph" {
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
		if t.Kind == TokIdent && t.Text == "return" {
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
	if t := p.next(); t.Kind != TokEOF {
		p.fail(t, "expected end of input after the graph, found %s", t)
	}
	return p.g
}

// name reads an identifier or a quoted string.
func (p *parser) name(what string) string {
	t := p.next()
	switch t.Kind {
	case TokIdent:
		return t.Text
	case TokString:
		s, err := strconv.Unquote(t.Text)
		if err != nil {
			p.fail(t, "invalid quoted %s %s", what, t.Text)
		}
		return s
	}
	p.fail(t, "expected %s (identifier or quoted string), found %s", what, t)
	return ""
}

// param := '%' name ':' type
func (p *parser) param() {
	p.expectPunct("%", " before a parameter name")
	if t := p.peek(); t.Kind == TokInt {
		p.fail(t, "expected parameter name, found %s (numbers name op results; quote the name: %%\"%s\")", t, t.Text)
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
	if t.Kind != TokInt {
		p.fail(t, "expected result number %d after '%%' (only parameters have names), found %s", want, t)
	}
	if n, err := strconv.Atoi(t.Text); err != nil || n != want {
		p.fail(t, "expected result %%%d (results are numbered in order), found %%%s", want, t.Text)
	}
	p.expectPunct("=", " after the result")
	opTok := p.next()
	if opTok.Kind != TokIdent {
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
	inferred, full, err := InferOp(opTok.Text, types, attrs)
	if err != nil {
		e := errorAt(opTok, "%s", err.Message)
		e.Causes, e.Suggestions = err.Causes, err.Suggestions
		panic(parseBailout{e})
	}
	if !inferred.Equal(written) {
		p.fail(typeTok, "written type %s does not match the type %s infers, %s", written, opTok.Text, inferred)
	}
	p.g.Nodes = append(p.g.Nodes, &Node{Op: opTok.Text, Inputs: inputs, Attrs: full, Type: inferred})
}

// value := '%' int | '%' name
func (p *parser) value() Value {
	p.expectPunct("%", " before a value")
	t := p.peek()
	if t.Kind == TokInt {
		p.next()
		n, err := strconv.Atoi(t.Text)
		if err == nil && n < len(p.g.Params) {
			p.fail(t, "expected a value defined earlier, found %%%s (parameters are referred to by name)", t.Text)
		}
		if err != nil || n >= len(p.g.Nodes) {
			p.fail(t, "expected a value defined earlier, found %%%s", t.Text)
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
		if k.Kind != TokIdent {
			p.fail(k, "expected attribute name, found %s", k)
		}
		if _, dup := out[k.Text]; dup {
			p.fail(k, "attribute %s is given twice", k.Text)
		}
		p.expectPunct("=", " after the attribute name")
		out[k.Text] = p.attrValue()
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
	p.sc.SkipSpace()
	at := Token{Line: p.sc.Line, Col: p.sc.Col}
	rest := p.sc.Src[p.sc.Pos:]
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
	p.sc.Advance(n)
	return v
}

// tensorType := dtype '[' [dim {',' dim}] ']' ['@' layout], with dtypes in their short
// spelling and dims in Dim syntax. The shape is read as raw text up to the ']' on the
// same line, because a dim may hold "//", which elsewhere starts a comment.
func (p *parser) tensorType() TensorType {
	t := p.next()
	dt := dtype.Invalid
	if t.Kind == TokIdent {
		for _, d := range dtype.All {
			if d.String() == t.Text {
				dt = d
			}
		}
	}
	if dt == dtype.Invalid {
		p.fail(t, "expected dtype (f32, f16, bf16, i8, i32, bool), found %s", t)
	}
	p.expectPunct("[", " after the dtype")
	at := Token{Line: p.sc.Line, Col: p.sc.Col}
	line, _, _ := strings.Cut(p.sc.Src[p.sc.Pos:], "\n")
	end := strings.IndexByte(line, ']')
	if end < 0 {
		p.fail(at, "expected ']' closing the shape on the same line")
	}
	body := line[:end]
	p.sc.Advance(end + 1)
	suffix := ""
	if rest := p.sc.Src[p.sc.Pos:]; strings.HasPrefix(rest, "@") {
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
		p.sc.Advance(n)
	}
	dims, off, err := parseDimsAt(body, true)
	if err != nil {
		p.fail(Token{Line: at.Line, Col: at.Col + off}, "%v", err)
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
