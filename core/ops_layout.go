package core

// layout_transform converts a tensor to another layout (see Layout), reordering the
// data as the two layouts say: between NCHW, NHWC and CHWN it permutes the axes;
// ND -> NZ cuts the matrix [..., M, K] into fractals (padding with zeros) and NZ -> ND
// puts it back together; ND <-> NCHW/NHWC/CHWN only names the axes (the data stays).
// Other pairs go through ND. It is a composite: its decomposition uses pad, reshape,
// transpose and slice only, so the device runs it through their lowerings.

func init() {
	Register(&OpDef{Name: "layout_transform", Arity: 1, Attrs: []AttrSpec{{"layout", ""}},
		Doc:   "x converted to layout (ND, NCHW, NHWC, CHWN, NZ): 4-D layouts permute the axes, NZ cuts the matrix [..., M, K] into zero-padded 16 x C0 fractals stored [..., K1, M1, 16, C0]",
		Infer: inferLayoutTransform, Eval: evalLayoutTransform, Decompose: decomposeLayoutTransform})
	symOps["layout_transform"] = symOp{rule: symLayoutTransformRule, dtype: firstDType}
}

// layoutStep is one conversion of a layout_transform; steps chain through ND.
type layoutStep struct {
	kind     stepKind
	perm     []int      // permute: the transpose permutation
	from, to TensorType // the types before and after the step
}

type stepKind uint8

const (
	stepRetag   stepKind = iota // same data, another name for the axes
	stepPermute                 // NCHW, NHWC, CHWN among themselves
	stepToNZ                    // ND matrix to NZ fractals
	stepFromNZ                  // NZ fractals to ND matrix
)

// layoutSteps plans the conversion of x to the layout kind to.
func layoutSteps(x TensorType, to LayoutKind) ([]layoutStep, *Error) {
	from := x.Layout.Kind
	if from == to {
		return nil, nil
	}
	var steps []layoutStep
	cur := x
	if from == NZ {
		s, err := fromNZStep(cur)
		if err != nil {
			return nil, err
		}
		steps, cur = append(steps, s), s.to
	} else if from != ND && to != ND && to != NZ {
		out := cur.WithDims(permuteDims(cur.AllDims(), LayoutPerm(from, to)))
		out.Layout = Layout{Kind: to}
		return []layoutStep{{kind: stepPermute, perm: LayoutPerm(from, to), from: x, to: out}}, nil
	} else if from != ND {
		nd := cur.WithDims(cur.AllDims())
		nd.Layout = Layout{}
		steps, cur = append(steps, layoutStep{kind: stepRetag, from: cur, to: nd}), nd
	}
	switch to {
	case ND:
	case NZ:
		s, err := toNZStep(cur)
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	default:
		if len(cur.Shape) != 4 {
			return nil, Errorf(ShapeError, "layout_transform: layout %s needs a 4-D tensor, got shape %s", to, cur.ShapeString()).
				Because("%s names the four axes of an image batch", to)
		}
		out := cur.WithDims(cur.AllDims())
		out.Layout = Layout{Kind: to}
		steps = append(steps, layoutStep{kind: stepRetag, from: cur, to: out})
	}
	return steps, nil
}

func permuteDims(dims []Dim, perm []int) []Dim {
	out := make([]Dim, len(perm))
	for i, p := range perm {
		out[i] = dims[p]
	}
	return out
}

func toNZStep(x TensorType) (layoutStep, *Error) {
	r := len(x.Shape)
	if r < 2 {
		return layoutStep{}, Errorf(ShapeError, "layout_transform: NZ holds matrices [..., M, K], got shape %s", x.ShapeString()).
			Suggest("reshape a vector to a [1, n] matrix first")
	}
	if x.IsSymbolic() {
		return layoutStep{}, Errorf(ShapeError, "layout_transform: NZ needs a concrete shape, got %s", x.ShapeString()).
			Because("the fractal counts ceil(M/16) and ceil(K/C0) are part of an NZ tensor's type").
			Suggest("convert to NZ where the matrix size is fixed, or compile with concrete shapes")
	}
	out := TensorType{DType: x.DType, Shape: NZShape(x.Shape, x.DType),
		Layout: Layout{Kind: NZ, Rows: x.Shape[r-2], Cols: x.Shape[r-1]}}
	if msg := checkType(out); msg != "" {
		return layoutStep{}, Errorf(ShapeError, "layout_transform: %s", msg)
	}
	return layoutStep{kind: stepToNZ, from: x, to: out}, nil
}

func fromNZStep(x TensorType) (layoutStep, *Error) {
	r := len(x.Shape)
	out := TensorType{DType: x.DType, Shape: append(x.Shape[:r-4].Clone(), x.Layout.Rows, x.Layout.Cols)}
	return layoutStep{kind: stepFromNZ, from: x, to: out}, nil
}

func targetLayout(attrs Attrs) (LayoutKind, *Error) {
	name := attrs.Str("layout", "")
	if name == "" {
		return 0, Errorf(ValueError, "layout_transform: no target layout given").
			Suggest("name one of ND, NCHW, NHWC, CHWN, NZ, e.g. p.layout_transform(x, p.NHWC)")
	}
	k, err := ParseLayoutKind(name)
	if err != nil {
		return 0, Errorf(ValueError, "layout_transform: %v", err)
	}
	return k, nil
}

func layoutTransformType(x TensorType, attrs Attrs) (TensorType, *Error) {
	to, err := targetLayout(attrs)
	if err != nil {
		return TensorType{}, err
	}
	steps, err := layoutSteps(x, to)
	if err != nil {
		return TensorType{}, err
	}
	if len(steps) == 0 {
		return x.clone(), nil
	}
	return steps[len(steps)-1].to, nil
}

func inferLayoutTransform(in []TensorType, attrs Attrs) (TensorType, *Error) {
	return layoutTransformType(in[0], attrs)
}

func symLayoutTransformRule(_ *symCtx, in []TensorType, attrs Attrs) ([]Dim, *Error) {
	t, err := layoutTransformType(in[0], attrs)
	if err != nil {
		return nil, err
	}
	return t.AllDims(), nil
}

func evalLayoutTransform(in []*Array, attrs Attrs, out *Array) {
	to, _ := targetLayout(attrs)
	steps, _ := layoutSteps(in[0].Type, to)
	cur := in[0]
	for _, s := range steps {
		next := NewArray(s.to)
		switch s.kind {
		case stepRetag:
			copy(next.Data, cur.Data)
		case stepPermute:
			evalTranspose([]*Array{cur}, Attrs{"perm": int64s(s.perm)}, next)
		case stepToNZ:
			nzCopy(cur, next, true)
		case stepFromNZ:
			nzCopy(next, cur, false)
		}
		cur = next
	}
	copy(out.Data, cur.Data)
}

// nzCopy moves the elements between a matrix nd [..., M, K] and its NZ form nz
// [..., K1, M1, 16, C0]: into nz when toNZ (padding stays 0), else into nd.
func nzCopy(nd, nz *Array, toNZ bool) {
	s := nz.Type.Shape
	r := len(s)
	k1, m1, c0 := s[r-4], s[r-3], s[r-1]
	ns := nd.Type.Shape
	m, k := ns[len(ns)-2], ns[len(ns)-1]
	batch := Shape(s[:r-4]).NumElements()
	frac := k1 * m1 * FractalRows * c0
	for b := 0; b < batch; b++ {
		for i := 0; i < m; i++ {
			for j := 0; j < k; j++ {
				src := b*m*k + i*k + j
				dst := b*frac + (((j/c0)*m1+i/FractalRows)*FractalRows+i%FractalRows)*c0 + j%c0
				if toNZ {
					nz.Data[dst] = nd.Data[src]
				} else {
					nd.Data[src] = nz.Data[dst]
				}
			}
		}
	}
}

// decomposeLayoutTransform plans the steps from the type of its input value; within
// DecomposeGraph, which works on the physical (all-ND) graph, the input's original
// layout comes from the graph instead (decomposeLayoutTransformFrom).
func decomposeLayoutTransform(b *Builder, in []Value, attrs Attrs, loc Location) (Value, error) {
	return decomposeLayoutTransformFrom(b, in, []TensorType{b.Type(in[0])}, attrs, loc)
}

func decomposeLayoutTransformFrom(b *Builder, in []Value, types []TensorType, attrs Attrs, loc Location) (Value, error) {
	d := newDec(b, loc)
	to, err := targetLayout(attrs)
	if err != nil {
		return -1, err.WithLoc(loc)
	}
	steps, err := layoutSteps(types[0], to)
	if err != nil {
		return -1, err.WithLoc(loc)
	}
	v := in[0]
	for _, s := range steps {
		switch s.kind {
		case stepRetag:
			v = d.op("reshape", Attrs{"shape": int64s(s.to.Shape)}, v)
		case stepPermute:
			v = d.op("transpose", Attrs{"perm": int64s(s.perm)}, v)
		case stepToNZ:
			v = decomposeToNZ(d, v, s)
		case stepFromNZ:
			v = decomposeFromNZ(d, v, s)
		}
	}
	if len(steps) == 0 { // a copy, so that the result is a value of its own
		v = d.op("reshape", Attrs{"shape": int64s(types[0].Shape)}, v)
	}
	return d.done(v)
}

func decomposeToNZ(d *dec, v Value, s layoutStep) Value {
	ns, zs := s.from.Shape, s.to.Shape
	r, nb := len(zs), len(ns)-2
	k1, m1, c0 := zs[r-4], zs[r-3], zs[r-1]
	if pm, pk := m1*FractalRows-ns[nb], k1*c0-ns[nb+1]; pm > 0 || pk > 0 {
		pads := make([]int64, 2*len(ns))
		pads[2*nb+1], pads[2*nb+3] = int64(pm), int64(pk)
		v = d.op("pad", Attrs{"pads": pads, "value": 0.0}, v)
	}
	split := append(ns[:nb].Clone(), m1, FractalRows, k1, c0)
	v = d.op("reshape", Attrs{"shape": int64s(split)}, v)
	return d.op("transpose", Attrs{"perm": int64s(batchPerm(nb, nb+2, nb, nb+1, nb+3))}, v)
}

func decomposeFromNZ(d *dec, v Value, s layoutStep) Value {
	zs, ns := s.from.Shape, s.to.Shape
	r, nb := len(zs), len(zs)-4
	k1, m1, c0 := zs[r-4], zs[r-3], zs[r-1]
	v = d.op("transpose", Attrs{"perm": int64s(batchPerm(nb, nb+1, nb+2, nb, nb+3))}, v)
	full := append(zs[:nb].Clone(), m1*FractalRows, k1*c0)
	v = d.op("reshape", Attrs{"shape": int64s(full)}, v)
	if full.Equal(ns) {
		return v
	}
	starts, stops, steps := make([]int64, len(ns)), int64s(ns), make([]int64, len(ns))
	for i := range steps {
		steps[i] = 1
	}
	return d.op("slice", Attrs{"starts": starts, "stops": stops, "steps": steps}, v)
}

// batchPerm is the identity on nb leading axes followed by tail.
func batchPerm(nb int, tail ...int) []int {
	perm := make([]int, 0, nb+len(tail))
	for i := 0; i < nb; i++ {
		perm = append(perm, i)
	}
	return append(perm, tail...)
}

// typedDecompositions are decompositions that need the original types of their inputs,
// which DecomposeGraph's physical graph no longer carries (layouts are dropped there).
var typedDecompositions = map[string]func(b *Builder, in []Value, types []TensorType, attrs Attrs, loc Location) (Value, error){
	"layout_transform": decomposeLayoutTransformFrom,
}
