package lower

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// Differential test of the optimisation levels: random Tensor Graphs (elementwise ops,
// broadcasts, reductions, matmuls, reshapes and transposes, casts, constants, and the
// patterns the graph clean-ups rewrite: x*1, double negations and transposes, casts to
// the same dtype, repeated and dead nodes) are compiled at O0 to O3 and run; every level
// must give the reference interpreter's values. Graphs of ops that round once must match
// it bit for bit at every level (the compiler promises that fusion, folding and
// simplification change no byte); graphs with float sums and matmuls, which accumulate
// in fp32 on the device, within a tolerance.

// graphGen builds one random graph.
type graphGen struct {
	t     *testing.T
	rng   *rand.Rand
	b     *core.Builder
	vals  []core.Value
	exact bool // only ops that round once (no float sums, no matmuls)
}

var floatTypes = []dtype.DType{dtype.Float32, dtype.Float16, dtype.BFloat16}

func (g *graphGen) pick() core.Value { return g.vals[g.rng.IntN(len(g.vals))] }

func (g *graphGen) typ(v core.Value) core.TensorType { return g.b.Type(v) }

// op applies name; an op the types do not allow is skipped (ok=false).
func (g *graphGen) op(name string, attrs core.Attrs, ins ...core.Value) (core.Value, bool) {
	v, err := g.b.Op(name, ins, attrs, core.Location{File: "diff.py", Line: len(g.vals)})
	if err != nil {
		return -1, false
	}
	g.vals = append(g.vals, v)
	return v, true
}

func (g *graphGen) param(t core.TensorType) core.Value {
	v := g.b.Param(fmt.Sprintf("p%d", len(g.vals)), t)
	g.vals = append(g.vals, v)
	return v
}

// partner returns a value whose shape broadcasts with a's, making a new param (of a's
// shape, its last axis, a column or a scalar) when none does.
func (g *graphGen) partner(a core.Value) core.Value {
	for range 6 {
		c := g.pick()
		if _, ok := core.BroadcastShapes(g.typ(a).Shape, g.typ(c).Shape); ok {
			return c
		}
	}
	s := g.typ(a).Shape
	shapes := []core.Shape{s.Clone(), {}}
	if len(s) == 2 {
		shapes = append(shapes, core.Shape{s[1]}, core.Shape{s[0], 1})
	}
	return g.param(core.TensorType{DType: floatTypes[g.rng.IntN(3)], Shape: shapes[g.rng.IntN(len(shapes))]})
}

func (g *graphGen) constant(like core.Value) core.Value {
	consts := []float64{1, 0, math.Copysign(0, -1), 2, 0.5, -3}
	shape := core.Shape{}
	if g.rng.IntN(2) == 0 {
		shape = g.typ(like).Shape.Clone()
	}
	v, _ := g.op("full", core.Attrs{"value": consts[g.rng.IntN(len(consts))], "dtype": g.typ(like).DType.LongName(), "shape": int64s(shape)})
	return v
}

// step adds one random op (or a few, for the patterns the clean-ups look for).
func (g *graphGen) step() {
	unary := []string{"neg", "abs", "floor", "relu", "exp", "sqrt"}
	binary := []string{"add", "sub", "mul", "maximum", "minimum", "div"}
	if !g.exact { // values whose errors division, exp and sqrt would amplify past any bound
		unary, binary = unary[:4], binary[:5]
	}
	a := g.pick()
	ta := g.typ(a)
	switch k := g.rng.IntN(16); k {
	case 0, 1:
		g.op(unary[g.rng.IntN(len(unary))], nil, a)
	case 2, 3:
		g.op(binary[g.rng.IntN(len(binary))], nil, a, g.partner(a))
	case 4, 14, 15: // an identity the simplifier removes, or a near miss it must keep
		negZero := math.Copysign(0, -1)
		pairs := []struct {
			op    string
			value float64
		}{{"mul", 1}, {"add", negZero}, {"add", 0}, {"sub", 0}, {"sub", negZero}, {"div", 1}, {"mul", negZero}, {"add", 2}}
		p := pairs[g.rng.IntN(len(pairs))]
		if !g.exact && p.op == "div" {
			p.op = "mul"
		}
		dt := ta.DType
		if g.rng.IntN(4) == 0 {
			dt = floatTypes[g.rng.IntN(3)] // the promotion may make it no identity
		}
		shape := core.Shape{}
		if g.rng.IntN(2) == 0 {
			shape = ta.Shape.Clone()
		}
		if c, ok := g.op("full", core.Attrs{"value": p.value, "dtype": dt.LongName(), "shape": int64s(shape)}); ok {
			if g.rng.IntN(2) == 0 && p.op != "sub" && p.op != "div" {
				g.op(p.op, nil, c, a)
			} else {
				g.op(p.op, nil, a, c)
			}
		}
	case 5: // neg(neg(x)), transpose(transpose(x)), reshape(reshape(x)), cast to itself
		switch g.rng.IntN(4) {
		case 0:
			if n, ok := g.op("neg", nil, a); ok {
				g.op("neg", nil, n)
			}
		case 1:
			if t, ok := g.op("transpose", nil, a); ok {
				g.op("transpose", nil, t)
			}
		case 2:
			if r, ok := g.op("reshape", core.Attrs{"shape": []int64{-1}}, a); ok {
				g.op("reshape", core.Attrs{"shape": int64s(ta.Shape)}, r)
			}
		case 3:
			g.op("cast", core.Attrs{"dtype": ta.DType.LongName()}, a)
		}
	case 6:
		g.op("cast", core.Attrs{"dtype": floatTypes[g.rng.IntN(3)].LongName()}, a)
	case 7:
		if len(ta.Shape) == 2 {
			g.op("transpose", core.Attrs{"perm": []int64{1, 0}}, a)
		}
	case 8: // a reduction broadcast back over its input
		red := []string{"max", "min", "sum"}[g.rng.IntN(3)]
		if g.exact && red == "sum" {
			red = "max"
		}
		if len(ta.Shape) > 0 && ta.Shape.NumElements() > 0 {
			if r, ok := g.op(red, core.Attrs{"axis": []int64{int64(g.rng.IntN(len(ta.Shape)))}, "keepdims": true}, a); ok {
				g.op("sub", nil, a, r)
			}
		}
	case 9: // positions: iota, cast, combined with a
		if len(ta.Shape) > 0 {
			if i, ok := g.op("iota", core.Attrs{"shape": int64s(ta.Shape), "axis": int64(g.rng.IntN(len(ta.Shape)))}); ok {
				if c, ok := g.op("cast", core.Attrs{"dtype": ta.DType.LongName()}, i); ok {
					g.op("mul", nil, a, g.constant(a))
					g.op("add", nil, a, c)
				}
			}
		}
	case 10: // a comparison and a select
		b := g.partner(a)
		if m, ok := g.op([]string{"less", "greater_equal", "equal"}[g.rng.IntN(3)], nil, a, b); ok {
			g.op("where", nil, m, a, b)
		}
	case 11: // the same op twice (CSE) and a dead one (DCE)
		op := unary[g.rng.IntN(len(unary))]
		x, _ := g.op(op, nil, a)
		y, _ := g.op(op, nil, a)
		if x >= 0 && y >= 0 {
			g.op("add", nil, x, y)
		}
		g.op("neg", nil, a)
		g.vals = g.vals[:len(g.vals)-1] // never picked again: dead
	case 12, 13:
		if g.exact || len(ta.Shape) != 2 || ta.Shape[1] == 0 {
			g.op(unary[g.rng.IntN(len(unary))], nil, a)
			return
		}
		w := g.param(core.TensorType{DType: ta.DType, Shape: core.Shape{ta.Shape[1], 1 + g.rng.IntN(40)}})
		if ta.DType == dtype.Float32 && g.rng.IntN(2) == 0 {
			w = g.param(core.TensorType{DType: dtype.Float16, Shape: g.typ(w).Shape})
			a, _ = g.op("cast", core.Attrs{"dtype": "float16"}, a)
		}
		var prod core.Value
		ok := false
		switch g.rng.IntN(3) {
		case 0:
			prod, ok = g.op("matmul", nil, a, w)
		case 1:
			if wt, tok := g.op("transpose", nil, w); tok {
				prod, ok = g.op("matmul", core.Attrs{"transpose_b": true}, a, wt)
			}
		case 2: // a column slice of a wider weight: a strided view the matmul reads in place
			tw := g.typ(w)
			wide := g.param(core.TensorType{DType: tw.DType, Shape: core.Shape{tw.Shape[0], tw.Shape[1] + 3}})
			if sw, sok := g.op("slice", core.Attrs{"starts": []int64{0, 2}, "stops": []int64{int64(tw.Shape[0]), int64(tw.Shape[1] + 2)}, "steps": []int64{1, 1}}, wide); sok {
				prod, ok = g.op("matmul", nil, a, sw)
			}
		}
		// Sometimes the product goes 3-D and meets a same-shape operand there, as a
		// linear layer's output meets its residual.
		if pt := g.typ(prod); ok && g.rng.IntN(2) == 0 && len(pt.Shape) == 2 {
			shape3 := []int64{1, int64(pt.Shape[0]), int64(pt.Shape[1])}
			if r, rok := g.op("reshape", core.Attrs{"shape": shape3}, prod); rok {
				g.op("add", nil, r, g.param(g.typ(r)))
			}
		}
	}
}

func randomGraph(t *testing.T, seed uint64, exact bool) *core.Graph {
	rng := rand.New(rand.NewPCG(seed, 7))
	g := &graphGen{t: t, rng: rng, b: core.NewBuilder(fmt.Sprintf("random%d", seed)), exact: exact}
	rows, cols := 1+rng.IntN(9), 1+rng.IntN(70)
	g.param(core.TensorType{DType: floatTypes[rng.IntN(3)], Shape: core.Shape{rows, cols}})
	g.param(core.TensorType{DType: floatTypes[rng.IntN(3)], Shape: core.Shape{cols}})
	for range 5 + rng.IntN(8) {
		g.step()
	}
	// Every value nothing reads is a result (but the dead ones step made on purpose),
	// so that each rewrite shows in some output.
	graph := g.b.Graph()
	users := graph.Users()
	for _, v := range g.vals {
		if len(users[v]) == 0 && graph.Nodes[v].Op != core.OpParam {
			g.b.Output(v)
		}
	}
	if len(graph.Outputs) == 0 {
		g.b.Output(g.vals[len(g.vals)-1])
	}
	return g.b.Graph()
}

// closeEnough: bit for bit when exact; otherwise within 1% of the output's largest
// magnitude (fp32 accumulation and the roundings after it), which still catches any
// misplaced element, and with the same NaNs and infinities.
func closeEnough(exact bool, got, want *core.Array) (int, bool) {
	scale := 1.0
	for _, w := range want.Data {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			scale = max(scale, math.Abs(w))
		}
	}
	for i, w := range want.Data {
		d := got.Data[i]
		switch {
		case math.IsNaN(w) || math.IsNaN(d):
			if math.IsNaN(w) != math.IsNaN(d) {
				return i, false
			}
		case exact:
			if math.Float64bits(w) != math.Float64bits(d) {
				return i, false
			}
		case math.IsInf(w, 0) || math.IsInf(d, 0):
			if w != d && math.Abs(w-d) > 0 && !(math.IsInf(w, 0) && math.Abs(d) > 1e4) && !(math.IsInf(d, 0) && math.Abs(w) > 1e4) {
				return i, false // an overflow of the output dtype either side: allowed near the limit only
			}
		case math.Abs(d-w) > 0.01*scale:
			return i, false
		}
	}
	return 0, true
}

// withSpecialValues gives copies of ins with about one element in eight replaced by
// NaN, an infinity or a signed zero, where inexact shortcuts show (x + 0.0 is not x for
// x = -0.0).
func withSpecialValues(seed uint64, ins []*core.Array) ([]*core.Array, [][]byte) {
	rng := rand.New(rand.NewPCG(seed, 11))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
	out := make([]*core.Array, len(ins))
	raw := make([][]byte, len(ins))
	for k, a := range ins {
		out[k] = &core.Array{Type: a.Type, Data: append([]float64(nil), a.Data...)}
		for i := range a.Data {
			if rng.IntN(8) == 0 {
				out[k].Data[i] = special[rng.IntN(len(special))]
			}
		}
		raw[k] = out[k].Bytes()
	}
	return out, raw
}

func runAt(t *testing.T, chip *device.Chip, g *core.Graph, level OptLevel, raw [][]byte) []*core.Array {
	exe, err := Compile(g, Options{Chip: chip, Verify: true, OptLevel: level})
	require.NoError(t, err, "%s\n%s", level, core.Format(g))
	got, _, err := exe.Run(raw)
	require.NoError(t, err, "%s\n%s", level, core.Format(g))
	out := make([]*core.Array, len(got))
	for k, b := range got {
		out[k] = core.ArrayFromBytes(g.Type(g.Outputs[k]), b)
	}
	return out
}

// checkAtEveryLevel runs g at every level on random values in [-1, 1), which must give
// the reference's values (bit for bit when exact). Exact graphs run again on inputs
// with NaNs, infinities and signed zeros, where the device and the reference disagree
// on a few ops: there
// every level must give O0's bytes, or the reference's where it moves an element to
// them (a folded constant is the reference's value).
func checkAtEveryLevel(t *testing.T, chip *device.Chip, g *core.Graph, seed uint64, exact bool) {
	ins, raw := randomInputs(g)
	want, err := core.Interpret(g, ins)
	require.NoError(t, err)
	for _, level := range []OptLevel{O0, O1, O2, O3} {
		for k, got := range runAt(t, chip, g, level, raw) {
			if i, ok := closeEnough(exact, got, want[k]); !ok {
				t.Fatalf("%s on %s, output %d element %d: device %v, reference %v\n%s", level, chip.Name, k, i, got.Data[i], want[k].Data[i], core.Format(g))
			}
		}
	}
	if !exact {
		return
	}
	ins, raw = withSpecialValues(seed, ins)
	want, err = core.Interpret(g, ins)
	require.NoError(t, err)
	base := runAt(t, chip, g, O0, raw)
	for _, level := range []OptLevel{O1, O2, O3} {
		for k, got := range runAt(t, chip, g, level, raw) {
			for i, x := range got.Data {
				if !sameValue(x, base[k].Data[i]) && !sameValue(x, want[k].Data[i]) {
					t.Fatalf("%s on %s, output %d element %d: %v, but O0 gives %v and the reference %v\n%s", level, chip.Name, k, i, x, base[k].Data[i], want[k].Data[i], core.Format(g))
				}
			}
		}
	}
}

func TestOptLevelsAgreeWithTheReference(t *testing.T) {
	tiny := tinyChip(t)
	a2, err := device.Preset("a2")
	require.NoError(t, err)
	for seed := range uint64(120) {
		exact := seed%2 == 0
		chip := tiny
		if seed%20 == 19 {
			chip = a2
		}
		t.Run(fmt.Sprintf("%d", seed), func(t *testing.T) {
			checkAtEveryLevel(t, chip, randomGraph(t, seed, exact), seed, exact)
		})
	}
}
