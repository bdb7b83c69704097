package core

// flash_attention is scaled_dot_product_attention as the compiler's fused kernel sees
// it (lower/fuse_attention.go): the "mask" attribute says whether input 3 is a mask,
// and "scale_by" whether the last input is a 0-d tensor the scores are multiplied
// ("mul") or divided ("div") by instead of the constant "scale" (a Python scalar in a
// hand-written chain is such a tensor). Its reference is evalAttention's.

func init() {
	Register(&OpDef{Name: "flash_attention", Arity: 3, MaxArity: 5,
		Attrs: []AttrSpec{{"scale", 0.0}, {"is_causal", false}, {"mask", false}, {"scale_by", ""}},
		Doc:   "scaled_dot_product_attention as one fused kernel (made by the compiler): input 3 is the mask when mask is set; with scale_by mul or div the last input is a 0-d scale the scores are multiplied or divided by",
		Infer: inferFlashAttention, Eval: evalAttention})
	concreteOnly["flash_attention"] = true
}

func inferFlashAttention(in []TensorType, attrs Attrs) (TensorType, *Error) {
	want := 3
	var mask *TensorType
	if attrs.Bool("mask", false) {
		want++
		if len(in) > 3 {
			mask = &in[3]
		}
	}
	switch by := attrs.Str("scale_by", ""); by {
	case "mul", "div":
		want++
		if len(in) == want {
			if s := in[want-1]; s.Shape.NumElements() != 1 || !s.DType.IsFloat() {
				return TensorType{}, Errorf(ShapeError, "flash_attention: the scale must be a float tensor of one element, got %s", s)
			}
		}
	case "":
	default:
		return TensorType{}, Errorf(ValueError, "flash_attention: scale_by is %q, want \"\", \"mul\" or \"div\"", by)
	}
	if len(in) != want {
		return TensorType{}, Errorf(ValueError, "flash_attention: its attributes name %d inputs, got %d", want, len(in))
	}
	return inferAttentionParts("flash_attention", in[0], in[1], in[2], mask)
}
