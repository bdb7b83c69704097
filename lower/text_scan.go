package lower

import (
	"fmt"
	"strconv"
	"strings"

	"pypto/core"
)

// The Tile, Block and Execution graph texts are scanned by core's Lexer, as the Tensor
// Graph text is, with '#' comments (as in PTO assembly, so a comment means the same
// inside and outside the programs of an execution graph) and the punctuation below.
// Only the PTO programs inside an execution graph are line-based, because they are
// handed to isa.Parse line by line (see text_exec.go).

// token is a token of the lowered levels' texts.
type token = core.Token

const (
	tokEOF    = core.TokEOF
	tokIdent  = core.TokIdent
	tokInt    = core.TokInt
	tokString = core.TokString
	tokPunct  = core.TokPunct
)

// quoteName prints a graph or task name, quoting it unless it is an identifier.
func quoteName(s string) string {
	if core.IsIdent(s) {
		return s
	}
	return strconv.Quote(s)
}

// textBailout carries a syntax error up the recursive descent to the Parse function.
type textBailout struct{ err *core.Error }

// textParser holds what the parsers of all three levels share: the scanner, one token
// of lookahead (taken by re-scanning from a saved state) and error reporting.
type textParser struct {
	sc core.Lexer
}

// parseText runs a recursive-descent parse of src and turns a bailout into an error.
// Errors are *core.Error of kind ValueError with a message starting "line:col:", as
// core.Parse reports them.
func parseText[T any](src string, parse func(*textParser) T) (res T, err error) {
	p := &textParser{sc: core.NewLexer(src, "%(){}[],:=@+", true)}
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
	p.failAt(t.Line, t.Col, format, args...)
}

func (p *textParser) next() token {
	t, msg := p.sc.Next()
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

func isPunct(t token, c string) bool { return t.Kind == tokPunct && t.Text == c }
func isWord(t token, w string) bool  { return t.Kind == tokIdent && t.Text == w }

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
	if t := p.next(); t.Kind != tokEOF {
		p.fail(t, "expected end of input after the %s, found %s", what, t)
	}
}

// name reads an identifier or a quoted string.
func (p *textParser) name(what string) string {
	t := p.next()
	switch t.Kind {
	case tokIdent:
		return t.Text
	case tokString:
		s, err := strconv.Unquote(t.Text)
		if err != nil {
			p.fail(t, "invalid quoted %s %s", what, t.Text)
		}
		return s
	}
	p.fail(t, "expected %s (identifier or quoted string), found %s", what, t)
	return ""
}

// integer reads a non-negative decimal integer.
func (p *textParser) integer(what string) int {
	t := p.next()
	if t.Kind != tokInt {
		p.fail(t, "expected %s (a non-negative integer), found %s", what, t)
	}
	n, err := strconv.Atoi(t.Text)
	if err != nil {
		p.fail(t, "expected %s, found %s, which is out of range", what, t.Text)
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
	if t.Kind == tokIdent && strings.HasPrefix(t.Text, prefix) {
		digits := t.Text[len(prefix):]
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
