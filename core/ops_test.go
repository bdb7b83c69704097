package core

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// run applies one op to concrete inputs through the builder and the interpreter.
func run(t *testing.T, op string, attrs Attrs, in ...*Array) *Array {
	t.Helper()
	b := NewBuilder("t")
	vs := make([]Value, len(in))
	for i, a := range in {
		vs[i] = b.Param(string(rune('a'+i)), a.Type)
	}
	v, err := b.Op(op, vs, attrs, Location{})
	require.NoError(t, err)
	b.Output(v)
	out, err := Interpret(b.Graph(), in)
	require.NoError(t, err)
	return out[0]
}

const (
	tF32, h16, bf16     = dtype.Float32, dtype.Float16, dtype.BFloat16
	i8, i32, i64, boolT = dtype.Int8, dtype.Int32, dtype.Int64, dtype.Bool
)

func TestOpValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	x23 := arr(tF32, Shape{2, 3}, 1, -2, 3, -4, 5, -6)
	cases := []struct {
		name  string
		op    string
		attrs Attrs
		in    []*Array
		want  *Array
	}{
		{"sub broadcasts", "sub", nil, []*Array{x23, arr(tF32, Shape{3}, 1, 1, 1)}, arr(tF32, Shape{2, 3}, 0, -3, 2, -5, 4, -7)},
		{"div of ints is float32", "div", nil, []*Array{arr(i32, Shape{3}, 7, -7, 1), arr(i32, Shape{3}, 2, 2, 0)}, arr(tF32, Shape{3}, 3.5, -3.5, inf)},
		{"floor_divide ints", "floor_divide", nil, []*Array{arr(i32, Shape{4}, 7, -7, 7, 5), arr(i32, Shape{4}, 2, 2, -2, 0)}, arr(i32, Shape{4}, 3, -4, -4, 0)},
		{"mod takes the divisor's sign", "mod", nil, []*Array{arr(tF32, Shape{3}, 7, -7, 7), arr(tF32, Shape{3}, 3, 3, -3)}, arr(tF32, Shape{3}, 1, 2, -2)},
		{"mod ints by zero", "mod", nil, []*Array{arr(i8, Shape{2}, -7, 5), arr(i8, Shape{2}, 3, 0)}, arr(i8, Shape{2}, 2, 0)},
		{"pow", "pow", nil, []*Array{arr(tF32, Shape{3}, 2, 4, -8), arr(tF32, Shape{3}, 3, 0.5, 2)}, arr(tF32, Shape{3}, 8, 2, 64)},
		{"int pow wraps and negative powers", "pow", nil, []*Array{arr(i8, Shape{3}, 2, 2, -1), arr(i8, Shape{3}, 7, -1, -3)}, arr(i8, Shape{3}, -128, 0, -1)},
		{"int32 product is exact before wrapping", "mul", nil, []*Array{arr(i32, Shape{1}, 2147483647), arr(i32, Shape{1}, 3)}, arr(i32, Shape{1}, 2147483645)},
		{"maximum propagates NaN", "maximum", nil, []*Array{arr(tF32, Shape{3}, 1, nan, 3), arr(tF32, Shape{3}, 2, 0, nan)}, arr(tF32, Shape{3}, 2, nan, nan)},
		{"minimum of bools", "minimum", nil, []*Array{arr(boolT, Shape{2}, 1, 1), arr(boolT, Shape{2}, 0, 1)}, arr(boolT, Shape{2}, 0, 1)},
		{"less with NaN", "less", nil, []*Array{arr(tF32, Shape{3}, 1, nan, 3), arr(tF32, Shape{1}, 2)}, arr(boolT, Shape{3}, 1, 0, 0)},
		{"not_equal with NaN", "not_equal", nil, []*Array{arr(tF32, Shape{2}, nan, 1), arr(tF32, Shape{2}, nan, 1)}, arr(boolT, Shape{2}, 1, 0)},
		{"logical_xor", "logical_xor", nil, []*Array{arr(tF32, Shape{3}, 0, 2, nan), arr(i32, Shape{3}, 1, 5, 0)}, arr(boolT, Shape{3}, 1, 0, 1)},
		{"where promotes", "where", nil, []*Array{arr(boolT, Shape{2, 1}, 1, 0), arr(h16, Shape{2}, 1, 2), arr(tF32, Shape{}, 9)}, arr(tF32, Shape{2, 2}, 1, 2, 9, 9)},
		{"exp of int8 is float16", "exp", nil, []*Array{arr(i8, Shape{2}, 0, 1)}, arr(h16, Shape{2}, 1, math.E)},
		{"sqrt of negative is NaN", "sqrt", nil, []*Array{arr(tF32, Shape{2}, 4, -1)}, arr(tF32, Shape{2}, 2, nan)},
		{"rsqrt of 0 is inf", "rsqrt", nil, []*Array{arr(tF32, Shape{2}, 0, 4)}, arr(tF32, Shape{2}, inf, 0.5)},
		{"abs of int8 min wraps", "abs", nil, []*Array{arr(i8, Shape{2}, -128, -3)}, arr(i8, Shape{2}, -128, 3)},
		{"round halves to even", "round", nil, []*Array{arr(tF32, Shape{4}, 0.5, 1.5, 2.5, -0.5)}, arr(tF32, Shape{4}, 0, 2, 2, 0)},
		{"isnan isfinite", "isfinite", nil, []*Array{arr(tF32, Shape{3}, nan, inf, 1)}, arr(boolT, Shape{3}, 0, 0, 1)},
		{"cast f32 to i8 truncates and wraps", "cast", Attrs{"dtype": "int8"}, []*Array{arr(tF32, Shape{4}, 2.7, -2.7, 200, nan)}, arr(i8, Shape{4}, 2, -2, -56, 0)},
		{"cast to bool", "cast", Attrs{"dtype": "bool"}, []*Array{arr(tF32, Shape{3}, 0, -0.5, nan)}, arr(boolT, Shape{3}, 0, 1, 1)},
		{"cast rounds to nearest even", "cast", Attrs{"dtype": "f16"}, []*Array{arr(tF32, Shape{2}, 2049, 2051)}, arr(h16, Shape{2}, 2048, 2052)},
		{"full", "full", Attrs{"value": 1.5, "dtype": "bfloat16", "shape": []int64{2}}, nil, arr(bf16, Shape{2}, 1.5, 1.5)},
		{"sum over axis 0", "sum", Attrs{"axis": []int64{0}}, []*Array{x23}, arr(tF32, Shape{3}, -3, 3, -3)},
		{"sum all with keepdims", "sum", Attrs{"keepdims": true}, []*Array{x23}, arr(tF32, Shape{1, 1}, -3)},
		{"sum of bools is int32", "sum", nil, []*Array{arr(boolT, Shape{3}, 1, 1, 0)}, arr(i32, Shape{}, 2)},
		{"sum of empty is 0", "sum", Attrs{"axis": []int64{1}}, []*Array{arr(tF32, Shape{2, 0})}, arr(tF32, Shape{2}, 0, 0)},
		{"prod negative axis", "prod", Attrs{"axis": []int64{-1}}, []*Array{x23}, arr(tF32, Shape{2}, -6, 120)},
		{"max propagates NaN", "max", Attrs{"axis": []int64{1}}, []*Array{arr(tF32, Shape{2, 2}, 1, nan, 3, 2)}, arr(tF32, Shape{2}, nan, 3)},
		{"min of int8", "min", nil, []*Array{arr(i8, Shape{3}, 5, -7, 2)}, arr(i8, Shape{}, -7)},
		{"argmax first of ties", "argmax", Attrs{"axis": int64(1)}, []*Array{arr(tF32, Shape{2, 3}, 1, 3, 3, 0, nan, nan)}, arr(i64, Shape{2}, 1, 1)},
		{"argmin keepdims", "argmin", Attrs{"axis": int64(0), "keepdims": true}, []*Array{x23}, arr(i64, Shape{1, 3}, 1, 0, 1)},
		{"mean of ints is float32", "mean", nil, []*Array{arr(i32, Shape{4}, 1, 2, 3, 5)}, arr(tF32, Shape{}, 2.75)},
		{"var with ddof", "var", Attrs{"ddof": 1.0}, []*Array{arr(tF32, Shape{4}, 1, 2, 3, 4)}, arr(tF32, Shape{}, 5.0/3)},
		{"std", "std", Attrs{"axis": []int64{1}}, []*Array{arr(tF32, Shape{2, 2}, 1, 3, 5, 5)}, arr(tF32, Shape{2}, 1, 0)},
		{"reshape with -1", "reshape", Attrs{"shape": []int64{3, -1}}, []*Array{x23}, arr(tF32, Shape{3, 2}, 1, -2, 3, -4, 5, -6)},
		{"transpose", "transpose", nil, []*Array{x23}, arr(tF32, Shape{3, 2}, 1, -4, -2, 5, 3, -6)},
		{"transpose 3-d perm", "transpose", Attrs{"perm": []int64{1, 2, 0}}, []*Array{arr(tF32, Shape{2, 1, 2}, 1, 2, 3, 4)}, arr(tF32, Shape{1, 2, 2}, 1, 3, 2, 4)},
		{"broadcast_to", "broadcast_to", Attrs{"shape": []int64{2, 2}}, []*Array{arr(i32, Shape{2, 1}, 1, 2)}, arr(i32, Shape{2, 2}, 1, 1, 2, 2)},
		{"squeeze all", "squeeze", nil, []*Array{arr(tF32, Shape{1, 2, 1}, 1, 2)}, arr(tF32, Shape{2}, 1, 2)},
		{"unsqueeze", "unsqueeze", Attrs{"axis": []int64{0, -1}}, []*Array{arr(tF32, Shape{2}, 1, 2)}, arr(tF32, Shape{1, 2, 1}, 1, 2)},
		{"slice with negative step", "slice", Attrs{"starts": []int64{1, 2}, "stops": []int64{2, -1}, "steps": []int64{1, -2}}, []*Array{x23}, arr(tF32, Shape{1, 2}, -6, -4)},
		{"concat promotes", "concat", Attrs{"axis": int64(1)}, []*Array{arr(h16, Shape{2, 1}, 1, 2), arr(tF32, Shape{2, 2}, 3, 4, 5, 6)}, arr(tF32, Shape{2, 3}, 1, 3, 4, 2, 5, 6)},
		{"stack on a new last axis", "stack", Attrs{"axis": int64(-1)}, []*Array{arr(tF32, Shape{2}, 1, 2), arr(tF32, Shape{2}, 3, 4)}, arr(tF32, Shape{2, 2}, 1, 3, 2, 4)},
		{"pad", "pad", Attrs{"pads": []int64{1, 0, 0, 1}, "value": 9.0}, []*Array{arr(i8, Shape{1, 2}, 1, 2)}, arr(i8, Shape{2, 3}, 9, 9, 9, 1, 2, 9)},
		{"take_along_axis", "take_along_axis", Attrs{"axis": int64(1)}, []*Array{x23, arr(i32, Shape{2, 2}, 2, 0, -1, 1)}, arr(tF32, Shape{2, 2}, 3, 1, -6, 5)},
		{"index_select", "index_select", Attrs{"axis": int64(1)}, []*Array{x23, arr(i8, Shape{3}, 2, 2, -3)}, arr(tF32, Shape{2, 3}, 3, 3, 1, -6, -6, -4)},
		{"sort descending NaN first", "sort", Attrs{"descending": true}, []*Array{arr(tF32, Shape{4}, 1, nan, 3, 1)}, arr(tF32, Shape{4}, nan, 3, 1, 1)},
		{"argsort stable", "argsort", Attrs{"axis": int64(0)}, []*Array{arr(tF32, Shape{4}, 2, 1, 2, nan)}, arr(i64, Shape{4}, 1, 0, 2, 3)},
		{"topk values", "topk_values", Attrs{"k": int64(2)}, []*Array{x23}, arr(tF32, Shape{2, 2}, 3, 1, 5, -4)},
		{"topk smallest indices", "topk_indices", Attrs{"k": int64(1), "axis": int64(0), "largest": false}, []*Array{x23}, arr(i64, Shape{1, 3}, 1, 0, 1)},
		{"cumsum of int8 is int32", "cumsum", Attrs{"axis": int64(0)}, []*Array{arr(i8, Shape{3}, 100, 100, 100)}, arr(i32, Shape{3}, 100, 200, 300)},
		{"clip with NaN", "clip", nil, []*Array{arr(tF32, Shape{4}, -5, 0.5, 5, nan), arr(tF32, Shape{}, 0), arr(tF32, Shape{}, 1)}, arr(tF32, Shape{4}, 0, 0.5, 1, nan)},
		{"softmax", "softmax", nil, []*Array{arr(tF32, Shape{2}, 0, math.Log(3))}, arr(tF32, Shape{2}, 0.25, 0.75)},
		{"log_softmax of huge values", "log_softmax", nil, []*Array{arr(tF32, Shape{2}, 1e30, 1e30)}, arr(tF32, Shape{2}, -math.Ln2, -math.Ln2)},
		{"layer_norm", "layer_norm", Attrs{"eps": 0.0}, []*Array{arr(tF32, Shape{1, 2}, 1, 3), arr(tF32, Shape{2}, 2, 3), arr(tF32, Shape{2}, 1, 1)}, arr(tF32, Shape{1, 2}, -1, 4)},
		{"rms_norm", "rms_norm", Attrs{"eps": 0.0}, []*Array{arr(tF32, Shape{2}, 3, 4)}, arr(tF32, Shape{2}, 3/math.Sqrt(12.5), 4/math.Sqrt(12.5))},
		{"batch_matmul broadcasts", "batch_matmul", nil, []*Array{arr(tF32, Shape{2, 1, 2}, 1, 2, 3, 4), arr(tF32, Shape{2, 1}, 10, 1)}, arr(tF32, Shape{2, 1, 1}, 12, 34)},
		{"linear 3-d with bias", "linear", nil, []*Array{arr(tF32, Shape{1, 2, 2}, 1, 2, 3, 4), arr(tF32, Shape{1, 2}, 1, 1), arr(tF32, Shape{1}, 10)}, arr(tF32, Shape{1, 2, 1}, 13, 17)},
		{"sigmoid", "sigmoid", nil, []*Array{arr(tF32, Shape{3}, 0, -1000, 1000)}, arr(tF32, Shape{3}, 0.5, 0, 1)},
		{"gelu tanh", "gelu", Attrs{"approximate": "tanh"}, []*Array{arr(tF32, Shape{2}, 0, 100)}, arr(tF32, Shape{2}, 0, 100)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := run(t, c.op, c.attrs, c.in...)
			require.Equal(t, c.want.Type.String(), got.Type.String())
			for i := range c.want.Data {
				w, g := dtype.Round(c.want.Type.DType, c.want.Data[i]), got.Data[i]
				if isNaN(w) {
					assert.True(t, isNaN(g), "element %d: got %v, want NaN", i, g)
					continue
				}
				assert.InDelta(t, w, g, 1e-6*math.Max(1, math.Abs(w)), "element %d", i)
			}
		})
	}
}

func TestIndexOutOfRangeIsAValueErrorWithLocation(t *testing.T) {
	b := NewBuilder("g")
	x := b.Param("x", TensorType{DType: tF32, Shape: Shape{3}})
	i := b.Param("i", TensorType{DType: i32, Shape: Shape{1}})
	loc := Location{File: "m.py", Line: 4}
	v, err := b.Op("index_select", []Value{x, i}, nil, loc)
	require.NoError(t, err)
	b.Output(v)
	_, err = Interpret(b.Graph(), []*Array{arr(tF32, Shape{3}, 1, 2, 3), arr(i32, Shape{1}, 3)})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, ValueError, e.Kind)
	assert.Contains(t, e.Message, "index 3 is out of range for axis 0 of size 3")
	assert.Equal(t, loc, e.Loc)
}

func TestInferErrors(t *testing.T) {
	typ := func(d dtype.DType, s ...int) TensorType { return TensorType{DType: d, Shape: Shape(s)} }
	cases := []struct {
		op       string
		in       []TensorType
		attrs    Attrs
		kind     ErrorKind
		msg      string
		suggests string // part of some suggestion, or ""
	}{
		{"sum", []TensorType{typ(tF32, 2, 3)}, Attrs{"axis": []int64{2}}, ValueError, "sum: axis 2 is out of range for a 2-d tensor", "axis=-1"},
		{"sum", []TensorType{typ(tF32, 2, 3)}, Attrs{"axis": []int64{1, -1}}, ValueError, "axis 1 is given twice", ""},
		{"max", []TensorType{typ(tF32, 2, 0)}, Attrs{"axis": []int64{1}}, ValueError, "it is empty and max has no identity", ""},
		{"topk_values", []TensorType{typ(tF32, 2, 3)}, Attrs{"k": int64(4)}, ValueError, "topk: k=4 is out of range for axis 1 of size 3", "k <= 3"},
		{"reshape", []TensorType{typ(tF32, 2, 3)}, Attrs{"shape": []int64{4, 2}}, ShapeError, "cannot reshape [2,3] (6 elements) into [4 2] (8 elements)", "-1"},
		{"cast", []TensorType{typ(tF32, 2)}, Attrs{"dtype": "float64"}, DTypeError, `cast: unknown dtype "float64"`, "float32"},
		{"add", []TensorType{typ(boolT, 2), typ(boolT, 2)}, nil, DTypeError, "add: not defined for bool tensors", "logical_and"},
		{"where", []TensorType{typ(boolT, 2), typ(tF32, 3), typ(tF32, 2)}, nil, ShapeError, "where: shapes [2], [3], [2] cannot be broadcast together", ""},
		{"batch_matmul", []TensorType{typ(h16, 4, 2, 3), typ(h16, 4, 2, 3)}, nil, ShapeError, "batch_matmul: inner dimensions do not match", "transpose_b=True"},
		{"batch_matmul", []TensorType{typ(h16, 3, 2, 3), typ(h16, 4, 3, 2)}, nil, ShapeError, "batch dimensions [3] and [4] cannot be broadcast", ""},
		{"linear", []TensorType{typ(tF32, 5, 8), typ(tF32, 8, 4)}, nil, ShapeError, "linear: x has 8 input features", "weight.T"},
		{"concat", []TensorType{typ(tF32, 2, 3), typ(tF32, 3, 3)}, Attrs{"axis": int64(1)}, ShapeError, "they differ on axis 0", ""},
		{"stack", []TensorType{typ(tF32, 2), typ(tF32, 3)}, nil, ShapeError, "stack: input 1 has shape [3]", ""},
		{"squeeze", []TensorType{typ(tF32, 2, 3)}, Attrs{"axis": []int64{0}}, ShapeError, "axis 0 of shape [2,3] has size 2, not 1", ""},
		{"transpose", []TensorType{typ(tF32, 2, 3)}, Attrs{"perm": []int64{0, 0}}, ValueError, "repeats axis 0", ""},
		{"slice", []TensorType{typ(tF32, 4)}, Attrs{"starts": []int64{0}, "stops": []int64{4}, "steps": []int64{0}}, ValueError, "step of axis 0 is 0", ""},
		{"index_select", []TensorType{typ(tF32, 4), typ(tF32, 2)}, nil, DTypeError, "indices must be int32 or int8", "astype"},
		{"layer_norm", []TensorType{typ(tF32, 2, 4), typ(tF32, 3)}, nil, ShapeError, "weight of shape [3] does not broadcast", "[4]"},
		{"gelu", []TensorType{typ(tF32, 2)}, Attrs{"approximate": "fast"}, ValueError, `approximate="fast"`, ""},
		{"softmax", []TensorType{typ(tF32)}, nil, ValueError, "a 0-d tensor has no axes", ""},
		{"concat", nil, nil, ValueError, "concat takes 1 or more tensor inputs, got 0", ""},
		{"layer_norm", []TensorType{typ(tF32, 2), typ(tF32, 2), typ(tF32, 2), typ(tF32, 2)}, nil, ValueError, "layer_norm takes 1 to 3 tensor inputs, got 4", ""},
	}
	for _, c := range cases {
		t.Run(c.op+"/"+c.msg, func(t *testing.T) {
			_, _, err := InferOp(c.op, c.in, c.attrs)
			require.NotNil(t, err)
			assert.Equal(t, c.kind, err.Kind)
			assert.Contains(t, err.Message+" "+joinAll(err.Causes), c.msg)
			if c.suggests != "" {
				assert.Contains(t, joinAll(err.Suggestions), c.suggests)
			}
		})
	}
}

func joinAll(s []string) string {
	out := ""
	for _, x := range s {
		out += x + "\n"
	}
	return out
}

func TestIota(t *testing.T) {
	b := NewBuilder("iota")
	v, err := b.Op("iota", nil, Attrs{"shape": []int64{2, 3}, "axis": int64(-1)}, Location{})
	require.NoError(t, err)
	b.Output(v)
	out, err := Interpret(b.Graph(), nil)
	require.NoError(t, err)
	require.Equal(t, []float64{0, 1, 2, 0, 1, 2}, out[0].Data)
	_, err = b.Op("iota", nil, Attrs{"shape": []int64{}}, Location{})
	require.ErrorContains(t, err, "no axis")
}
