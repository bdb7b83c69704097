package ptoas

import (
	"fmt"
	"strings"
)

// The reader's lexer: MLIR's tokens, as much of them as PTO-AS uses. Types and
// attributes whose insides the reader interprets later (`!pto.tile_buf<...>`,
// `#pto<cmp less_than>`) are read whole, brackets balanced.

type tokKind uint8

const (
	tEOF    tokKind = iota
	tValue          // %name
	tSymbol         // @name
	tType           // !name or !dialect.type<...>
	tAttr           // #name<...>
	tIdent          // bare identifier (op names, keywords)
	tString         // "..."
	tNumber         // integer or float literal
	tPunct          // ( ) { } [ ] < > , : = -> <{ }> *
)

// Pos is a place in the source text: 1-based line and column.
type Pos struct{ Line, Col int }

type token struct {
	kind tokKind
	text string
	pos  Pos
}

// ReadError is bad PTO-AS input: where and what.
type ReadError struct {
	File string
	Pos  Pos
	Msg  string
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

type lexer struct {
	src       string
	off       int
	line, col int
	file      string
}

func (l *lexer) errorf(pos Pos, format string, args ...any) *ReadError {
	return &ReadError{File: l.file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.src); i++ {
		if l.src[l.off] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.off++
	}
}

func (l *lexer) skipSpace() {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.advance(1)
		case strings.HasPrefix(l.src[l.off:], "//"):
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance(1)
			}
		default:
			return
		}
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c == '.' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func isLetterByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// tokens splits src into tokens.
func tokenize(file, src string) ([]token, error) {
	l := &lexer{src: src, line: 1, col: 1, file: file}
	var out []token
	for {
		l.skipSpace()
		pos := Pos{l.line, l.col}
		if l.off >= len(l.src) {
			out = append(out, token{kind: tEOF, pos: pos})
			return out, nil
		}
		c := l.src[l.off]
		start := l.off
		switch {
		case c == '%' || c == '@' || c == '^':
			if l.off+1 < len(l.src) && l.src[l.off+1] == '"' {
				l.advance(1)
				s, err := l.stringLit(pos)
				if err != nil {
					return nil, err
				}
				kind := tValue
				if c == '@' {
					kind = tSymbol
				}
				out = append(out, token{kind: kind, text: string(c) + s, pos: pos})
				continue
			}
			l.advance(1)
			for l.off < len(l.src) && (isIdentByte(l.src[l.off]) || l.src[l.off] == '#') {
				l.advance(1)
			}
			if l.off == start+1 {
				return nil, l.errorf(pos, "expected a name after '%c'", c)
			}
			kind := tValue
			if c == '@' {
				kind = tSymbol
			}
			out = append(out, token{kind: kind, text: l.src[start:l.off], pos: pos})
		case c == '!' || c == '#':
			l.advance(1)
			for l.off < len(l.src) && isIdentByte(l.src[l.off]) {
				l.advance(1)
			}
			if l.off < len(l.src) && l.src[l.off] == '<' {
				if err := l.balanced(pos); err != nil {
					return nil, err
				}
			}
			kind := tType
			if c == '#' {
				kind = tAttr
			}
			if l.off == start+1 {
				return nil, l.errorf(pos, "expected a name after '%c'", c)
			}
			out = append(out, token{kind: kind, text: l.src[start:l.off], pos: pos})
		case c == '"':
			s, err := l.stringLit(pos)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tString, text: s, pos: pos})
		case isDigitByte(c) || ((c == '-' || c == '+') && l.off+1 < len(l.src) && isDigitByte(l.src[l.off+1])):
			l.advance(1)
			if strings.HasPrefix(l.src[l.off:], "x") && l.src[start:l.off] == "0" {
				l.advance(1)
				for l.off < len(l.src) && strings.IndexByte("0123456789abcdefABCDEF", l.src[l.off]) >= 0 {
					l.advance(1)
				}
			} else {
				for l.off < len(l.src) && isDigitByte(l.src[l.off]) {
					l.advance(1)
				}
				if l.off < len(l.src) && l.src[l.off] == '.' {
					l.advance(1)
					for l.off < len(l.src) && isDigitByte(l.src[l.off]) {
						l.advance(1)
					}
				}
				if l.off < len(l.src) && (l.src[l.off] == 'e' || l.src[l.off] == 'E') {
					save, sl, sc := l.off, l.line, l.col
					l.advance(1)
					if l.off < len(l.src) && (l.src[l.off] == '+' || l.src[l.off] == '-') {
						l.advance(1)
					}
					if l.off < len(l.src) && isDigitByte(l.src[l.off]) {
						for l.off < len(l.src) && isDigitByte(l.src[l.off]) {
							l.advance(1)
						}
					} else {
						l.off, l.line, l.col = save, sl, sc
					}
				}
			}
			out = append(out, token{kind: tNumber, text: l.src[start:l.off], pos: pos})
		case isLetterByte(c):
			for l.off < len(l.src) && isIdentByte(l.src[l.off]) && l.src[l.off] != '-' {
				l.advance(1)
			}
			out = append(out, token{kind: tIdent, text: l.src[start:l.off], pos: pos})
		default:
			two := ""
			if l.off+1 < len(l.src) {
				two = l.src[l.off : l.off+2]
			}
			switch two {
			case "->", "<{", "}>":
				l.advance(2)
				out = append(out, token{kind: tPunct, text: two, pos: pos})
				continue
			}
			if strings.IndexByte("(){}[]<>,:=*?+", c) < 0 {
				return nil, l.errorf(pos, "unexpected character %q", c)
			}
			l.advance(1)
			out = append(out, token{kind: tPunct, text: string(c), pos: pos})
		}
	}
}

// stringLit reads a double-quoted string with MLIR's escapes (\" \\ \n \t and \xx hex).
func (l *lexer) stringLit(pos Pos) (string, error) {
	l.advance(1) // the opening quote
	var b strings.Builder
	for {
		if l.off >= len(l.src) || l.src[l.off] == '\n' {
			return "", l.errorf(pos, "string literal not closed")
		}
		c := l.src[l.off]
		if c == '"' {
			l.advance(1)
			return b.String(), nil
		}
		if c == '\\' && l.off+1 < len(l.src) {
			n := l.src[l.off+1]
			switch n {
			case '"', '\\':
				b.WriteByte(n)
				l.advance(2)
				continue
			case 'n':
				b.WriteByte('\n')
				l.advance(2)
				continue
			case 't':
				b.WriteByte('\t')
				l.advance(2)
				continue
			}
			if l.off+2 < len(l.src) {
				var v byte
				if _, err := fmt.Sscanf(l.src[l.off+1:l.off+3], "%02x", &v); err == nil {
					b.WriteByte(v)
					l.advance(3)
					continue
				}
			}
			return "", l.errorf(Pos{l.line, l.col}, "unknown escape in string literal")
		}
		b.WriteByte(c)
		l.advance(1)
	}
}

// balanced reads a bracketed <...> group (with nested <>, (), [], {} and strings).
func (l *lexer) balanced(pos Pos) error {
	var stack []byte
	closer := map[byte]byte{'<': '>', '(': ')', '[': ']', '{': '}'}
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == '"':
			if _, err := l.stringLit(Pos{l.line, l.col}); err != nil {
				return err
			}
			continue
		case c == '-' && l.off+1 < len(l.src) && l.src[l.off+1] == '>':
			l.advance(2) // '->' inside a type is not a closing bracket
			continue
		case closer[c] != 0:
			stack = append(stack, closer[c])
		case c == '>' || c == ')' || c == ']' || c == '}':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return l.errorf(Pos{l.line, l.col}, "unbalanced %q in a type or attribute", c)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				l.advance(1)
				return nil
			}
		case c == '\n':
			return l.errorf(pos, "type or attribute not closed on its line")
		}
		l.advance(1)
	}
	return l.errorf(pos, "type or attribute not closed")
}
