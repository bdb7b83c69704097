package core

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustDim(t testing.TB, s string) Dim {
	t.Helper()
	d, err := ParseDim(s)
	require.NoError(t, err, s)
	return d
}

func TestDimCanonicalForms(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1024", "1024"},
		{"0", "0"},
		{"-3", "-3"},
		{"batch", "batch"},
		{"seq*batch", "batch*seq"},
		{"batch*seq == seq*batch", ""}, // not an expression: see the error cases
		{"(s+1)-1", "s"},
		{"s+1", "s+1"},
		{"1+s", "s+1"},
		{"s-1", "s-1"},
		{"2*s//2", "s"},
		{"(2*s+3)//2", "s+1"},
		{"(2*s+1)//2", "s"},
		{"s//2", "s//2"},
		{"(s+1)//2", "(s+1)//2"},
		{"2*(s//2)", "2*(s//2)"},
		{"(s//2)*2", "2*(s//2)"},
		{"s%2", "s%2"},
		{"(2*s+3)%2", "1"},
		{"(4*s)%2", "0"},
		{"s*s", "s*s"},
		{"(s+1)*(s-1)", "s*s-1"},
		{"b*s*1024//(b*16)", "64*s"},
		{"-s", "-s"},
		{"-(s-4)", "-s+4"},
		{"x.1*2", "2*x.1"},
		{"7//2", "3"},
		{"-7//2", "-4"},
		{"-7%3", "2"},
		{"7%-3", "-2"},
	} {
		if c.want == "" {
			continue
		}
		assert.Equal(t, c.want, mustDim(t, c.in).String(), c.in)
	}
}

func TestDimParseErrors(t *testing.T) {
	for _, s := range []string{"", "s+", "(s", "s)", "2s", "s/2", "s**2", "s//0", "s%0", "1.5", "99999999999999999999"} {
		_, err := ParseDim(s)
		assert.Error(t, err, "%q", s)
	}
}

func TestDimQueries(t *testing.T) {
	d := mustDim(t, "b*s+(s+1)//2")
	assert.Equal(t, []string{"b", "s"}, d.Symbols())
	assert.False(t, d.IsConst())
	v, err := d.Eval(map[string]int{"b": 3, "s": 5})
	require.NoError(t, err)
	assert.Equal(t, 18, v)
	_, err = d.Eval(map[string]int{"b": 3})
	assert.ErrorContains(t, err, "symbol s has no value")
	assert.Equal(t, "3*s+(s+1)//2", d.Substitute(map[string]int{"b": 3}).String())
	assert.Equal(t, "18", d.Substitute(map[string]int{"b": 3, "s": 5}).String())
	n, ok := DimConst(7).Const()
	assert.True(t, ok)
	assert.Equal(t, 7, n)
	_, err = mustDim(t, "b//s").Eval(map[string]int{"b": 1, "s": 0})
	assert.ErrorContains(t, err, "is 0")
	k, rest, ok := mustDim(t, "3*s+b+2").linearIn("s")
	assert.True(t, ok)
	assert.Equal(t, 3, k)
	assert.Equal(t, "b+2", rest.String())
	_, _, ok = mustDim(t, "s*s").linearIn("s")
	assert.False(t, ok)
}

// exprNode is a random expression with its value computed directly, with Python's
// floor division and remainder: the oracle for Dim's simplifications.
type exprNode struct {
	text string
	eval func(v map[string]int) int
}

func randomExpr(r *rand.Rand, depth int) exprNode {
	syms := []string{"a", "b", "c"}
	if depth == 0 || r.IntN(4) == 0 {
		if r.IntN(2) == 0 {
			n := r.IntN(9) - 3
			return exprNode{fmt.Sprintf("(%d)", n), func(map[string]int) int { return n }}
		}
		s := syms[r.IntN(len(syms))]
		return exprNode{s, func(v map[string]int) int { return v[s] }}
	}
	x := randomExpr(r, depth-1)
	switch r.IntN(5) {
	case 0:
		y := randomExpr(r, depth-1)
		return exprNode{"(" + x.text + ")+(" + y.text + ")", func(v map[string]int) int { return x.eval(v) + y.eval(v) }}
	case 1:
		y := randomExpr(r, depth-1)
		return exprNode{"(" + x.text + ")-(" + y.text + ")", func(v map[string]int) int { return x.eval(v) - y.eval(v) }}
	case 2:
		y := randomExpr(r, depth-1)
		return exprNode{"(" + x.text + ")*(" + y.text + ")", func(v map[string]int) int { return x.eval(v) * y.eval(v) }}
	case 3: // divisors that are never 0: positive constants or a symbol plus one
		if r.IntN(2) == 0 {
			c := r.IntN(5) + 1
			return exprNode{"(" + x.text + ")//" + fmt.Sprint(c), func(v map[string]int) int { return floorDiv(x.eval(v), c) }}
		}
		s := syms[r.IntN(len(syms))]
		return exprNode{"(" + x.text + ")//(" + s + "+1)", func(v map[string]int) int { return floorDiv(x.eval(v), v[s]+1) }}
	}
	c := r.IntN(5) + 1
	return exprNode{"(" + x.text + ")%" + fmt.Sprint(c), func(v map[string]int) int { return floorMod(x.eval(v), c) }}
}

// Every simplification keeps the value: the canonical form evaluates like the
// expression it came from for any symbol values, and its text parses back to itself.
func TestDimSimplificationKeepsValues(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 2000; i++ {
		e := randomExpr(r, 4)
		d := mustDim(t, e.text)
		again := mustDim(t, d.String())
		require.Equal(t, d.String(), again.String(), "canonical text of %s parses back to itself", e.text)
		for k := 0; k < 5; k++ {
			vals := map[string]int{"a": r.IntN(20), "b": r.IntN(20), "c": r.IntN(20)}
			got, err := d.Eval(vals)
			require.NoError(t, err)
			require.Equal(t, e.eval(vals), got, "%s = %s at %v", e.text, d, vals)
			sub := d.Substitute(map[string]int{"a": vals["a"]})
			got2, err := sub.Eval(vals)
			require.NoError(t, err)
			require.Equal(t, got, got2, "partial substitution of %s", d)
		}
	}
}

func TestDimArithmeticIdentities(t *testing.T) {
	a, b := DimSym("a"), DimSym("b")
	assert.True(t, a.Mul(b).Equal(b.Mul(a)))
	assert.True(t, a.Add(b).Sub(b).Equal(a))
	assert.True(t, a.Sub(a).Equal(DimConst(0)))
	q, err := a.Mul(b).FloorDiv(b)
	require.NoError(t, err)
	assert.True(t, q.Equal(a))
	m, err := a.Mul(DimConst(6)).Mod(DimConst(3))
	require.NoError(t, err)
	assert.Equal(t, "0", m.String())
	_, err = a.FloorDiv(DimConst(0))
	assert.Error(t, err)
	assert.True(t, nonNegative(mustDim(t, "a*b+3+(a+1)//2")))
	assert.False(t, nonNegative(mustDim(t, "a-1")))
	assert.False(t, nonNegative(mustDim(t, "(a-5)//2")))
}
