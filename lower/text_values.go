package lower

import (
	"math"
	"strconv"
	"strings"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// Readers for the values the graph texts share with other packages' texts: tensor
// types and op attributes as core prints them, and the enums of this package and isa.

// tensorType := dtype '[' [int {',' int}] ']', as core.TensorType.String prints it.
func (p *textParser) tensorType() core.TensorType {
	t := p.next()
	dt := dtype.Invalid
	if t.Kind == tokIdent {
		for _, d := range dtype.All {
			if d.String() == t.Text {
				dt = d
			}
		}
	}
	if dt == dtype.Invalid {
		p.fail(t, "expected dtype (f32, f16, bf16, i8, i32, bool), found %s", t)
	}
	shape := core.Shape(p.intList("shape"))
	// Reject what core.Verify rejects, so that byte counts computed from a parsed type
	// cannot overflow.
	const widest = 4
	n := 1
	for _, d := range shape {
		if d == 0 {
			n = 0
			break
		}
		if n > math.MaxInt/d/widest {
			p.fail(t, "shape %s has too many elements", shape)
		}
		n *= d
	}
	return core.TensorType{DType: dt, Shape: shape}
}

// attrs := '{' [key '=' value {',' key '=' value}] '}', the text of core.Attrs.String.
// Values are read as raw text and decoded by attrValue, the inverse of core's printer.
func (p *textParser) attrs() core.Attrs {
	p.expectPunct("{", " opening the attributes")
	out := core.Attrs{}
	if isPunct(p.peek(), "}") {
		p.next()
		return out
	}
	for {
		k := p.next()
		if k.Kind != tokIdent {
			p.fail(k, "expected attribute name, found %s", k)
		}
		if _, dup := out[k.Text]; dup {
			p.fail(k, "attribute %s is given twice", k.Text)
		}
		p.expectPunct("=", " after the attribute name")
		out[k.Text] = p.attrValue()
		t := p.next()
		if isPunct(t, "}") {
			return out
		}
		if !isPunct(t, ",") {
			p.fail(t, "expected ',' or '}' after an attribute, found %s", t)
		}
	}
}

// attrValue reads a bool, int64, float64, quoted string or [int64,...] list. Raw text
// is needed because floats (-1.5e+21, -Inf, NaN) are not single tokens.
func (p *textParser) attrValue() any {
	p.sc.SkipSpace()
	line, col := p.sc.Line, p.sc.Col
	rest := p.sc.Src[p.sc.Pos:]
	n := 0
	switch {
	case strings.HasPrefix(rest, `"`):
		lx := p.sc
		t, msg := lx.Next()
		if msg != "" {
			p.failAt(line, col, "%s", msg)
		}
		n = len(t.Text)
	case strings.HasPrefix(rest, "["):
		// Lists print on one line, so a missing ']' is reported on that line rather
		// than matched against some later bracket.
		first, _, _ := strings.Cut(rest, "\n")
		n = strings.IndexByte(first, ']') + 1
		if n == 0 {
			p.failAt(line, col, "expected ']' closing the list attribute on the same line")
		}
	default:
		for n < len(rest) && strings.IndexByte(" \t\r\n,}{#", rest[n]) < 0 && !strings.HasPrefix(rest[n:], "//") {
			n++
		}
	}
	v, ok := decodeAttr(rest[:n])
	if !ok {
		found := "'" + rest[:n] + "'"
		if n == 0 {
			found = p.peek().String()
		}
		p.failAt(line, col, "expected attribute value (bool, int, float, \"string\" or [ints]), found %s", found)
	}
	p.sc.Advance(n)
	return v
}

// decodeAttr is the inverse of core's attribute printer: an int prints without a '.',
// a float always with one (or an exponent, Inf or NaN), so the two cannot be confused.
func decodeAttr(s string) (any, bool) {
	switch {
	case s == "true" || s == "false":
		return s == "true", true
	case strings.HasPrefix(s, `"`):
		v, err := strconv.Unquote(s)
		return v, err == nil
	case strings.HasPrefix(s, "["):
		body := strings.TrimSpace(s[1 : len(s)-1])
		out := []int64{}
		if body == "" {
			return out, true
		}
		for _, f := range strings.Split(body, ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, true
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, true
	}
	return nil, false
}

// enum reads one of the printed names of an enum; names[i] is the text of value i.
func (p *textParser) enum(what string, names []string) int {
	t := p.next()
	if t.Kind == tokIdent {
		for i, n := range names {
			if n == t.Text {
				return i
			}
		}
	}
	p.fail(t, "expected %s (%s), found %s", what, strings.Join(names, ", "), t)
	return -1
}

func (p *textParser) role() TensorRole {
	return TensorRole(p.enum("tensor role", []string{RoleInput.String(), RoleOutput.String(), RoleTemp.String()}))
}

func (p *textParser) tileKind() TileKind {
	return TileKind(p.enum("tile kind", tileKindNames))
}

// coreKind reads cube or vector; CoreInvalid has no text.
func (p *textParser) coreKind() isa.CoreKind {
	return isa.CoreKind(p.enum("core kind", []string{isa.Cube.String(), isa.Vector.String()}) + int(isa.Cube))
}
