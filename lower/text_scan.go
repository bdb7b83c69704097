package lower

import (
	"fmt"
	"strconv"
	"strings"

	"pypto/core"
)

// The Tile, Block and Execution graph texts share one lexical structure, that of the
// Tensor Graph text (core/text.go): whitespace and line breaks are free, '#' or '//'
// starts a comment that runs to the end of the line, names are identifiers or quoted
// Go strings. Only the PTO programs inside an execution graph are line-based, because
// they are handed to isa.Parse line by line (see text_exec.go).

type tokKind uint8

const (
	tokEOF    tokKind = iota
	tokIdent          // letter or '_', then letters, digits, '_' and '.'
	tokInt            // decimal digits
	tokString         // a double-quoted Go string literal, quotes included
	tokPunct          // one of % ( ) { } [ ] , : = @ +
	tokOther          // any other byte, reported as unexpected
)

const puncts = "%(){}[],:=@+"

type token struct {
	kind      tokKind
	text      string
	pos       int // byte offset in the source
	line, col int
}

// String describes the token for "expected X, found Y" messages.
func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return t.text
	}
	return "'" + t.text + "'"
}

// textScanner splits graph text into tokens, tracking line and byte column for errors.
type textScanner struct {
	src       string
	pos       int
	line, col int
}

func (s *textScanner) advance(n int) {
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

// skipSpace skips whitespace and comments. '#' is a comment as in PTO assembly, so a
// comment means the same inside and outside the programs of an execution graph.
func (s *textScanner) skipSpace() {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.advance(1)
		case c == '#' || strings.HasPrefix(s.src[s.pos:], "//"):
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

// next returns the next token; a malformed string literal is the only lexical error.
func (s *textScanner) next() (token, string) {
	s.skipSpace()
	t := token{pos: s.pos, line: s.line, col: s.col}
	if s.pos >= len(s.src) {
		return t, ""
	}
	rest := s.src[s.pos:]
	n := 1
	switch c := rest[0]; {
	case isLetter(c):
		for n < len(rest) && isIdentByte(rest[n]) {
			n++
		}
		t.kind = tokIdent
	case isDigit(c):
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		t.kind = tokInt
	case c == '"':
		var msg string
		if n, msg = stringLiteralLen(rest); msg != "" {
			return t, msg
		}
		t.kind = tokString
	case strings.IndexByte(puncts, c) >= 0:
		t.kind = tokPunct
	default:
		t.kind = tokOther
	}
	s.advance(n)
	t.text = rest[:n]
	return t, ""
}

// stringLiteralLen returns the length of the double-quoted literal at the start of s,
// or what is wrong with it. Literals stay on one line: printed ones escape newlines.
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

func isLetter(c byte) bool    { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool     { return '0' <= c && c <= '9' }
func isIdentByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '.' }

// isIdent reports whether a name prints without quotes (it scans as one tokIdent).
func isIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

// quoteName prints a graph or task name, quoting it unless it is an identifier.
func quoteName(s string) string {
	if isIdent(s) {
		return s
	}
	return strconv.Quote(s)
}

// textBailout carries a syntax error up the recursive descent to the Parse function.
type textBailout struct{ err *core.Error }

// textParser holds what the parsers of all three levels share: the scanner, one token
// of lookahead (taken by re-scanning from a saved state) and error reporting.
type textParser struct {
	sc textScanner
}

// parseText runs a recursive-descent parse of src and turns a bailout into an error.
// Errors are *core.Error of kind ValueError with a message starting "line:col:", as
// core.Parse reports them.
func parseText[T any](src string, parse func(*textParser) T) (res T, err error) {
	p := &textParser{sc: textScanner{src: src, line: 1, col: 1}}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(textBailout)
			if !ok {
				panic(r)
			}
			var zero T
			res, err = zero, b.err
		}
	}()
	return parse(p), nil
}

func (p *textParser) failAt(line, col int, format string, args ...any) {
	panic(textBailout{core.Errorf(core.ValueError, "%d:%d: %s", line, col, fmt.Sprintf(format, args...))})
}

func (p *textParser) fail(t token, format string, args ...any) {
	p.failAt(t.line, t.col, format, args...)
}

func (p *textParser) next() token {
	t, msg := p.sc.next()
	if msg != "" {
		p.fail(t, "%s", msg)
	}
	return t
}

func (p *textParser) peek() token {
	saved := p.sc
	t := p.next()
	p.sc = saved
	return t
}

func isPunct(t token, c string) bool { return t.kind == tokPunct && t.text == c }
func isWord(t token, w string) bool  { return t.kind == tokIdent && t.text == w }

// expectPunct consumes the punctuation c; context says where it belongs.
func (p *textParser) expectPunct(c, context string) token {
	t := p.next()
	if !isPunct(t, c) {
		p.fail(t, "expected '%s'%s, found %s", c, context, t)
	}
	return t
}

// expectWord consumes the keyword w.
func (p *textParser) expectWord(w, context string) token {
	t := p.next()
	if !isWord(t, w) {
		p.fail(t, "expected '%s'%s, found %s", w, context, t)
	}
	return t
}

// key consumes "name=" of a key=value field.
func (p *textParser) key(name, context string) {
	p.expectWord(name, context)
	p.expectPunct("=", " after '"+name+"'")
}

// expectEOF checks that nothing but blanks and comments follow the graph.
func (p *textParser) expectEOF(what string) {
	if t := p.next(); t.kind != tokEOF {
		p.fail(t, "expected end of input after the %s, found %s", what, t)
	}
}

// name reads an identifier or a quoted string.
func (p *textParser) name(what string) string {
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

// integer reads a non-negative decimal integer.
func (p *textParser) integer(what string) int {
	t := p.next()
	if t.kind != tokInt {
		p.fail(t, "expected %s (a non-negative integer), found %s", what, t)
	}
	n, err := strconv.Atoi(t.text)
	if err != nil {
		p.fail(t, "expected %s, found %s, which is out of range", what, t.text)
	}
	return n
}

// intList reads '[' [int {',' int}] ']'.
func (p *textParser) intList(what string) []int {
	p.expectPunct("[", " opening the "+what)
	xs := []int{}
	if isPunct(p.peek(), "]") {
		p.next()
		return xs
	}
	for {
		xs = append(xs, p.integer(what+" element"))
		t := p.next()
		if isPunct(t, "]") {
			return xs
		}
		if !isPunct(t, ",") {
			p.fail(t, "expected ',' or ']' in the %s, found %s", what, t)
		}
	}
}

// numbered reads a name made of prefix and a number in canonical decimal, such as t3,
// op0 or k1, and returns the number.
func (p *textParser) numbered(prefix, what string) (int, token) {
	t := p.next()
	if t.kind == tokIdent && strings.HasPrefix(t.text, prefix) {
		digits := t.text[len(prefix):]
		if n, err := strconv.Atoi(digits); err == nil && n >= 0 && digits == strconv.Itoa(n) {
			return n, t
		}
	}
	p.fail(t, "expected %s (%sN), found %s", what, prefix, t)
	return -1, t
}

// numberedAs reads prefix+want, for things numbered in order of appearance.
func (p *textParser) numberedAs(prefix string, want int, what string) token {
	n, t := p.numbered(prefix, what)
	if n != want {
		p.fail(t, "expected %s%d (%ss are numbered in order), found %s", prefix, want, what, t)
	}
	return t
}
