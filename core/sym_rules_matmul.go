package core

// Symbolic shape rules of matmul, batch_matmul and linear: the inner dimensions must be
// equal, batch dimensions broadcast.

func init() {
	registerSym(symMatmulRule, "matmul")
	registerSym(symBatchMatmulRule, "batch_matmul")
	registerSym(symLinearRule, "linear")
}

// symMatrixProduct gives [m, n] of op(a) @ op(b) for the matrices a and b (their last two
// dims), requiring equal inner dimensions.
func (c *symCtx) matrixProduct(a, b TensorType, attrs Attrs) ([]Dim, *Error) {
	ra, rb := len(a.Shape), len(b.Shape)
	ta, tb := attrs.Bool("transpose_a", false), attrs.Bool("transpose_b", false)
	m, ka := a.Dim(ra-2), a.Dim(ra-1)
	if ta {
		m, ka = ka, m
	}
	kb, n := b.Dim(rb-2), b.Dim(rb-1)
	if tb {
		kb, n = n, kb
	}
	why := "the inner dimensions of " + a.ShapeString() + " @ " + b.ShapeString() + transposeNote(ta, tb) + " are equal"
	if !c.need(ka, Equal, kb, why) {
		e := Errorf(ShapeError, "%s: inner dimensions do not match: a has shape %s (k=%s), b has shape %s (k=%s)", c.op, a.ShapeString(), ka, b.ShapeString(), kb).
			Because("for a @ b the last dimension of a must equal the first dimension of b%s", transposeNote(ta, tb))
		if !tb && b.Dim(rb-1).Equal(ka) {
			e.Suggest("b looks stored as [n, k]: pass transpose_b=True")
		}
		if tb && b.Dim(rb-2).Equal(ka) {
			e.Suggest("b is already [k, n]: drop transpose_b=True")
		}
		if !ta && a.Dim(ra-2).Equal(kb) {
			e.Suggest("a looks stored as [k, m]: pass transpose_a=True")
		}
		return nil, e
	}
	return []Dim{m, n}, nil
}

func symMatmulRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	a, b := in[0], in[1]
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return nil, Errorf(ShapeError, "matmul: operands must be 2-D, got shapes %s and %s", a.ShapeString(), b.ShapeString()).
			Suggest("reshape the operands to 2-D matrices")
	}
	return c.matrixProduct(a, b, attrs)
}

func symBatchMatmulRule(c *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	a, b := in[0], in[1]
	if len(a.Shape) < 2 || len(b.Shape) < 2 {
		return nil, Errorf(ShapeError, "batch_matmul: operands need at least 2 dimensions, got shapes %s and %s", a.ShapeString(), b.ShapeString()).
			Suggest("p.matmul accepts 1-d operands and inserts the missing axis itself")
	}
	mn, err := c.matrixProduct(a, b, attrs)
	if err != nil {
		return nil, err
	}
	ba, bb := a.AllDims()[:len(a.Shape)-2], b.AllDims()[:len(b.Shape)-2]
	why := func() string {
		return "the batch dimensions " + DimsString(ba) + " and " + DimsString(bb) + " broadcast together"
	}
	batch, ok := c.broadcast([][]Dim{ba, bb}, why)
	if !ok {
		return nil, Errorf(ShapeError, "batch_matmul: batch dimensions %s and %s cannot be broadcast together (shapes %s and %s)",
			DimsString(ba), DimsString(bb), a.ShapeString(), b.ShapeString())
	}
	return append(batch, mn...), nil
}

func symLinearRule(c *symCtx, in []TensorType, _ Attrs) ([]Dim, *Error) {
	x, w := in[0], in[1]
	if len(x.Shape) < 1 || len(w.Shape) != 2 {
		return nil, Errorf(ShapeError, "linear: x must have at least 1 dimension and weight 2 ([out, in]), got shapes %s and %s", x.ShapeString(), w.ShapeString())
	}
	k := x.Dim(len(x.Shape) - 1)
	why := "x's last dimension is weight's in_features (shapes " + x.ShapeString() + " and " + w.ShapeString() + ")"
	if !c.need(k, Equal, w.Dim(1), why) {
		e := Errorf(ShapeError, "linear: x has %s input features (shape %s), weight of shape %s expects %s", k, x.ShapeString(), w.ShapeString(), w.Dim(1)).
			Because("weight is [out_features, in_features] and x's last dimension must be in_features")
		if w.Dim(0).Equal(k) {
			e.Suggest("weight looks stored as [in, out]: pass its transpose (weight.T)")
		}
		return nil, e
	}
	out := append(x.AllDims()[:len(x.Shape)-1], w.Dim(0))
	if len(in) == 3 {
		bias := in[2]
		bd := bias.AllDims()
		ok := len(bd) <= len(out)
		for i := 0; ok && i < len(bd); i++ {
			d := bd[len(bd)-1-i]
			if v, isConst := d.Const(); isConst && v == 1 {
				continue
			}
			ok = c.need(d, Equal, out[len(out)-1-i], "the bias of shape "+bias.ShapeString()+" broadcasts to the output "+DimsString(out))
		}
		if !ok {
			return nil, Errorf(ShapeError, "linear: bias of shape %s does not broadcast to the output shape %s", bias.ShapeString(), DimsString(out)).
				Suggest("give a bias of shape [%s]", w.Dim(0))
		}
	}
	return out, nil
}

func init() {
	registerSym(symAttentionRule, "scaled_dot_product_attention")
}

// symAttentionRule: q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev], the
// batch dims of the three broadcasting together and the mask broadcasting to the
// scores [..., L, S].
func symAttentionRule(c *symCtx, in []TensorType, _ Attrs) ([]Dim, *Error) {
	q, k, v := in[0], in[1], in[2]
	if len(q.Shape) < 2 || len(k.Shape) < 2 || len(v.Shape) < 2 {
		return nil, Errorf(ShapeError, "scaled_dot_product_attention: q, k and v need at least 2 dimensions, got shapes %s, %s and %s", q.ShapeString(), k.ShapeString(), v.ShapeString())
	}
	rq, rk, rv := len(q.Shape), len(k.Shape), len(v.Shape)
	if !c.need(q.Dim(rq-1), Equal, k.Dim(rk-1), "q and k share their head dim (shapes "+q.ShapeString()+" and "+k.ShapeString()+")") {
		return nil, Errorf(ShapeError, "scaled_dot_product_attention: q has head dim %s (shape %s), k has %s (shape %s)", q.Dim(rq-1), q.ShapeString(), k.Dim(rk-1), k.ShapeString())
	}
	if !c.need(k.Dim(rk-2), Equal, v.Dim(rv-2), "k and v have one row per key (shapes "+k.ShapeString()+" and "+v.ShapeString()+")") {
		return nil, Errorf(ShapeError, "scaled_dot_product_attention: k has %s keys (shape %s), v has %s values (shape %s)", k.Dim(rk-2), k.ShapeString(), v.Dim(rv-2), v.ShapeString())
	}
	why := func() string { return "the batch dimensions of q, k and v broadcast together" }
	batch, ok := c.broadcast([][]Dim{q.AllDims()[:rq-2], k.AllDims()[:rk-2], v.AllDims()[:rv-2]}, why)
	if !ok {
		return nil, Errorf(ShapeError, "scaled_dot_product_attention: batch dimensions of q %s, k %s and v %s cannot be broadcast together", q.ShapeString(), k.ShapeString(), v.ShapeString())
	}
	if len(in) == 4 {
		scores := append(append([]Dim(nil), batch...), q.Dim(rq-2), k.Dim(rk-2))
		m := in[3].AllDims()
		ok := len(m) <= len(scores)
		for i := 0; ok && i < len(m); i++ {
			d := m[len(m)-1-i]
			if n, isConst := d.Const(); isConst && n == 1 {
				continue
			}
			ok = c.need(d, Equal, scores[len(scores)-1-i], "the mask of shape "+in[3].ShapeString()+" broadcasts to the scores "+DimsString(scores))
		}
		if !ok {
			return nil, Errorf(ShapeError, "scaled_dot_product_attention: the mask of shape %s does not broadcast to the scores' shape %s", in[3].ShapeString(), DimsString(scores))
		}
	}
	return append(batch, q.Dim(rq-2), v.Dim(rv-1)), nil
}
