package core

import "math"

// flash_attention is scaled_dot_product_attention as the compiler's fused kernel sees
// it (lower/fuse_attention.go). Its inputs are q, k, v, then as its attributes say:
// the mask ("mask"), a 0-d tensor holding what a bool mask puts at the scores it drops
// ("fill_in"; otherwise the constant "fill", -inf unless a hand-written where gave
// another), and a 0-d tensor the scores are multiplied ("scale_by" mul) or divided
// ("div") by instead of the constant "scale" (a Python scalar in a hand-written chain
// is such a tensor). With "heads_last" the result has its heads axis after the query
// axis ([..., L, H, Ev] instead of [..., H, L, Ev]): the transpose a multi-head
// attention applies before merging the heads, written by the kernel's stores. Its
// reference is evalAttention's.

func init() {
	Register(&OpDef{Name: "flash_attention", Arity: 3, MaxArity: 6,
		Attrs: []AttrSpec{{"scale", 0.0}, {"is_causal", false}, {"mask", false}, {"fill", math.Inf(-1)}, {"fill_in", false}, {"scale_by", ""}, {"heads_last", false}},
		Doc:   "scaled_dot_product_attention as one fused kernel (made by the compiler): inputs q, k, v, the mask (mask), a 0-d fill of a bool mask's dropped scores (fill_in, else the constant fill), a 0-d scale the scores are multiplied or divided by (scale_by mul or div, else the constant scale); heads_last puts the heads axis after the query axis",
		Infer: inferFlashAttention, Eval: evalFlashAttention})
	concreteOnly["flash_attention"] = true
}

// FlashAttentionInputs gives the input positions of the mask, the fill and the scale
// (-1 when absent) and the input count.
func FlashAttentionInputs(attrs Attrs) (mask, fill, scale, n int) {
	mask, fill, scale, n = -1, -1, -1, 3
	if attrs.Bool("mask", false) {
		mask, n = n, n+1
	}
	if attrs.Bool("fill_in", false) {
		fill, n = n, n+1
	}
	if attrs.Str("scale_by", "") != "" {
		scale, n = n, n+1
	}
	return mask, fill, scale, n
}

func inferFlashAttention(in []TensorType, attrs Attrs) (TensorType, *Error) {
	if by := attrs.Str("scale_by", ""); by != "" && by != "mul" && by != "div" {
		return TensorType{}, Errorf(ValueError, "flash_attention: scale_by is %q, want \"\", \"mul\" or \"div\"", by)
	}
	mask, fill, scale, n := FlashAttentionInputs(attrs)
	if len(in) != n {
		return TensorType{}, Errorf(ValueError, "flash_attention: its attributes name %d inputs, got %d", n, len(in))
	}
	for _, i := range []int{fill, scale} {
		if i >= 0 && (in[i].Shape.NumElements() != 1 || !in[i].DType.IsFloat()) {
			return TensorType{}, Errorf(ShapeError, "flash_attention: input %d must be a float tensor of one element, got %s", i, in[i])
		}
	}
	if fill >= 0 && (mask < 0 || in[mask].DType.String() != "bool") {
		return TensorType{}, Errorf(ValueError, "flash_attention: a fill input needs a bool mask")
	}
	var m *TensorType
	if mask >= 0 {
		m = &in[mask]
	}
	t, err := inferAttentionParts("flash_attention", in[0], in[1], in[2], m)
	if err != nil || !attrs.Bool("heads_last", false) {
		return t, err
	}
	if len(t.Shape) < 3 {
		return TensorType{}, Errorf(ShapeError, "flash_attention: heads_last needs a heads axis, but the result %s has rank %d", t, len(t.Shape))
	}
	t.Shape = SwapHeads(t.Shape)
	return t, nil
}

// SwapHeads exchanges the third-last and second-last axes of s ([..., H, L, E] and
// [..., L, H, E] into each other).
func SwapHeads(s Shape) Shape {
	s = s.Clone()
	n := len(s)
	s[n-3], s[n-2] = s[n-2], s[n-3]
	return s
}

// evalFlashAttention is evalAttention, its result stored heads-last when asked.
func evalFlashAttention(in []*Array, attrs Attrs, out *Array) {
	if !attrs.Bool("heads_last", false) {
		evalAttention(in, attrs, out)
		return
	}
	t := out.Type
	t.Shape = SwapHeads(t.Shape)
	tmp := NewArray(t)
	evalAttention(in, attrs, tmp)
	n := len(t.Shape)
	h, l, e := t.Shape[n-3], t.Shape[n-2], t.Shape[n-1]
	for b := 0; b < t.Shape[:n-3].NumElements(); b++ {
		for i := range h {
			for j := range l {
				src := ((b*h+i)*l + j) * e
				dst := ((b*l+j)*h + i) * e
				copy(out.Data[dst:dst+e], tmp.Data[src:src+e])
			}
		}
	}
}
