package core

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"pypto/dtype"
)

// Every op either has a way to differentiate it (a rule, or a decomposition into ops
// that do) or says why no gradient flows through it.
func TestEveryOpDeclaresItsGradient(t *testing.T) {
	for _, name := range OpNames() {
		d, _ := LookupOp(name)
		if d.VJP == nil && d.Decompose == nil && d.NoGrad == "" {
			t.Errorf("op %s has no VJP rule and is not marked NoGrad (set OpDef.VJP, or NoGrad with the reason)", name)
		}
		if d.VJP != nil && d.NoGrad != "" {
			t.Errorf("op %s has a VJP rule and is marked NoGrad (%q)", name, d.NoGrad)
		}
	}
}

type gradCase struct {
	name   string
	op     string
	attrs  Attrs
	shapes []Shape
	ints   map[int][]float64 // integer inputs: their values (int32)
	pos    bool              // inputs must be positive (log, sqrt, ...)
}

// Each rule's gradient of sum(w * op(x...)) for random w matches central finite
// differences of the reference interpreter (float32, so the step is large and the
// tolerance loose; the Python tests compare with torch.autograd more tightly).
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	cases := []gradCase{
		{"add broadcast", "add", nil, []Shape{{2, 3}, {3}}, nil, false},
		{"sub broadcast", "sub", nil, []Shape{{2, 1}, {1, 3}}, nil, false},
		{"mul", "mul", nil, []Shape{{2, 3}, {2, 3}}, nil, false},
		{"div", "div", nil, []Shape{{2, 3}, {3}}, nil, true},
		{"pow", "pow", nil, []Shape{{4}, {4}}, nil, true},
		{"maximum", "maximum", nil, []Shape{{3, 2}, {2}}, nil, false},
		{"exp", "exp", nil, []Shape{{5}}, nil, false},
		{"log", "log", nil, []Shape{{5}}, nil, true},
		{"rsqrt", "rsqrt", nil, []Shape{{5}}, nil, true},
		{"tanh", "tanh", nil, []Shape{{5}}, nil, false},
		{"erf", "erf", nil, []Shape{{5}}, nil, false},
		{"gelu tanh", "gelu", Attrs{"approximate": "tanh"}, []Shape{{5}}, nil, false},
		{"gelu", "gelu", nil, []Shape{{5}}, nil, false},
		{"silu", "silu", nil, []Shape{{5}}, nil, false},
		{"sigmoid", "sigmoid", nil, []Shape{{5}}, nil, false},
		{"erfc", "erfc", nil, []Shape{{5}}, nil, false},
		{"log1p", "log1p", nil, []Shape{{5}}, nil, true},
		{"logaddexp", "logaddexp", nil, []Shape{{3, 2}, {2}}, nil, false},
		{"atan2", "atan2", nil, []Shape{{3}, {3}}, nil, true},
		{"hypot", "hypot", nil, []Shape{{3}, {3}}, nil, true},
		{"matmul tb", "matmul", Attrs{"transpose_b": true}, []Shape{{2, 3}, {4, 3}}, nil, false},
		{"matmul ta", "matmul", Attrs{"transpose_a": true}, []Shape{{3, 2}, {3, 4}}, nil, false},
		{"batch_matmul broadcast", "batch_matmul", nil, []Shape{{2, 2, 3}, {3, 2}}, nil, false},
		{"sum", "sum", Attrs{"axis": []int64{0}}, []Shape{{3, 2}}, nil, false},
		{"mean keepdims", "mean", Attrs{"axis": []int64{1}, "keepdims": true}, []Shape{{3, 2}}, nil, false},
		{"max", "max", Attrs{"axis": []int64{1}}, []Shape{{3, 4}}, nil, false},
		{"softmax", "softmax", nil, []Shape{{2, 4}}, nil, false},
		{"log_softmax", "log_softmax", Attrs{"axis": int64(0)}, []Shape{{3, 2}}, nil, false},
		{"layer_norm", "layer_norm", nil, []Shape{{2, 4}, {4}, {4}}, nil, false},
		{"rms_norm", "rms_norm", nil, []Shape{{2, 4}, {4}}, nil, false},
		{"var", "var", Attrs{"axis": []int64{1}}, []Shape{{2, 4}}, nil, false},
		{"transpose", "transpose", Attrs{"perm": []int64{1, 0, 2}}, []Shape{{2, 3, 2}}, nil, false},
		{"slice step", "slice", Attrs{"starts": []int64{4, 1}, "stops": []int64{-1, 3}, "steps": []int64{-2, 1}}, []Shape{{5, 3}}, nil, false},
		{"slice step 2", "slice", Attrs{"starts": []int64{1}, "stops": []int64{6}, "steps": []int64{2}}, []Shape{{7}}, nil, false},
		{"concat", "concat", Attrs{"axis": int64(1)}, []Shape{{2, 1}, {2, 3}}, nil, false},
		{"pad", "pad", Attrs{"pads": []int64{1, 0, 0, 2}}, []Shape{{2, 2}}, nil, false},
		{"stack", "stack", Attrs{"axis": int64(1)}, []Shape{{2}, {2}}, nil, false},
		{"cumsum", "cumsum", Attrs{"axis": int64(0)}, []Shape{{4, 2}}, nil, false},
		{"index_select", "index_select", Attrs{"axis": int64(1)}, []Shape{{2, 4}, {3}}, map[int][]float64{1: {3, -4, 3}}, false},
		{"slice_update", "slice_update", Attrs{"axes": []int64{2, 0}}, []Shape{{3, 2, 5}, {2, 2, 2}, {}, {}}, map[int][]float64{2: {3}, 3: {1}}, false},
		{"take_along_axis", "take_along_axis", Attrs{"axis": int64(1)}, []Shape{{2, 4}, {2, 2}}, map[int][]float64{1: {0, 3, -1, 0}}, false},
		// duplicates: (1, 0) is written twice (the later value wins), -2 counts from the end
		{"index_put", "index_put", nil, []Shape{{3, 2, 2}, {4, 2}, {4}, {4}}, map[int][]float64{2: {1, 0, 1, -2}, 3: {0, 1, 0, 1}}, false},
		{"index_put accumulate", "index_put", Attrs{"accumulate": true}, []Shape{{3, 2}, {3, 2}, {3}}, map[int][]float64{2: {2, 0, 2}}, false},
		// src larger than index; (0, 1) is written twice
		{"scatter", "scatter", Attrs{"dim": int64(0)}, []Shape{{3, 4}, {2, 3}, {3, 3}}, map[int][]float64{1: {0, 2, 1, 0, 0, 2}}, false},
		{"scatter add", "scatter", Attrs{"dim": int64(1), "reduce": "add"}, []Shape{{2, 4}, {2, 3}, {2, 3}}, map[int][]float64{1: {3, 3, 0, 1, 2, 1}}, false},
		{"where", "where", nil, []Shape{{3}, {3}, {1}}, map[int][]float64{0: {1, 0, 1}}, false},
		{"sort", "sort", nil, []Shape{{2, 3}}, nil, false},
		{"clip", "clip", nil, []Shape{{5}, {}, {}}, map[int][]float64{}, false},
		{"neg", "neg", nil, []Shape{{4}}, nil, false},
		{"abs", "abs", nil, []Shape{{4}}, nil, true},
		{"relu", "relu", nil, []Shape{{4}}, nil, true},
		{"sqrt", "sqrt", nil, []Shape{{4}}, nil, true},
		{"reciprocal", "reciprocal", nil, []Shape{{4}}, nil, true},
		{"sin", "sin", nil, []Shape{{4}}, nil, false},
		{"cos", "cos", nil, []Shape{{4}}, nil, false},
		{"exp2", "exp2", nil, []Shape{{4}}, nil, false},
		{"expm1", "expm1", nil, []Shape{{4}}, nil, false},
		{"log2", "log2", nil, []Shape{{4}}, nil, true},
		{"log10", "log10", nil, []Shape{{4}}, nil, true},
		{"minimum", "minimum", nil, []Shape{{2, 3}, {3}}, nil, false},
		{"mod", "mod", nil, []Shape{{4}, {4}}, nil, true},
		{"min", "min", nil, []Shape{{2, 3}}, nil, false},
		{"std", "std", Attrs{"axis": []int64{0}, "ddof": 1.0}, []Shape{{3, 2}}, nil, false},
		{"reshape", "reshape", Attrs{"shape": []int64{3, 2}}, []Shape{{2, 3}}, nil, false},
		{"broadcast_to", "broadcast_to", Attrs{"shape": []int64{2, 3}}, []Shape{{1, 3}}, nil, false},
		{"squeeze", "squeeze", Attrs{"axis": []int64{1}}, []Shape{{2, 1, 2}}, nil, false},
		{"unsqueeze", "unsqueeze", Attrs{"axis": []int64{0}}, []Shape{{3}}, nil, false},
		{"linear", "linear", nil, []Shape{{2, 3}, {4, 3}, {4}}, nil, false},
		{"cast", "cast", Attrs{"dtype": "float32"}, []Shape{{3}}, nil, false},
		{"topk_values", "topk_values", Attrs{"k": int64(2)}, []Shape{{2, 4}}, nil, false},
		{"scaled_dot_product_attention", "scaled_dot_product_attention", Attrs{"is_causal": true}, []Shape{{3, 2}, {3, 2}, {3, 2}}, nil, false},
		{"conv2d", "conv2d", Attrs{"stride": []int64{2, 1}, "pads": []int64{1, 0, 1, 1}}, []Shape{{1, 2, 4, 3}, {2, 2, 2, 2}, {2}}, nil, false},
		{"batch_norm", "batch_norm", Attrs{"eps": 0.1}, []Shape{{2, 3, 2, 2}, {3}, {3}, {3}, {3}}, nil, true},
		{"max_pool2d", "max_pool2d", Attrs{"kernel": []int64{2, 2}, "stride": []int64{1, 1}}, []Shape{{1, 1, 3, 3}}, nil, false},
		{"avg_pool2d", "avg_pool2d", Attrs{"kernel": []int64{2, 2}, "stride": []int64{2, 1}, "pads": []int64{1, 0, 0, 0}}, []Shape{{1, 2, 3, 3}}, nil, false},
	}
	tested := map[string]bool{}
	for _, tc := range cases {
		tested[tc.op] = true
	}
	for _, name := range OpNames() {
		if ok, _ := Differentiable(name); ok && !tested[name] {
			t.Errorf("differentiable op %s has no finite-difference case here", name)
		}
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkGradient(t, rand.New(rand.NewSource(int64(i))), tc)
		})
	}
}

func checkGradient(t *testing.T, rng *rand.Rand, tc gradCase) {
	t.Helper()
	b := NewBuilder("f")
	var params []Value
	var args []*Array
	for k, s := range tc.shapes {
		typ := TensorType{DType: dtype.Float32, Shape: s}
		vals, isInt := tc.ints[k]
		if isInt {
			typ.DType = dtype.Int32
			if tc.op == "where" {
				typ.DType = dtype.Bool
			}
		}
		a := NewArray(typ)
		for i := range a.Data {
			switch {
			case isInt:
				a.Data[i] = vals[i]
			case tc.pos:
				a.Data[i] = dtype.Round(dtype.Float32, 0.5+rng.Float64())
			default:
				a.Data[i] = dtype.Round(dtype.Float32, 2*rng.Float64()-1)
			}
		}
		if tc.op == "clip" { // bounds -0.5 and 0.5, x away from them (a difference across a kink is not a derivative)
			if k > 0 {
				a.Data[0] = []float64{-0.5, 0.5}[k-1]
			} else {
				copy(a.Data, []float64{-0.875, -0.25, 0.125, 0.375, 0.75})
			}
		}
		params = append(params, b.Param(fmt.Sprintf("x%d", k), typ))
		args = append(args, a)
	}
	y, err := b.Op(tc.op, params, tc.attrs, Location{})
	if err != nil {
		t.Fatal(err)
	}
	yt := b.Type(y)
	w := NewArray(TensorType{DType: dtype.Float32, Shape: yt.Shape})
	for i := range w.Data {
		w.Data[i] = dtype.Round(dtype.Float32, 2*rng.Float64()-1)
	}
	wv := b.Param("w", w.Type)
	loss, _ := b.Op("sum", []Value{must(b.Op("mul", []Value{y, wv}, nil, Location{}))}, nil, Location{})
	seed, _ := b.Op("full", nil, Attrs{"value": 1.0, "dtype": "float32", "shape": []int64{}}, Location{})
	grads, gerr := Gradients(b, loss, seed, params)
	if gerr != nil {
		t.Fatal(gerr)
	}
	b.Output(loss)
	for _, g := range grads {
		if g >= 0 {
			b.Output(g)
		}
	}
	g := b.Graph()
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
	outs, err := Interpret(g, append(args, w))
	if err != nil {
		t.Fatal(err)
	}
	lossAt := func(in []*Array) float64 {
		o, err := Interpret(g, append(in, w))
		if err != nil {
			t.Fatal(err)
		}
		return o[0].Data[0]
	}
	next := 1
	for k, gv := range grads {
		if _, isInt := tc.ints[k]; isInt || (tc.op == "clip" && k > 0) {
			if tc.op == "clip" && gv >= 0 {
				next++
			}
			continue
		}
		if gv < 0 {
			t.Fatalf("input %d got no gradient", k)
		}
		got := outs[next]
		next++
		const h = 1e-2
		for i := range args[k].Data {
			orig := args[k].Data[i]
			args[k].Data[i] = orig + h
			up := lossAt(args)
			args[k].Data[i] = orig - h
			down := lossAt(args)
			args[k].Data[i] = orig
			fd := (up - down) / (2 * h)
			if math.Abs(fd-got.Data[i]) > 2e-2*(1+math.Abs(fd)) {
				t.Errorf("input %d element %d: gradient %g, finite difference %g", k, i, got.Data[i], fd)
			}
		}
	}
}

func must(v Value, err error) Value {
	if err != nil {
		panic(err)
	}
	return v
}
