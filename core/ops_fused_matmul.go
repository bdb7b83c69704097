package core

// fused_matmul is a 2-D matmul and the elementwise epilogue the compiler runs in the
// same kernel (bias, activation, residual add, cast): the epilogue is a fused body
// whose first param is the matmul's result and whose other params are the op's inputs
// after a and b. Like fused, its meaning is exactly the unfused ops', so the reference
// interpreter runs it as the matmul followed by the body.

func init() {
	Register(&OpDef{Name: "fused_matmul", Arity: 2, MaxArity: Variadic,
		Attrs: []AttrSpec{{"transpose_a", false}, {"transpose_b", false}, {"body", ""}},
		Doc:   "matmul(a, b) followed by an epilogue fused into its kernel by the compiler: the body graph (text form) applied to the product and the other inputs",
		Infer: inferFusedMatmul, Eval: evalFusedMatmul})
	concreteOnly["fused_matmul"] = true
}

func inferFusedMatmul(in []TensorType, attrs Attrs) (TensorType, *Error) {
	prod, err := inferMatmul(in[:2], attrs)
	if err != nil {
		return TensorType{}, err
	}
	return inferFused(append([]TensorType{prod}, in[2:]...), attrs)
}

func evalFusedMatmul(in []*Array, attrs Attrs, out *Array) {
	prod, err := inferMatmul([]TensorType{in[0].Type, in[1].Type}, attrs)
	if err != nil {
		panic(err)
	}
	p := NewArray(prod)
	evalMatmul(in[:2], attrs, p)
	evalFused(append([]*Array{p}, in[2:]...), attrs, out)
}
