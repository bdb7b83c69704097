package core

// batch_matmul is matmul over leading batch dimensions that broadcast (numpy's
// matmul for operands of rank >= 2): [..., m, k] @ [..., k, n] -> [..., m, n]. It is a
// separate op from the 2-d matmul so that the cube lowering of the 2-d case stays as
// it is; p.matmul picks the op by rank. linear is x @ weight^T (+ bias) for x of any
// rank >= 1, a composite over reshape, matmul and add.

func init() {
	Register(&OpDef{Name: "batch_matmul", Arity: 2, Attrs: []AttrSpec{{"transpose_a", false}, {"transpose_b", false}},
		Doc:   "op(a) @ op(b) over broadcast batch dimensions ([..., m, k] @ [..., k, n]); dtypes as matmul",
		Infer: inferBatchMatmul, Eval: evalBatchMatmul})
	Register(&OpDef{Name: "linear", Arity: 2, MaxArity: 3,
		Doc:   "x @ weight^T + bias for x [..., in], weight [out, in], bias [out] (optional); dtypes as matmul",
		Infer: inferLinear, Eval: evalLinear, Decompose: decomposeLinear})
}

func inferBatchMatmul(in []TensorType, attrs Attrs) (TensorType, *Error) {
	a, b := in[0], in[1]
	if len(a.Shape) < 2 || len(b.Shape) < 2 {
		return TensorType{}, Errorf(ShapeError, "batch_matmul: operands need at least 2 dimensions, got shapes %v and %v", a.Shape, b.Shape).
			Suggest("p.matmul accepts 1-d operands and inserts the missing axis itself")
	}
	ra, rb := a.Shape[len(a.Shape)-2:], b.Shape[len(b.Shape)-2:]
	t, err := inferMatmul([]TensorType{{DType: a.DType, Shape: ra}, {DType: b.DType, Shape: rb}}, attrs)
	if err != nil {
		err.Message = "batch_" + err.Message
		if len(a.Shape) > 2 || len(b.Shape) > 2 {
			err.Because("the last two dimensions are the matrices: %v of %v and %v of %v", ra, a.Shape, rb, b.Shape)
		}
		return TensorType{}, err
	}
	batch, ok := BroadcastShapes(a.Shape[:len(a.Shape)-2], b.Shape[:len(b.Shape)-2])
	if !ok {
		return TensorType{}, Errorf(ShapeError, "batch_matmul: batch dimensions %v and %v cannot be broadcast together (shapes %v and %v)",
			a.Shape[:len(a.Shape)-2], b.Shape[:len(b.Shape)-2], a.Shape, b.Shape).
			Because("all but the last two dimensions are batch dimensions and broadcast like an elementwise op's")
	}
	return TensorType{DType: t.DType, Shape: append(batch, t.Shape...)}, nil
}

func evalBatchMatmul(in []*Array, attrs Attrs, out *Array) {
	a, b := in[0], in[1]
	os := out.Type.Shape
	nb := len(os) - 2
	batch := os[:nb]
	ra, rb := a.Type.Shape[len(a.Type.Shape)-2:], b.Type.Shape[len(b.Type.Shape)-2:]
	ia := newBroadcastIndex(a.Type.Shape[:len(a.Type.Shape)-2], batch)
	ib := newBroadcastIndex(b.Type.Shape[:len(b.Type.Shape)-2], batch)
	sa, sb, so := ra.NumElements(), rb.NumElements(), os[nb]*os[nb+1]
	for i := 0; i < batch.NumElements(); i++ {
		pa := &Array{Type: TensorType{DType: a.Type.DType, Shape: ra}, Data: a.Data[ia.at(i)*sa : ia.at(i)*sa+sa]}
		pb := &Array{Type: TensorType{DType: b.Type.DType, Shape: rb}, Data: b.Data[ib.at(i)*sb : ib.at(i)*sb+sb]}
		po := &Array{Type: TensorType{DType: out.Type.DType, Shape: os[nb:]}, Data: out.Data[i*so : i*so+so]}
		evalMatmul([]*Array{pa, pb}, attrs, po)
	}
}

func inferLinear(in []TensorType, _ Attrs) (TensorType, *Error) {
	x, w := in[0], in[1]
	if len(x.Shape) < 1 || len(w.Shape) != 2 {
		return TensorType{}, Errorf(ShapeError, "linear: x must have at least 1 dimension and weight 2 ([out, in]), got shapes %v and %v", x.Shape, w.Shape)
	}
	k := x.Shape[len(x.Shape)-1]
	if w.Shape[1] != k {
		e := Errorf(ShapeError, "linear: x has %d input features (shape %v), weight of shape %v expects %d", k, x.Shape, w.Shape, w.Shape[1]).
			Because("weight is [out_features, in_features] and x's last dimension must be in_features")
		if w.Shape[0] == k {
			e.Suggest("weight looks stored as [in, out]: pass its transpose (weight.T)")
		}
		return TensorType{}, e
	}
	t, err := inferMatmul([]TensorType{{DType: x.DType, Shape: Shape{1, k}}, w}, Attrs{"transpose_b": true})
	if err != nil {
		err.Message = "linear: " + err.Message
		return TensorType{}, err
	}
	out := append(x.Shape[:len(x.Shape)-1:len(x.Shape)-1], w.Shape[0])
	res := TensorType{DType: t.DType, Shape: out}
	if len(in) == 3 {
		bias := in[2]
		shape, ok := BroadcastShapes(out, bias.Shape)
		if !ok || !shape.Equal(out) {
			return TensorType{}, Errorf(ShapeError, "linear: bias of shape %v does not broadcast to the output shape %v", bias.Shape, out).
				Suggest("give a bias of shape [%d]", w.Shape[0])
		}
		res.DType = PromoteTypes(res.DType, bias.DType)
	}
	return res, nil
}

func evalLinear(in []*Array, _ Attrs, out *Array) {
	x, w := in[0], in[1]
	k := w.Type.Shape[1]
	m := x.Type.Shape[:len(x.Type.Shape)-1].NumElements()
	x2 := &Array{Type: TensorType{DType: x.Type.DType, Shape: Shape{m, k}}, Data: x.Data}
	mm := NewArray(TensorType{DType: MatmulResultDType(x.Type.DType), Shape: Shape{m, w.Type.Shape[0]}})
	evalMatmul([]*Array{x2, w}, Attrs{"transpose_b": true}, mm)
	if len(in) < 3 {
		copy(out.Data, mm.Data)
		return
	}
	mm.Type.Shape = out.Type.Shape.Clone()
	evalArith(kernel{func(a, b float64) float64 { return a + b }, func(a, b int64) int64 { return a + b }})([]*Array{mm, in[2]}, nil, out)
}

func decomposeLinear(b *Builder, in []Value, _ Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	xt, wt := d.typ(in[0]), d.typ(in[1])
	k, n := wt.Shape[1], wt.Shape[0]
	x := in[0]
	if len(xt.Shape) != 2 {
		m := xt.Shape[:len(xt.Shape)-1].NumElements()
		x = d.op("reshape", Attrs{"shape": []int64{int64(m), int64(k)}}, x)
	}
	y := d.op("matmul", Attrs{"transpose_b": true}, x, in[1])
	if len(in) == 3 { // on the 2-D product, where a compiler fuses it into the matmul
		y = d.op("add", nil, y, in[2])
	}
	if len(xt.Shape) != 2 {
		y = d.op("reshape", Attrs{"shape": int64s(append(xt.Shape[:len(xt.Shape)-1:len(xt.Shape)-1], n))}, y)
	}
	return d.done(y)
}
