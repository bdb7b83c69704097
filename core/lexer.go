package core

import "strings"

// The text forms of every IR level (the Tensor Graph here; the Tile, Block and
// Execution graphs in lower/) share one lexical structure: whitespace and line breaks
// are free, '//' starts a comment to the end of the line ('#' too where the level asks
// for it), names are identifiers or double-quoted Go strings, numbers are decimal
// digits, and each level names its punctuation. Lexer is that scanner.

// TokenKind classifies a token.
type TokenKind uint8

const (
	TokEOF    TokenKind = iota
	TokIdent            // letter or '_', then letters, digits, '_' and '.'
	TokInt              // decimal digits
	TokString           // a double-quoted Go string literal, quotes included
	TokPunct            // one byte of the lexer's punctuation set
	TokOther            // any other byte, reported as unexpected
)

// Token is one token with where it starts (byte offset, 1-based line and column).
type Token struct {
	Kind      TokenKind
	Text      string
	Pos       int
	Line, Col int
}

// String describes the token for "expected X, found Y" messages.
func (t Token) String() string {
	switch t.Kind {
	case TokEOF:
		return "end of input"
	case TokString:
		return t.Text
	}
	return "'" + t.Text + "'"
}

// Lexer splits text into tokens, tracking line and column for errors. It is a value:
// copying it saves a position to return to (one token of lookahead by re-scanning).
type Lexer struct {
	Src            string
	Pos, Line, Col int
	Puncts         string // the punctuation bytes of the level
	HashComments   bool   // '#' also starts a comment
}

// NewLexer starts at the beginning of src.
func NewLexer(src, puncts string, hashComments bool) Lexer {
	return Lexer{Src: src, Line: 1, Col: 1, Puncts: puncts, HashComments: hashComments}
}

// Advance moves n bytes forward.
func (s *Lexer) Advance(n int) {
	for i := 0; i < n && s.Pos < len(s.Src); i++ {
		if s.Src[s.Pos] == '\n' {
			s.Line++
			s.Col = 1
		} else {
			s.Col++
		}
		s.Pos++
	}
}

// SkipSpace skips whitespace and comments.
func (s *Lexer) SkipSpace() {
	for s.Pos < len(s.Src) {
		c := s.Src[s.Pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.Advance(1)
		case s.HashComments && c == '#' || strings.HasPrefix(s.Src[s.Pos:], "//"):
			end := strings.IndexByte(s.Src[s.Pos:], '\n')
			if end < 0 {
				end = len(s.Src) - s.Pos
			}
			s.Advance(end)
		default:
			return
		}
	}
}

// Next returns the next token, or a description of a malformed string literal (the
// only lexical error).
func (s *Lexer) Next() (Token, string) {
	s.SkipSpace()
	t := Token{Pos: s.Pos, Line: s.Line, Col: s.Col}
	if s.Pos >= len(s.Src) {
		return t, ""
	}
	rest := s.Src[s.Pos:]
	n := 1
	switch c := rest[0]; {
	case isLetter(c):
		for n < len(rest) && (isLetter(rest[n]) || isDigit(rest[n]) || rest[n] == '.') {
			n++
		}
		t.Kind = TokIdent
	case isDigit(c):
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		t.Kind = TokInt
	case c == '"':
		var msg string
		if n, msg = stringLiteralLen(rest); msg != "" {
			return t, msg
		}
		t.Kind = TokString
	case strings.IndexByte(s.Puncts, c) >= 0:
		t.Kind = TokPunct
	default:
		t.Kind = TokOther
	}
	s.Advance(n)
	t.Text = rest[:n]
	return t, ""
}

// stringLiteralLen returns the length of the double-quoted Go string literal at the
// start of s, or what is wrong with it. Literals stay on one line: printed ones escape
// newlines.
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

// IsIdent reports whether s prints without quotes (it scans as one TokIdent).
func IsIdent(s string) bool { return isIdent(s) }
