package core

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Attrs are an op's compile-time parameters. Values are bool, int64, float64, string,
// []int64, or []Dim where an op declares []int64 (a shape or bounds over symbols, as
// in reshape(x, [batch, seq*2])); anything else is rejected by the verifier. A []Dim
// whose dims are all constant is normalised to []int64 when an op is applied.
type Attrs map[string]any

// Bool returns attribute name as a bool, or def when absent.
func (a Attrs) Bool(name string, def bool) bool {
	if v, ok := a[name].(bool); ok {
		return v
	}
	return def
}

// Int returns attribute name as an int, or def when absent.
func (a Attrs) Int(name string, def int) int {
	if v, ok := a[name].(int64); ok {
		return int(v)
	}
	return def
}

// Float returns attribute name as a float64, or def when absent.
func (a Attrs) Float(name string, def float64) float64 {
	if v, ok := a[name].(float64); ok {
		return v
	}
	return def
}

// Str returns attribute name as a string, or def when absent.
func (a Attrs) Str(name string, def string) string {
	if v, ok := a[name].(string); ok {
		return v
	}
	return def
}

// Ints returns attribute name as a list of ints, or nil when absent or symbolic.
func (a Attrs) Ints(name string) []int {
	v, ok := a[name].([]int64)
	if !ok {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// String prints attributes sorted by name, as {a=1, b=true}; "" when empty.
func (a Attrs) String() string {
	if len(a) == 0 {
		return ""
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + formatAttr(a[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func formatAttr(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEnN") { // keep floats distinguishable from ints (NaN, Inf too)
			s += ".0"
		}
		return s
	case string:
		return strconv.Quote(x)
	case []int64:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = strconv.FormatInt(e, 10)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case []Dim:
		return DimsString(x)
	}
	return fmt.Sprintf("<bad attr %T>", v)
}

// parseAttr is the inverse of formatAttr.
func parseAttr(s string) (any, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "true" || s == "false":
		return s == "true", nil
	case strings.HasPrefix(s, "\""):
		return strconv.Unquote(s)
	case strings.HasPrefix(s, "["):
		if !strings.HasSuffix(s, "]") {
			return nil, fmt.Errorf("unterminated list %q", s)
		}
		body := strings.TrimSpace(s[1 : len(s)-1])
		out := []int64{}
		if body == "" {
			return out, nil
		}
		for _, f := range strings.Split(body, ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil {
				return parseDimList(body)
			}
			out = append(out, v)
		}
		return out, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, nil
	}
	return nil, fmt.Errorf("bad attribute value %q", s)
}

// checkAttrValue rejects values the text form cannot carry.
func checkAttrValue(v any) error {
	switch x := v.(type) {
	case bool, int64, float64, string, []int64:
		return nil
	case []Dim:
		for _, d := range x {
			if !d.IsConst() {
				return nil
			}
		}
		return fmt.Errorf("list %s holds no symbolic dim, so it must be []int64 (one text, one value)", DimsString(x))
	}
	return fmt.Errorf("attribute value of type %T (want bool, int64, float64, string or []int64)", v)
}

// Dims returns a list attribute as Dims, whether it is []int64 or []Dim; nil when absent.
func (a Attrs) Dims(name string) []Dim {
	switch v := a[name].(type) {
	case []int64:
		out := make([]Dim, len(v))
		for i, x := range v {
			out[i] = DimConst(int(x))
		}
		return out
	case []Dim:
		return v
	}
	return nil
}

// IsSymbolic reports whether some attribute holds a symbolic dim.
func (a Attrs) IsSymbolic() bool {
	for _, v := range a {
		if _, ok := v.([]Dim); ok {
			return true
		}
	}
	return false
}

// parseDimList reads the body of a list attribute that holds symbolic dims.
func parseDimList(body string) (any, error) {
	dims, err := ParseDims(body)
	if err != nil {
		return nil, err
	}
	return normalizeDimList(dims), nil
}

// normalizeDimList gives []int64 when every dim is constant, else the dims.
func normalizeDimList(dims []Dim) any {
	ints := make([]int64, len(dims))
	for i, d := range dims {
		v, ok := d.Const()
		if !ok {
			return append([]Dim(nil), dims...)
		}
		ints[i] = int64(v)
	}
	return ints
}

// attrTypeMatches reports whether v may be given for an attribute whose default is def:
// the same Go type, or a []Dim for a []int64.
func attrTypeMatches(v, def any) bool {
	if _, isDims := v.([]Dim); isDims {
		_, wantInts := def.([]int64)
		return wantInts
	}
	return fmt.Sprintf("%T", v) == fmt.Sprintf("%T", def)
}

// substituteAttrs returns attrs with every []Dim evaluated for the symbol values given
// (becoming []int64 when all are known).
func substituteAttrs(attrs Attrs, values map[string]int) Attrs {
	if !attrs.IsSymbolic() {
		return attrs
	}
	out := make(Attrs, len(attrs))
	for k, v := range attrs {
		if dims, ok := v.([]Dim); ok {
			sub := make([]Dim, len(dims))
			for i, d := range dims {
				sub[i] = d.Substitute(values)
			}
			v = normalizeDimList(sub)
		}
		out[k] = v
	}
	return out
}
