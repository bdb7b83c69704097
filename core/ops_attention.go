package core

import (
	"math"

	"pypto/dtype"
)

// Scaled dot-product attention, torch's scaled_dot_product_attention: q [..., L, E],
// k [..., S, E], v [..., S, Ev] -> [..., L, Ev], batch dims broadcasting like
// batch_matmul's. softmax(q @ k^T * scale + mask) @ v, where the optional mask
// broadcasts to [..., L, S] and is added (float) or keeps the positions where it is
// true (bool); is_causal keeps key j for query i when j <= i (the top-left aligned
// lower triangle). scale 0 stands for 1/sqrt(E). A row whose keys are all masked is NaN.

func init() {
	Register(&OpDef{Name: "scaled_dot_product_attention", Arity: 3, MaxArity: 4,
		Attrs: []AttrSpec{{"scale", 0.0}, {"is_causal", false}},
		Doc:   "softmax(q @ k^T * scale + mask) @ v for q [..., L, E], k [..., S, E], v [..., S, Ev], optional mask (float: added; bool: true keeps) broadcast to [..., L, S]; scale 0 means 1/sqrt(E); is_causal keeps keys j <= i",
		Infer: inferAttention("scaled_dot_product_attention"), Eval: evalAttention, Decompose: decomposeAttention})
}

// AttentionScale is the factor the scores of an attention with head dim e are
// multiplied by: the given scale, or 1/sqrt(e) when it is 0.
func AttentionScale(scale float64, e int) float64 {
	if scale == 0 {
		return 1 / math.Sqrt(float64(e))
	}
	return scale
}

func inferAttention(name string) func([]TensorType, Attrs) (TensorType, *Error) {
	return func(in []TensorType, attrs Attrs) (TensorType, *Error) {
		var mask *TensorType
		if len(in) == 4 {
			mask = &in[3]
		}
		return inferAttentionParts(name, in[0], in[1], in[2], mask)
	}
}

// inferAttentionParts checks q, k, v (and the mask) and gives the result type.
func inferAttentionParts(name string, q, k, v TensorType, mask *TensorType) (TensorType, *Error) {
	for i, t := range []TensorType{q, k, v} {
		if len(t.Shape) < 2 {
			return TensorType{}, Errorf(ShapeError, "%s: %s needs at least 2 dimensions ([..., seq, dim]), got shape %v", name, []string{"q", "k", "v"}[i], t.Shape)
		}
	}
	if !q.DType.IsFloat() || k.DType != q.DType || v.DType != q.DType {
		return TensorType{}, Errorf(DTypeError, "%s: q, k and v must have one float dtype, got %s, %s and %s", name, q.DType, k.DType, v.DType).
			Suggest("cast them to one of float16, bfloat16 or float32")
	}
	rq, rk, rv := len(q.Shape), len(k.Shape), len(v.Shape)
	l, e := q.Shape[rq-2], q.Shape[rq-1]
	s, ek := k.Shape[rk-2], k.Shape[rk-1]
	if ek != e {
		return TensorType{}, Errorf(ShapeError, "%s: q has head dim %d (shape %v), k has %d (shape %v)", name, e, q.Shape, ek, k.Shape).
			Because("the scores are q @ k^T, so q and k share their last dimension")
	}
	if v.Shape[rv-2] != s {
		return TensorType{}, Errorf(ShapeError, "%s: k has %d keys (shape %v), v has %d values (shape %v)", name, s, k.Shape, v.Shape[rv-2], v.Shape).
			Because("every key has its value: k and v share their second-to-last dimension")
	}
	batch, ok := BroadcastShapes(q.Shape[:rq-2], k.Shape[:rk-2])
	if ok {
		batch, ok = BroadcastShapes(batch, v.Shape[:rv-2])
	}
	if !ok {
		return TensorType{}, Errorf(ShapeError, "%s: batch dimensions of q %v, k %v and v %v cannot be broadcast together", name, q.Shape, k.Shape, v.Shape).
			Because("all but the last two dimensions are batch dimensions and broadcast like batch_matmul's")
	}
	if mask != nil {
		scores := append(batch.Clone(), l, s)
		got, ok := BroadcastShapes(scores, mask.Shape)
		if !ok || !got.Equal(scores) {
			return TensorType{}, Errorf(ShapeError, "%s: the mask of shape %v does not broadcast to the scores' shape %v", name, mask.Shape, scores)
		}
		if mask.DType != dtype.Bool && !mask.DType.IsFloat() {
			return TensorType{}, Errorf(DTypeError, "%s: the mask must be bool (true keeps a key) or float (added to the scores), got %s", name, mask.DType)
		}
	}
	return TensorType{DType: q.DType, Shape: append(batch, l, v.Shape[rv-1])}, nil
}

// evalAttention computes each output row exactly (float64) and rounds it once.
func evalAttention(in []*Array, attrs Attrs, out *Array) {
	q, k, v := in[0], in[1], in[2]
	os := out.Type.Shape
	nb := len(os) - 2
	batch := os[:nb]
	l, ev := os[nb], os[nb+1]
	e := q.Type.Shape[len(q.Type.Shape)-1]
	s := k.Type.Shape[len(k.Type.Shape)-2]
	scale := AttentionScale(attrs.Float("scale", 0), e)
	var mask *Array
	if len(in) == 4 || attrs.Bool("mask", false) {
		mask = in[3]
	}
	fill := attrs.Float("fill", math.Inf(-1))
	if _, f, s, _ := FlashAttentionInputs(attrs); f >= 0 || s >= 0 {
		if f >= 0 {
			fill = in[f].Data[0]
		}
		switch attrs.Str("scale_by", "") {
		case "mul":
			scale = in[s].Data[0]
		case "div":
			scale = 1 / in[s].Data[0]
		}
	}
	causal := attrs.Bool("is_causal", false)
	iq := newBroadcastIndex(q.Type.Shape[:len(q.Type.Shape)-2], batch)
	ik := newBroadcastIndex(k.Type.Shape[:len(k.Type.Shape)-2], batch)
	iv := newBroadcastIndex(v.Type.Shape[:len(v.Type.Shape)-2], batch)
	var im broadcastIndex
	if mask != nil {
		im = newBroadcastIndex(mask.Type.Shape, append(batch.Clone(), l, s))
	}
	scores := make([]float64, s)
	acc := make([]float64, ev)
	for b := 0; b < batch.NumElements(); b++ {
		qb, kb, vb := iq.at(b)*l*e, ik.at(b)*s*e, iv.at(b)*s*ev
		for i := 0; i < l; i++ {
			m := math.Inf(-1)
			for j := 0; j < s; j++ {
				dot := 0.0
				for c := 0; c < e; c++ {
					dot += q.Data[qb+i*e+c] * k.Data[kb+j*e+c]
				}
				x := dot * scale
				if mask != nil {
					mv := mask.Data[im.at((b*l+i)*s+j)]
					if mask.Type.DType == dtype.Bool {
						if mv == 0 {
							x = fill
						}
					} else {
						x += mv
					}
				}
				if causal && j > i {
					x = math.Inf(-1)
				}
				scores[j] = x
				m = maxFloat(m, x)
			}
			sum := 0.0
			for j := range scores {
				scores[j] = math.Exp(scores[j] - m)
				sum += scores[j]
			}
			clear(acc)
			for j, p := range scores {
				for c := 0; c < ev; c++ {
					acc[c] += p * v.Data[vb+j*ev+c]
				}
			}
			for c, a := range acc {
				out.Data[(b*l+i)*ev+c] = dtype.Round(out.Type.DType, a/sum)
			}
		}
	}
}

// decomposeAttention is the unfused chain in float32: scores by batch_matmul, the
// scale, the mask (added, or a where for bool masks and causality), softmax, the
// product with v, rounded to the inputs' dtype at the end.
func decomposeAttention(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	qt := d.typ(in[0])
	e, l := qt.Shape[len(qt.Shape)-1], qt.Shape[len(qt.Shape)-2]
	st := d.typ(in[1])
	s := st.Shape[len(st.Shape)-2]
	f32 := func(v Value) Value { return d.cast(v, dtype.Float32) }
	scores := d.op("batch_matmul", Attrs{"transpose_b": true}, f32(in[0]), f32(in[1]))
	scores = d.op("mul", nil, scores, d.scalar(dtype.Float32, AttentionScale(attrs.Float("scale", 0), e)))
	negInf := func() Value { return d.scalar(dtype.Float32, math.Inf(-1)) }
	if len(in) == 4 {
		if d.typ(in[3]).DType == dtype.Bool {
			scores = d.op("where", nil, in[3], scores, negInf())
		} else {
			scores = d.op("add", nil, scores, f32(in[3]))
		}
	}
	if attrs.Bool("is_causal", false) {
		shape := Attrs{"shape": []int64{int64(l), int64(s)}}
		rows := d.op("iota", Attrs{"shape": shape["shape"], "axis": int64(0)})
		cols := d.op("iota", Attrs{"shape": shape["shape"], "axis": int64(1)})
		scores = d.op("where", nil, d.op("less_equal", nil, cols, rows), scores, negInf())
	}
	p := d.op("softmax", Attrs{"axis": int64(-1)}, scores)
	o := d.op("batch_matmul", nil, p, f32(in[2]))
	return d.done(d.cast(o, qt.DType))
}
