package core

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseTypes(t testing.TB, texts ...string) []TensorType {
	t.Helper()
	out := make([]TensorType, len(texts))
	for i, s := range texts {
		typ, err := ParseTensorType(s)
		require.NoError(t, err, s)
		out[i] = typ
	}
	return out
}

func dimList(t testing.TB, s string) []Dim {
	t.Helper()
	d, err := ParseDims(s)
	require.NoError(t, err)
	return d
}

// symCases apply ops to symbolic inputs; want is the inferred type's text and cons the
// constraints recorded (sorted texts, "" for none).
var symCases = []struct {
	op    string
	attrs func(t testing.TB) Attrs
	in    []string
	want  string
	cons  string
}{
	{"add", nil, []string{"f16[b,s]", "f16[s]"}, "f16[b,s]", ""},
	{"add", nil, []string{"f16[b,1]", "f16[1,s]"}, "f16[b,s]", ""},
	{"mul", nil, []string{"f32[b,s]", "f32[b,7]"}, "f32[b,7]", "s == 7"},
	{"sub", nil, []string{"f32[b,s]", "f32[c,s]"}, "f32[b,s]", "c == b"},
	{"where", nil, []string{"bool[b,1]", "f32[b,s]", "f16[]"}, "f32[b,s]", ""},
	{"clip", nil, []string{"f16[b,s]", "f16[]", "f16[s]"}, "f16[b,s]", ""},
	{"exp", nil, []string{"i8[b,3]"}, "f16[b,3]", ""},
	{"cast", func(testing.TB) Attrs { return Attrs{"dtype": "int32"} }, []string{"f16[b,s]"}, "i32[b,s]", ""},
	{"equal", nil, []string{"f16[b]", "f16[b]"}, "bool[b]", ""},
	{"gelu", nil, []string{"bf16[b,s]"}, "bf16[b,s]", ""},
	{"softmax", func(testing.TB) Attrs { return Attrs{"axis": int64(1)} }, []string{"f16[b,s]"}, "f16[b,s]", ""},
	{"cumsum", nil, []string{"i8[b,s]"}, "i32[b,s]", ""},
	{"argsort", nil, []string{"f32[s]"}, "i64[s]", ""},
	{"layer_norm", nil, []string{"f16[b,s,h]", "f16[h]", "f16[64]"}, "f16[b,s,h]", "h == 64"},
	{"rms_norm", nil, []string{"f32[b,s]", "f32[1,s]"}, "f32[b,s]", ""},
	{"sum", func(testing.TB) Attrs { return Attrs{"axis": []int64{1}} }, []string{"f16[b,s,4]"}, "f16[b,4]", ""},
	{"mean", func(testing.TB) Attrs { return Attrs{"axis": []int64{0}, "keepdims": true} }, []string{"i32[b,s]"}, "f32[1,s]", ""},
	{"max", func(testing.TB) Attrs { return Attrs{"axis": []int64{-1}} }, []string{"f16[b,s]"}, "f16[b]", "s >= 1"},
	{"var", nil, []string{"f32[b,s]"}, "f32[]", ""},
	{"prod", nil, []string{"i8[b,s]"}, "i32[]", ""},
	{"std", func(testing.TB) Attrs { return Attrs{"axis": []int64{1}, "ddof": 1.0} }, []string{"f16[b,s]"}, "f16[b]", ""},
	{"min", func(testing.TB) Attrs { return Attrs{"axis": []int64{0, 1}} }, []string{"f32[b,3]"}, "f32[]", "b >= 1"},
	{"argmin", func(testing.TB) Attrs { return Attrs{"keepdims": true} }, []string{"f16[b,s]"}, "i64[b,1]", "s >= 1"},
	{"log_softmax", nil, []string{"f32[b,s]"}, "f32[b,s]", ""},
	{"argmax", func(testing.TB) Attrs { return Attrs{"axis": int64(0)} }, []string{"f16[b,s]"}, "i64[s]", "b >= 1"},
	{"matmul", nil, []string{"f16[m,k]", "f16[k,n]"}, "f16[m,n]", ""},
	{"matmul", func(testing.TB) Attrs { return Attrs{"transpose_b": true} }, []string{"f16[m,k]", "f16[64,32]"}, "f16[m,64]", "k == 32"},
	{"batch_matmul", nil, []string{"f16[b,s,64]", "f16[64,n]"}, "f16[b,s,n]", ""},
	{"batch_matmul", func(testing.TB) Attrs { return Attrs{"transpose_b": true} }, []string{"f16[b,s,h]", "f16[b,s,h]"}, "f16[b,s,s]", ""},
	{"scaled_dot_product_attention", nil, []string{"f16[b,h,s,64]", "f16[b,h,t,64]", "f16[b,h,t,32]"}, "f16[b,h,s,32]", ""},
	{"scaled_dot_product_attention", nil, []string{"f16[h,s,e]", "f16[1,t,e]", "f16[h,t,e]", "bool[s,t]"}, "f16[h,s,e]", ""},
	{"linear", nil, []string{"f16[b,s,h]", "f16[32,64]", "f16[32]"}, "f16[b,s,32]", "h == 64"},
	{"reshape", func(t testing.TB) Attrs { return Attrs{"shape": dimList(t, "b*s,64")} }, []string{"f16[b,s,64]"}, "f16[b*s,64]", ""},
	{"reshape", func(t testing.TB) Attrs { return Attrs{"shape": dimList(t, "b,s,4,-1")} }, []string{"f16[b,s,64]"}, "f16[b,s,4,16]", "4*b*s != 0"},
	{"reshape", func(testing.TB) Attrs { return Attrs{"shape": []int64{-1, 3}} }, []string{"f16[b,s]"}, "f16[b*s//3,3]", "3*(b*s//3) == b*s"},
	{"reshape", func(t testing.TB) Attrs { return Attrs{"shape": dimList(t, "n,-1")} }, []string{"f16[12]"}, "f16[n,12//n]", "n != 0 | (12//n)*n == 12"},
	{"transpose", func(testing.TB) Attrs { return Attrs{"perm": []int64{2, 0, 1}} }, []string{"f16[b,s,4]"}, "f16[4,b,s]", ""},
	{"broadcast_to", func(t testing.TB) Attrs { return Attrs{"shape": dimList(t, "b,s,4")} }, []string{"f16[s,1]"}, "f16[b,s,4]", ""},
	{"broadcast_to", func(t testing.TB) Attrs { return Attrs{"shape": dimList(t, "b,4")} }, []string{"f16[n]"}, "f16[b,4]", "n == 4"},
	{"squeeze", func(testing.TB) Attrs { return Attrs{"axis": []int64{0}} }, []string{"f16[b,s]"}, "f16[s]", "b == 1"},
	{"squeeze", nil, []string{"f16[1,s,1]"}, "f16[s]", "s != 1"},
	{"unsqueeze", func(testing.TB) Attrs { return Attrs{"axis": []int64{0, -1}} }, []string{"f16[b,s]"}, "f16[1,b,s,1]", ""},
	{"full", func(t testing.TB) Attrs { return Attrs{"shape": dimList(t, "b,2*s"), "dtype": "int8"} }, nil, "i8[b,2*s]", ""},
	{"iota", func(t testing.TB) Attrs { return Attrs{"shape": dimList(t, "b,s"), "axis": int64(1)} }, nil, "i32[b,s]", ""},
	{"random_uniform", func(t testing.TB) Attrs { return Attrs{"shape": dimList(t, "b,s"), "seed": int64(7)} }, nil, "f32[b,s]", ""},
	{"slice", func(t testing.TB) Attrs {
		return Attrs{"starts": dimList(t, "0,1"), "stops": dimList(t, "b,s-1"), "steps": []int64{1, 2}}
	}, []string{"f16[b,s]"}, "f16[b,(s+1)//2-1]", "s >= 2"},
	{"slice", func(t testing.TB) Attrs {
		return Attrs{"starts": dimList(t, "s-1"), "stops": dimList(t, "s"), "steps": []int64{1}}
	}, []string{"f32[s]"}, "f32[1]", "s >= 1"},
	{"conv2d", func(testing.TB) Attrs {
		return Attrs{"stride": []int64{2, 1}, "pads": []int64{1, 1, 0, 0}, "dilation": []int64{1, 1}, "groups": int64(2)}
	}, []string{"f32[b,4,h,w]", "f32[6,2,3,3]"}, "*", "h >= 1 | w >= 3"},
	{"batch_norm", nil, []string{"f16[b,c,h,w]", "f16[c]", "f16[c]"}, "f16[b,c,h,w]", ""},
	{"max_pool2d", func(testing.TB) Attrs {
		return Attrs{"kernel": []int64{2, 2}, "stride": []int64{2, 2}, "pads": []int64{0, 0, 0, 0}, "dilation": []int64{1, 1}}
	}, []string{"f16[b,c,h,w]"}, "*", "h >= 2 | w >= 2"},
	{"avg_pool2d", func(testing.TB) Attrs {
		return Attrs{"kernel": []int64{3, 3}, "stride": []int64{1, 1}, "pads": []int64{1, 1, 1, 1}, "dilation": []int64{1, 1}}
	}, []string{"f32[b,c,h,w]"}, "f32[b,c,h,w]", "h >= 1 | w >= 1"},
	{"concat", func(testing.TB) Attrs { return Attrs{"axis": int64(1)} }, []string{"f16[b,s]", "f16[b,3]", "f32[b,t]"}, "f32[b,s+t+3]", ""},
	{"concat", nil, []string{"f16[b,s]", "f16[c,s]"}, "f16[b+c,s]", ""},
	{"concat", nil, []string{"f16[b,s]", "f16[c,t]"}, "f16[b+c,s]", "t == s"},
	{"stack", func(testing.TB) Attrs { return Attrs{"axis": int64(1)} }, []string{"f16[b,s]", "f16[b,s]"}, "f16[b,2,s]", ""},
	{"pad", func(testing.TB) Attrs { return Attrs{"pads": []int64{1, 2, 0, 0}} }, []string{"f16[b,s]"}, "f16[b+3,s]", ""},
	{"take_along_axis", func(testing.TB) Attrs { return Attrs{"axis": int64(1)} }, []string{"f16[b,s]", "i32[1,k]"}, "f16[b,k]", ""},
	{"index_select", func(testing.TB) Attrs { return Attrs{"axis": int64(1)} }, []string{"f16[b,s,4]", "i32[k]"}, "f16[b,k,4]", ""},
	{"slice_update", func(testing.TB) Attrs { return Attrs{"axes": []int64{1}} }, []string{"f16[b,t,d]", "f16[b,1,d]", "i32[]"}, "f16[b,t,d]", "t >= 1"},
	{"slice_update", func(testing.TB) Attrs { return Attrs{"axes": []int64{0, 1}} }, []string{"f32[n,m]", "f32[k,3]", "i32[]", "i8[]"}, "f32[n,m]", "n >= k | m >= 3"},
	{"index_put", nil, []string{"f32[n,d]", "f32[k,d]", "i32[k]"}, "f32[n,d]", ""},
	{"index_put", func(testing.TB) Attrs { return Attrs{"accumulate": true} }, []string{"f16[n,m,4]", "f16[j,4]", "i32[k]", "i32[j]"}, "f16[n,m,4]", "j == k"},
	{"scatter", func(testing.TB) Attrs { return Attrs{"dim": int64(1)} }, []string{"f32[b,n]", "i32[b,k]", "f32[b,s]"}, "f32[b,n]", "s >= k"},
	{"scatter", func(testing.TB) Attrs { return Attrs{"dim": int64(0), "reduce": "add"} }, []string{"f32[n,d]", "i32[k,e]", "f32[k,e]"}, "f32[n,d]", "d >= e"},
	{"topk_values", func(testing.TB) Attrs { return Attrs{"k": int64(3)} }, []string{"f16[b,s]"}, "f16[b,3]", "s >= 3"},
	{"topk_indices", func(testing.TB) Attrs { return Attrs{"k": int64(2), "axis": int64(0)} }, []string{"f32[b,s]"}, "i64[2,s]", "b >= 2"},
	{"sort", nil, []string{"i8[b,s]"}, "i8[b,s]", ""},
	{"layout_transform", func(testing.TB) Attrs { return Attrs{"layout": "NHWC"} }, []string{"f16[n,3,h,w]@NCHW"}, "f16[n,h,w,3]@NHWC", ""},
	{"layout_transform", func(testing.TB) Attrs { return Attrs{"layout": "NCHW"} }, []string{"f16[n,c,h,w]"}, "f16[n,c,h,w]@NCHW", ""},
	{"add", nil, []string{"f16[n,c,h,w]@NCHW", "f16[c,1,1]"}, "f16[n,c,h,w]@NCHW", ""},
}

// Each symbolic rule is sound: for every binding that satisfies the constraints it
// records, the op's concrete inference accepts the substituted inputs and gives the
// substituted symbolic type.
func TestSymbolicInferenceIsSound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	covered := map[string]bool{}
	cases := symCases
	for _, op := range elementwiseOps { // the rest of the broadcast family, generically
		def, _ := LookupOp(op)
		in := []string{"f32[b,s]", "f32[s]", "f32[1,1]"}[:def.Arity]
		if op == "where" || op == "clip" || op == "cast" {
			continue // cases above
		}
		cases = append(cases, symCases[0])
		cases[len(cases)-1].op, cases[len(cases)-1].in = op, in
		cases[len(cases)-1].want = "*"
	}
	for _, c := range cases {
		covered[c.op] = true
		t.Run(c.op, func(t *testing.T) {
			var attrs Attrs
			if c.attrs != nil {
				attrs = c.attrs(t)
			}
			in := parseTypes(t, c.in...)
			got, full, cons, err := InferOpConstraints(c.op, in, attrs)
			require.Nil(t, err, "%v", err)
			if c.want != "*" {
				assert.Equal(t, c.want, got.String())
			}
			texts := make([]string, len(cons))
			for i, k := range cons {
				texts[i] = k.String()
			}
			assert.Equal(t, c.cons, strings.Join(texts, " | "))
			syms := map[string]bool{}
			for _, typ := range append(in, got) {
				for _, s := range typ.Symbols() {
					syms[s] = true
				}
			}
			for _, v := range full {
				if dims, ok := v.([]Dim); ok {
					for _, d := range dims {
						d.collectSymbols(syms)
					}
				}
			}
			checked := 0
			for trial := 0; trial < 300 && checked < 40; trial++ {
				b := Binding{}
				for s := range syms {
					b[s] = r.IntN(9)
					if trial%3 == 0 {
						b[s] = []int{1, 3, 7, 32, 64}[r.IntN(5)]
					}
				}
				if CheckConstraints(cons, b) != nil {
					continue
				}
				concrete := make([]TensorType, len(in))
				for i, typ := range in {
					concrete[i] = typ.Substitute(b)
				}
				want, _, err := InferOp(c.op, concrete, substituteAttrs(full, b))
				if strings.Contains(c.op, "max") || c.op == "argmax" {
					require.Nil(t, err, "binding %s: %v", b.Key(), err)
				}
				if err != nil {
					// Only data the symbolic rule cannot see may fail (e.g. a concrete
					// Infer refusing an empty axis): never a shape the rule accepted.
					require.NotEqual(t, ShapeError, err.Kind, "binding %s: %v", b.Key(), err)
					continue
				}
				assert.Equal(t, got.Substitute(b).String(), want.String(), "binding %s", b.Key())
				checked++
			}
			assert.Positive(t, checked, "no binding satisfied the constraints")
		})
	}
	for _, name := range OpNames() {
		if HasSymbolicRule(name) {
			assert.True(t, covered[name], "op %s has a symbolic rule but no case here", name)
		}
	}
}

// Every registered op can take symbolic shapes (test-only ops aside).
func TestEveryOpHasASymbolicRule(t *testing.T) {
	for _, name := range OpNames() {
		if strings.Contains(name, "test") || strings.Contains(name, "probe") || concreteOnly[name] {
			continue
		}
		assert.True(t, HasSymbolicRule(name), "op %s has no symbolic shape rule (core/sym_rules_*.go)", name)
	}
}

// Mismatches that are certain when tracing are errors then, naming both shapes.
func TestSymbolicInferenceReportsCertainMismatches(t *testing.T) {
	for _, c := range []struct {
		op    string
		attrs Attrs
		in    []string
		kind  ErrorKind
		msg   string
	}{
		{"add", nil, []string{"f16[b,3]", "f16[b,4]"}, ShapeError, "add: shapes [b,3] and [b,4] cannot be broadcast together"},
		{"add", nil, []string{"f16[b,s]", "f16[b,s+1]"}, ShapeError, "add: shapes [b,s] and [b,s+1] cannot be broadcast together"},
		{"matmul", nil, []string{"f16[b,1024]", "f16[512,64]"}, ShapeError, "matmul: inner dimensions do not match: a has shape [b,1024] (k=1024), b has shape [512,64] (k=512)"},
		{"linear", nil, []string{"f16[b,s,64]", "f16[64,32]"}, ShapeError, "linear: x has 64 input features (shape [b,s,64]), weight of shape [64,32] expects 32"},
		{"reshape", Attrs{"shape": []int64{5, 7}}, []string{"f16[6,b]"}, ShapeError, ""},
		{"concat", Attrs{"axis": int64(0)}, []string{"f16[b,3]", "f16[b,4]"}, ShapeError, "they differ on axis 1"},
		{"topk_values", Attrs{"k": int64(5)}, []string{"f16[b,4]"}, ValueError, "topk: k=5 is out of range for axis 1 of size 4"},
		{"squeeze", Attrs{"axis": []int64{1}}, []string{"f16[b,3]"}, ShapeError, "axis 1 of shape [b,3] has size 3, not 1"},
		{"sum", Attrs{"axis": []int64{2}}, []string{"f16[b,3]"}, ValueError, "axis 2 is out of range"},
		{"add", nil, []string{"bool[b]", "bool[b]"}, DTypeError, "add: not defined for bool tensors"},
		{"slice", Attrs{"starts": []int64{0}, "stops": []int64{1}, "steps": []int64{-1}}, []string{"f16[s]"}, ShapeError, "step must be positive"},
		{"layout_transform", Attrs{"layout": "NZ"}, []string{"f16[b,64]"}, ShapeError, "NZ needs a concrete shape"},
		{"layout_transform", Attrs{"layout": "NCHW"}, []string{"f16[b,64]"}, ShapeError, "layout NCHW needs a 4-D tensor"},
	} {
		_, _, err := InferOp(c.op, parseTypes(t, c.in...), c.attrs)
		require.NotNil(t, err, "%s %v", c.op, c.in)
		assert.Equal(t, c.kind, err.Kind, "%s: %s", c.op, err.Message)
		assert.Contains(t, err.Message, c.msg)
	}
}

func TestSymbolicAttributesAreNormalised(t *testing.T) {
	// A []Dim whose dims are all constant becomes []int64, so concrete graphs never
	// hold []Dim.
	in := parseTypes(t, "f16[2,6]")
	_, full, err := InferOp("reshape", in, Attrs{"shape": dimList(t, "3,4")})
	require.Nil(t, err)
	assert.Equal(t, []int64{3, 4}, full["shape"])
	typ, full, err := InferOp("reshape", parseTypes(t, "f16[b,6]"), Attrs{"shape": dimList(t, "b*2,3")})
	require.Nil(t, err)
	assert.Equal(t, "f16[2*b,3]", typ.String())
	assert.Equal(t, "[2*b,3]", formatAttr(full["shape"]))
}
