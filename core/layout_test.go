package core

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

func transformArray(t testing.TB, x *Array, to string) *Array {
	t.Helper()
	typ, full, err := InferOp("layout_transform", []TensorType{x.Type}, Attrs{"layout": to})
	require.Nil(t, err, "%v", err)
	out := NewArray(typ)
	evalLayoutTransform([]*Array{x}, full, out)
	return out
}

// The NZ form of a matrix, element by element: fractal (k1, m1) holds rows
// m1*16..m1*16+15 and columns k1*C0..k1*C0+C0-1, row-major, zero outside the matrix.
func TestNZLayoutPlacesEveryElement(t *testing.T) {
	const m, k = 20, 10 // float32: C0 = 8, so 2 x 2 fractals with padding on both axes
	x := NewArray(TensorType{DType: tF32, Shape: Shape{m, k}})
	for i := range x.Data {
		x.Data[i] = float64(i + 1)
	}
	z := transformArray(t, x, "NZ")
	assert.Equal(t, "f32[2,2,16,8]@NZ(20,10)", z.Type.String())
	at := func(k1, m1, r, c int) float64 { return z.Data[((k1*2+m1)*16+r)*8+c] }
	for i := 0; i < 32; i++ {
		for j := 0; j < 16; j++ {
			want := 0.0
			if i < m && j < k {
				want = float64(i*k + j + 1)
			}
			assert.Equal(t, want, at(j/8, i/16, i%16, j%8), "matrix element [%d,%d]", i, j)
		}
	}
	back := transformArray(t, z, "ND")
	assert.Equal(t, "f32[20,10]", back.Type.String())
	assert.Equal(t, x.Data, back.Data)
}

func TestFractalSizes(t *testing.T) {
	for dt, c0 := range map[dtype.DType]int{tF32: 8, h16: 16, bf16: 16, i8: 32, i32: 8, boolT: 32} {
		assert.Equal(t, c0, FractalCols(dt), dt.String())
		assert.Equal(t, Shape{3, 3, 1, 16, c0}, NZShape(Shape{3, 15, c0*2 + 1}, dt), dt.String())
	}
}

// Converting to any layout and back gives the tensor back, for every dtype and shapes
// with and without padding; the three 4-D layouts permute into one another.
func TestLayoutRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 4))
	for trial := 0; trial < 60; trial++ {
		dt := dtype.All[r.IntN(len(dtype.All))]
		shape := Shape{1 + r.IntN(3), 1 + r.IntN(5), 1 + r.IntN(40), 1 + r.IntN(40)}
		x := randomArray(r, TensorType{DType: dt, Shape: shape})
		for _, path := range [][]string{{"NZ", "ND"}, {"NCHW", "NHWC", "CHWN", "NCHW", "ND"}, {"NHWC", "NZ", "CHWN", "ND"}} {
			cur := x
			for _, to := range path {
				cur = transformArray(t, cur, to)
			}
			require.Equal(t, x.Type.String(), cur.Type.String(), "%v", path)
			require.Equal(t, x.Data, cur.Data, "%s through %v", x.Type, path)
		}
	}
	x := NewArray(TensorType{DType: h16, Shape: Shape{1, 2, 3, 4}, Layout: Layout{Kind: NCHW}})
	for i := range x.Data {
		x.Data[i] = float64(i)
	}
	y := transformArray(t, x, "NHWC") // [n, h, w, c]: element [0, h, w, c] is x[0, c, h, w]
	assert.Equal(t, "f16[1,3,4,2]@NHWC", y.Type.String())
	assert.Equal(t, x.Data[1*12+2*4+3], y.Data[(2*4+3)*2+1])
}

func TestLayoutsFlowThroughOps(t *testing.T) {
	nchw := TensorType{DType: h16, Shape: Shape{2, 3, 4, 4}, Layout: Layout{Kind: NCHW}}
	nhwc := TensorType{DType: h16, Shape: Shape{2, 4, 4, 3}, Layout: Layout{Kind: NHWC}}
	nz := TensorType{DType: h16, Shape: Shape{4, 2, 16, 16}, Layout: Layout{Kind: NZ, Rows: 30, Cols: 60}}
	bias := TensorType{DType: h16, Shape: Shape{3, 1, 1}}
	scalar := TensorType{DType: h16, Shape: Shape{}}
	for _, c := range []struct {
		op    string
		in    []TensorType
		attrs Attrs
		want  string
	}{
		{"add", []TensorType{nchw, bias}, nil, "f16[2,3,4,4]@NCHW"},
		{"relu", []TensorType{nhwc}, nil, "f16[2,4,4,3]@NHWC"},
		{"mul", []TensorType{nz, scalar}, nil, "f16[4,2,16,16]@NZ(30,60)"},
		{"add", []TensorType{nz, nz}, nil, "f16[4,2,16,16]@NZ(30,60)"},
		{"softmax", []TensorType{nchw}, Attrs{"axis": int64(1)}, "f16[2,3,4,4]@NCHW"},
		{"slice", []TensorType{nchw}, Attrs{"starts": []int64{0, 0, 1, 1}, "stops": []int64{2, 3, 3, 3}, "steps": []int64{1, 1, 1, 1}}, "f16[2,3,2,2]@NCHW"},
		{"sum", []TensorType{nchw}, Attrs{"axis": []int64{1}}, "f16[2,4,4]"},
		{"transpose", []TensorType{nchw}, nil, "f16[4,4,3,2]"},
		{"reshape", []TensorType{nz}, Attrs{"shape": []int64{-1}}, "f16[2048]"},
		{"add", []TensorType{nchw, {DType: h16, Shape: Shape{5, 1, 1, 1, 1}}}, nil, "f16[5,2,3,4,4]"},
	} {
		got, _, err := InferOp(c.op, c.in, c.attrs)
		require.Nil(t, err, "%s: %v", c.op, err)
		assert.Equal(t, c.want, got.String(), c.op)
	}
	for _, c := range []struct {
		op    string
		in    []TensorType
		attrs Attrs
		msg   string
		hint  string
	}{
		{"add", []TensorType{nchw, nhwc}, nil, "add: operand 1 has layout NHWC but operand 0 has layout NCHW", "p.layout_transform(operand_1, p.NCHW)"},
		{"add", []TensorType{nz, {DType: h16, Shape: Shape{4, 2, 16, 16}}}, nil, "add: operand 1 is ND and operand 0 is NZ(30,60)", "p.layout_transform(operand_1, p.NZ)"},
		{"sum", []TensorType{nz}, nil, "sum: operand 0 has layout NZ(30,60), which this op cannot take", "p.layout_transform(x, p.ND)"},
		{"matmul", []TensorType{{DType: h16, Shape: Shape{4, 2, 16, 16}, Layout: nz.Layout}, nz}, nil, "matmul: operand 0 has layout NZ(30,60)", "p.ND"},
	} {
		_, _, err := InferOp(c.op, c.in, c.attrs)
		require.NotNil(t, err, c.op)
		assert.Equal(t, ShapeError, err.Kind)
		assert.Contains(t, err.Message, c.msg)
		assert.Contains(t, err.Suggestions[0], c.hint)
	}
}

func TestLayoutsInTypes(t *testing.T) {
	for _, c := range []struct{ text, err string }{
		{"f16[2,3,4,5]@NCHW", ""},
		{"f16[4,2,16,16]@NZ(30,60)", ""},
		{"i8[1,1,16,32]@NZ(16,32)", ""},
		{"f16[2,3]@NCHW", "layout NCHW needs a 4-D shape, got [2,3]"},
		{"f16[b,3,4,5]@NHWC", ""},
		{"f16[4,2,16,16]@NZ(30,70)", "needs shape [5,2,16,16]"},
		{"f32[4,2,16,16]@NZ(30,60)", "needs shape [8,2,16,8]"},
		{"f16[4,2,16,16]@NZ", "NZ needs the matrix size"},
		{"f16[2,3,4,5]@NCHW(1,2)", "takes no (rows,cols)"},
		{"f16[2,3,4,5]NCHW", "a layout is written @NHWC"},
	} {
		typ, err := ParseTensorType(c.text)
		msg := ""
		if err == nil {
			msg = typ.Check()
		} else {
			msg = err.Error()
		}
		if c.err == "" {
			assert.Empty(t, msg, c.text)
			assert.Equal(t, c.text, typ.String())
		} else {
			assert.Contains(t, msg, c.err, c.text)
		}
	}
	assert.Equal(t, []int{0, 2, 3, 1}, LayoutPerm(NCHW, NHWC))
	assert.Equal(t, []int{1, 2, 3, 0}, LayoutPerm(NCHW, CHWN))
	assert.Equal(t, []int{3, 0, 1, 2}, LayoutPerm(CHWN, NCHW))
}

// A graph with layout-tagged params runs in the interpreter; decomposition drops the
// tags, and the decomposed graph computes the same values.
func TestLayoutGraphsInterpretAndDecompose(t *testing.T) {
	g := mustParse(t, `graph g(%x: f32[1,2,2,3]@NHWC) {
  %1 = layout_transform(%x) {layout="NCHW"} : f32[1,3,2,2]@NCHW
  %2 = layout_transform(%1) {layout="NZ"} : f32[1,3,1,1,16,8]@NZ(2,2)
  %3 = mul(%2, %2) : f32[1,3,1,1,16,8]@NZ(2,2)
  %4 = layout_transform(%3) {layout="ND"} : f32[1,3,2,2]
  return %4
}`)
	x := NewArray(g.Type(g.Params[0]))
	for i := range x.Data {
		x.Data[i] = float64(i)
	}
	want, err := Interpret(g, []*Array{x})
	require.NoError(t, err)
	// channel c of the NCHW form is x[0, :, :, c], squared
	assert.Equal(t, []float64{0, 9, 36, 81, 1, 16, 49, 100, 4, 25, 64, 121}, want[0].Data)
	dg, err := DecomposeGraph(g)
	require.NoError(t, err)
	assert.NotContains(t, Format(dg), "@")
	assert.NotContains(t, Format(dg), "layout_transform")
	got, err := Interpret(dg, []*Array{{Type: x.Type.withoutLayout(), Data: x.Data}})
	require.NoError(t, err)
	assert.Equal(t, want[0].Data, got[0].Data)
}
