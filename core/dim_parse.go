package core

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseDim reads a dimension expression in the syntax Dim.String prints, which is
// Python's: integers, symbol names (identifiers; '.' is allowed after the first
// character), + - * // %, unary minus and parentheses, with Python's precedence.
func ParseDim(s string) (Dim, error) {
	p := dimParser{src: s}
	d, err := p.expr()
	if err != nil {
		return Dim{}, err
	}
	p.space()
	if p.pos < len(p.src) {
		return Dim{}, p.errorf("unexpected %q", p.src[p.pos:])
	}
	return d, nil
}

// ParseDims reads a comma-separated list of dimension expressions (no brackets).
// Negative constants are allowed: list attributes use -1 (reshape's inferred size).
func ParseDims(s string) ([]Dim, error) {
	dims, _, err := parseDimsAt(s, false)
	return dims, err
}

// parseDimsAt is ParseDims that also says, on error, at which byte of s the failing
// dimension starts; sizes refuses negative constants, as a shape must.
func parseDimsAt(s string, sizes bool) ([]Dim, int, error) {
	if strings.TrimSpace(s) == "" {
		return []Dim{}, 0, nil
	}
	var out []Dim
	depth, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch s[i] {
			case '(':
				depth++
				continue
			case ')':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		d, err := ParseDim(s[start:i])
		if err != nil {
			off := start + len(s[start:i]) - len(strings.TrimLeft(s[start:i], " \t"))
			return nil, off, fmt.Errorf("expected dimension (an integer or an expression over symbols), found %q", strings.TrimSpace(s[start:i]))
		}
		if v, ok := d.Const(); ok && v < 0 && sizes {
			off := start + len(s[start:i]) - len(strings.TrimLeft(s[start:i], " \t"))
			return nil, off, fmt.Errorf("dimension %d is negative (%d)", len(out), v)
		}
		out = append(out, d)
		start = i + 1
	}
	return out, 0, nil
}

// maxParsedTerms bounds the size of a parsed expression's canonical form: products of
// sums expand, and a short text must not expand into a huge polynomial.
const maxParsedTerms = 256

type dimParser struct {
	src string
	pos int
}

func (p *dimParser) errorf(format string, args ...any) error {
	return fmt.Errorf("bad dimension expression %q at offset %d: %s", p.src, p.pos, fmt.Sprintf(format, args...))
}

func (p *dimParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *dimParser) accept(op string) bool {
	p.space()
	if strings.HasPrefix(p.src[p.pos:], op) {
		p.pos += len(op)
		return true
	}
	return false
}

// expr := term {('+' | '-') term}
func (p *dimParser) expr() (Dim, error) {
	d, err := p.term()
	if err != nil {
		return Dim{}, err
	}
	for {
		switch {
		case p.accept("+"):
			t, err := p.term()
			if err != nil {
				return Dim{}, err
			}
			d = d.Add(t)
		case p.accept("-"):
			t, err := p.term()
			if err != nil {
				return Dim{}, err
			}
			d = d.Sub(t)
		default:
			return d, nil
		}
	}
}

// term := unary {('*' | '//' | '%') unary}
func (p *dimParser) term() (Dim, error) {
	d, err := p.unary()
	if err != nil {
		return Dim{}, err
	}
	for {
		var op string
		switch {
		case p.accept("//"):
			op = "//"
		case p.accept("*"):
			op = "*"
		case p.accept("%"):
			op = "%"
		default:
			return d, nil
		}
		u, err := p.unary()
		if err != nil {
			return Dim{}, err
		}
		switch op {
		case "*":
			if len(d.terms)*len(u.terms) > maxParsedTerms {
				return Dim{}, p.errorf("the expression expands to more than %d terms", maxParsedTerms)
			}
			d = d.Mul(u)
		case "//":
			if d, err = d.FloorDiv(u); err != nil {
				return Dim{}, p.errorf("%v", err)
			}
		default:
			if d, err = d.Mod(u); err != nil {
				return Dim{}, p.errorf("%v", err)
			}
		}
	}
}

// unary := '-' unary | '(' expr ')' | int | name
func (p *dimParser) unary() (Dim, error) {
	if p.accept("-") {
		d, err := p.unary()
		return d.Neg(), err
	}
	if p.accept("(") {
		d, err := p.expr()
		if err != nil {
			return Dim{}, err
		}
		if !p.accept(")") {
			return Dim{}, p.errorf("expected ')'")
		}
		return d, nil
	}
	p.space()
	start := p.pos
	switch {
	case p.pos < len(p.src) && isDigit(p.src[p.pos]):
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
		n, err := strconv.Atoi(p.src[start:p.pos])
		if err != nil {
			return Dim{}, p.errorf("integer %s is too large", p.src[start:p.pos])
		}
		return DimConst(n), nil
	case p.pos < len(p.src) && isLetter(p.src[p.pos]):
		for p.pos < len(p.src) && (isLetter(p.src[p.pos]) || isDigit(p.src[p.pos]) || p.src[p.pos] == '.') {
			p.pos++
		}
		return DimSym(p.src[start:p.pos]), nil
	case p.pos >= len(p.src):
		return Dim{}, p.errorf("expected a number, a symbol or '(' at the end")
	}
	return Dim{}, p.errorf("expected a number, a symbol or '(', found %q", p.src[p.pos:p.pos+1])
}
