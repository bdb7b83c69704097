package core

import (
	"fmt"
	"math"
	"slices"

	"pypto/dtype"
)

// A symbolic graph can run a size n of a symbol on a program specialised for a larger
// bound u: the inputs are padded with zeros along the symbol's axes to u, the program
// computes the padded positions too, and the results are cut back to n. That is exact
// only where no padded position flows into a valid one. PlanPadding proves it op by op:
//
//   - positions along padded axes stay apart in elementwise ops, transposes, matmuls
//     that contract another axis, reductions and normalisations over other axes, and
//     reshapes that keep the padded axes as a leading prefix;
//   - a softmax over a padded last axis (attention's keys) reads -inf past n (a select
//     by a mask, true at valid positions, before it), so that its padded probabilities
//     are exactly 0 and its valid ones the same values whatever the padding computed
//     there (a program whose kernels compute only the valid rows leaves the bytes past
//     them unwritten: a sum with -inf could be NaN there, a select is not);
//   - a matmul contracting such probabilities with an operand along the padded axis
//     (attention's P V) reads that operand with its padded rows set to 0, so that the
//     products added for them are exact zeros whatever the padding computed there;
//   - scaled_dot_product_attention over padded keys drops them by causality (keys
//     padded with the queries) or by a key mask (a bool one the user gives, padded
//     False, or one the plan adds), and reads its values with their padded rows set to
//     0 (checkAttention).
//
// Any other use of a padded axis (slicing, concatenation, a reduction over it, ...)
// makes the plan fail with the op that prevents it.

// PadPlan says how graph g runs padded: which softmax nodes take a mask and which
// matmul operands are zeroed, and the extra params they read.
type PadPlan struct {
	g       *Graph
	symbols map[string]bool
	order   []string // the symbols, in the order of the sizes param
	// masked: softmax node -> index in Masks of the mask that selects its input.
	masked map[int]int
	// keyMasked: attention node -> index in Masks of the mask that drops its padded
	// keys (its mask input, or combined with the user's).
	keyMasked map[int]int
	// zeroed: matmul node -> (operand index, index in Keeps of the rows kept).
	zeroed map[int][2]int
	Masks  []PadMask // of softmax inputs: true for a valid key (else -inf)
	Keeps  []PadMask // of matmul operands: true for a valid row (else 0)
}

// PadMask is an extra param of a padded program: every axis 1 but Axis, which is the
// symbol Symbol.
type PadMask struct {
	Symbol string
	Axis   int
	Rank   int
	DType  dtype.DType
}

// Type is the mask's symbolic type.
func (m PadMask) Type() TensorType {
	shape := make([]Dim, m.Rank)
	for i := range shape {
		shape[i] = DimConst(1)
	}
	shape[m.Axis] = DimSym(m.Symbol)
	return SymbolicType(m.DType, shape)
}

// PlanPadding returns how g runs padded along the given symbols, or an error naming
// the op that reads padded positions into valid ones.
func PlanPadding(g *Graph, symbols []string) (*PadPlan, error) {
	p := &PadPlan{g: g, symbols: map[string]bool{}, order: append([]string(nil), symbols...), masked: map[int]int{}, keyMasked: map[int]int{}, zeroed: map[int][2]int{}}
	for _, s := range symbols {
		p.symbols[s] = true
	}
	probs := map[int]bool{} // softmax outputs exactly 0 at padded positions of their last axis
	for i, n := range g.Nodes {
		why := p.check(i, n, probs)
		if why != "" {
			return nil, Errorf(ValueError, "%s at %s cannot run padded: %s", n.Op, n.Loc, why)
		}
	}
	for _, o := range g.Outputs {
		for ax, d := range g.Nodes[o].Type.AllDims() {
			if p.padded(d) && !p.bare(d) {
				return nil, Errorf(ValueError, "an output has %s at axis %d, not a symbol alone, so a padded result cannot be cut back", d, ax)
			}
		}
	}
	return p, nil
}

func (p *PadPlan) padded(d Dim) bool {
	for _, s := range d.Symbols() {
		if p.symbols[s] {
			return true
		}
	}
	return false
}

func (p *PadPlan) bare(d Dim) bool {
	syms := d.Symbols()
	return len(syms) == 1 && d.String() == syms[0]
}

// paddedAxes lists the axes of t whose size depends on a padded symbol.
func (p *PadPlan) paddedAxes(t TensorType) []int {
	var out []int
	for i, d := range t.AllDims() {
		if p.padded(d) {
			out = append(out, i)
		}
	}
	return out
}

// check returns why node i cannot run padded, or "".
func (p *PadPlan) check(i int, n *Node, probs map[int]bool) string {
	in := func(k int) TensorType { return p.g.Nodes[n.Inputs[k]].Type }
	axisPadded := func(t TensorType, ax int) bool {
		dims := t.AllDims()
		if ax < 0 {
			ax += len(dims)
		}
		return ax >= 0 && ax < len(dims) && p.padded(dims[ax])
	}
	switch {
	case n.Op == OpParam:
		for _, d := range n.Type.AllDims() {
			if p.padded(d) && !p.bare(d) {
				return fmt.Sprintf("the input has the axis %s, not a symbol alone", d)
			}
		}
	case broadcastOps[n.Op], n.Op == "transpose", n.Op == "full" && len(p.paddedAxes(n.Type)) == 0:
	case n.Op == "linear":
		if axisPadded(in(0), -1) || len(p.paddedAxes(in(1))) > 0 || (len(n.Inputs) > 2 && len(p.paddedAxes(in(2))) > 0) {
			return "it contracts or weighs a padded axis"
		}
	case n.Op == "matmul" || n.Op == "batch_matmul":
		ka, kb := -1, -2
		if n.Attrs.Bool("transpose_a", false) {
			ka = -2
		}
		if n.Attrs.Bool("transpose_b", false) {
			kb = -1
		}
		if !axisPadded(in(0), ka) && !axisPadded(in(1), kb) {
			return ""
		}
		if ka != -1 || !probs[int(n.Inputs[0])] {
			return "it contracts a padded axis whose padded positions are not known to be 0 (only softmax probabilities over it are)"
		}
		b := in(1)
		axis := len(b.Shape) + kb
		d := b.AllDims()[axis]
		if !p.bare(d) {
			return fmt.Sprintf("its contracted axis is %s, not a symbol alone", d)
		}
		p.zeroed[i] = [2]int{1, p.mask(&p.Keeps, PadMask{Symbol: d.String(), Axis: axis, Rank: len(b.Shape), DType: dtype.Bool})}
	case n.Op == "scaled_dot_product_attention":
		return p.checkAttention(i, n, axisPadded)
	case n.Op == "softmax":
		t := in(0)
		ax := n.Attrs.Int("axis", -1)
		if !axisPadded(t, ax) {
			return ""
		}
		if ax != -1 && ax != len(t.Shape)-1 {
			return "it normalises a padded axis that is not the last"
		}
		d := t.AllDims()[len(t.Shape)-1]
		if !p.bare(d) {
			return fmt.Sprintf("it normalises the axis %s, not a symbol alone", d)
		}
		p.masked[i] = p.mask(&p.Masks, PadMask{Symbol: d.String(), Axis: len(t.Shape) - 1, Rank: len(t.Shape), DType: dtype.Bool})
		probs[i] = true
	case reduceLike[n.Op]:
		t := in(0)
		axes := n.Attrs.Ints("axis")
		if v, ok := n.Attrs["axis"].(int64); ok {
			axes = []int{int(v)}
		}
		if len(axes) == 0 && len(p.paddedAxes(t)) > 0 {
			return "it reduces over every axis, padded ones included"
		}
		for _, ax := range axes {
			if axisPadded(t, ax) {
				return "it reduces over a padded axis"
			}
		}
	case n.Op == "reshape":
		a, b := in(0).AllDims(), n.Type.AllDims()
		last := -1
		for _, ax := range p.paddedAxes(in(0)) {
			last = ax
		}
		if last < 0 && len(p.paddedAxes(n.Type)) == 0 {
			return ""
		}
		if last >= len(b) || !slices.EqualFunc(a[:last+1], b[:last+1], func(x, y Dim) bool { return x.String() == y.String() }) ||
			len(p.paddedAxes(n.Type)) != len(p.paddedAxes(in(0))) {
			return "it reshapes padded axes (only axes after them may be merged or split)"
		}
	default:
		for k := range n.Inputs {
			if len(p.paddedAxes(in(k))) > 0 {
				return "it reads a padded axis in a way padding would change"
			}
		}
		if len(p.paddedAxes(n.Type)) > 0 {
			return "it makes a padded axis"
		}
	}
	return ""
}

// checkAttention returns why attention node i (q [..., L, E], k [..., S, E], v [..., S,
// Ev], an optional mask broadcast to [..., L, S]) cannot run padded, or "". Padded
// query rows stay apart (each row attends on its own; a padded one computes what it
// may and is cut). Padded keys are never seen by a valid query when:
//
//   - the attention is causal and its keys are padded with its queries (one symbol
//     alone on both axes): a valid query i attends to keys j <= i < n only, the rest
//     dropped by the causal mask whatever they hold;
//   - otherwise a key mask drops them: a bool mask along the keys (padded False) or a
//     mask param the plan adds, true for the run's keys, combined with the user's.
//
// Dropped scores are -inf by a select, whatever the padded keys computed (NaN
// included), so their probabilities are exact zeros; the padded value rows they meet
// are set to 0 (a keep mask, as for P V), so that no NaN a padded row may hold reaches
// a valid one through 0 * NaN.
func (p *PadPlan) checkAttention(i int, n *Node, axisPadded func(TensorType, int) bool) string {
	in := func(k int) TensorType { return p.g.Nodes[n.Inputs[k]].Type }
	q, k, v := in(0), in(1), in(2)
	if axisPadded(q, -1) || axisPadded(k, -1) || axisPadded(v, -1) {
		return "it contracts a padded head dimension"
	}
	if !axisPadded(k, -2) && !axisPadded(v, -2) {
		if len(n.Inputs) == 4 && len(p.paddedAxes(in(3))) > 0 && !axisPadded(in(3), -2) {
			return "its mask is padded along an axis the scores do not pad"
		}
		return ""
	}
	kd, vd := k.AllDims()[len(k.Shape)-2], v.AllDims()[len(v.Shape)-2]
	if !p.bare(kd) || kd.String() != vd.String() {
		return fmt.Sprintf("its keys are %s and its values %s, not one symbol alone", kd, vd)
	}
	keep := PadMask{Symbol: kd.String(), Axis: len(v.Shape) - 2, Rank: len(v.Shape), DType: dtype.Bool}
	if n.Attrs.Bool("is_causal", false) {
		if qd := q.AllDims()[len(q.Shape)-2]; qd.String() != kd.String() {
			return fmt.Sprintf("it is causal over keys %s padded apart from its queries %s", kd, qd)
		}
		p.zeroed[i] = [2]int{2, p.mask(&p.Keeps, keep)}
		return ""
	}
	if len(n.Inputs) == 4 {
		m := in(3)
		if m.DType == dtype.Bool && axisPadded(m, -1) && p.bare(m.AllDims()[len(m.Shape)-1]) && m.AllDims()[len(m.Shape)-1].String() == kd.String() {
			// a key-padding mask: its padded keys are False, dropped
			p.zeroed[i] = [2]int{2, p.mask(&p.Keeps, keep)}
			return ""
		}
	}
	rank := max(len(q.Shape), len(k.Shape))
	if len(n.Inputs) == 4 {
		rank = max(rank, len(in(3).Shape))
	}
	p.keyMasked[i] = p.mask(&p.Masks, PadMask{Symbol: kd.String(), Axis: rank - 1, Rank: rank, DType: dtype.Bool})
	p.zeroed[i] = [2]int{2, p.mask(&p.Keeps, keep)}
	return ""
}

// reduceLike are the ops that combine positions along their "axis" attribute only.
var reduceLike = map[string]bool{"sum": true, "prod": true, "max": true, "min": true, "mean": true, "var": true,
	"std": true, "argmax": true, "argmin": true, "log_softmax": true, "layer_norm": true, "rms_norm": true,
	"cumsum": true, "any": true, "all": true}

func (p *PadPlan) mask(list *[]PadMask, m PadMask) int {
	if k := slices.Index(*list, m); k >= 0 {
		return k
	}
	*list = append(*list, m)
	return len(*list) - 1
}

// Params are the types of the extra params a padded program reads after g's own, in
// order: the softmax masks, the rows kept, then the sizes.
func (p *PadPlan) Params() []TensorType {
	var out []TensorType
	for _, m := range p.Masks {
		out = append(out, m.Type())
	}
	for _, m := range p.Keeps {
		out = append(out, m.Type())
	}
	return append(out, p.sizesType())
}

// Symbols are the padded symbols, in the order of the sizes param.
func (p *PadPlan) Symbols() []string { return append([]string(nil), p.order...) }

// sizesType is the type of the last extra param: the run's value of every symbol (in
// the order of Symbols) as int32, so that a program compiled for a bound can compute
// only what the run's sizes need.
func (p *PadPlan) sizesType() TensorType {
	return TensorType{DType: dtype.Int32, Shape: Shape{len(p.order)}}
}

// SizesParam is the position of the sizes param among the padded program's params.
func (p *PadPlan) SizesParam() int { return len(p.g.Params) + len(p.Masks) + len(p.Keeps) }

// Extents gives, for every param of the padded program, per axis the index in Symbols
// of the symbol whose run value is the number of valid (unpadded) positions along it,
// or -1 for an axis that is not padded.
func (p *PadPlan) Extents() [][]int {
	index := map[string]int{}
	for i, s := range p.order {
		index[s] = i
	}
	of := func(t TensorType) []int {
		out := make([]int, len(t.Shape))
		for ax, d := range t.AllDims() {
			out[ax] = -1
			if p.padded(d) && p.bare(d) {
				out[ax] = index[d.String()]
			}
		}
		return out
	}
	var out [][]int
	for _, prm := range p.g.Params {
		out = append(out, of(p.g.Nodes[prm].Type))
	}
	for _, t := range p.Params() {
		out = append(out, of(t))
	}
	return out
}

// SizesOf is each symbol's value in b, in the order of Symbols.
func (p *PadPlan) SizesOf(b Binding) []int {
	out := make([]int, len(p.order))
	for i, s := range p.order {
		out[i] = b[s]
	}
	return out
}

// Sizes is the sizes param's data for a run binding b: each symbol's value, int32
// little-endian.
func (p *PadPlan) Sizes(b Binding) []byte {
	out := make([]byte, 0, 4*len(p.order))
	for _, v := range p.SizesOf(b) {
		w := uint32(int32(v))
		out = append(out, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	return out
}

// NeedsMasks reports whether the padded program reads extra params.
func (p *PadPlan) NeedsMasks() bool { return len(p.Masks)+len(p.Keeps) > 0 }

// Specialize is g specialised for the bound b (core.Specialize's rules) with the masks
// of the plan as extra params after g's, applied where the plan says.
func (p *PadPlan) Specialize(b Binding) (*Graph, error) {
	var maskVals, keepVals []Value
	fills := map[[2]string]Value{} // (dtype, value) -> the scalar a select fills in
	// sel is where(keep, x, fill): fill past the valid positions, whatever x holds there.
	sel := func(out *Builder, keep, x Value, fill float64, loc Location) (Value, error) {
		dt := out.Type(x).DType
		key := [2]string{dt.String(), fmt.Sprint(fill)}
		c, ok := fills[key]
		if !ok {
			v, err := out.Op("full", nil, Attrs{"value": fill, "dtype": dt.String(), "shape": []int64{}}, loc)
			if err != nil {
				return 0, err
			}
			c, fills[key] = v, v
		}
		return out.Op("where", []Value{keep, x, c}, nil, loc)
	}
	return specializeWith(p.g, b, specializeHooks{
		params: func(out *Builder) {
			for k, m := range p.Masks {
				maskVals = append(maskVals, out.Param(fmt.Sprintf("pad_mask%d", k), m.Type().Substitute(b)))
			}
			for k, m := range p.Keeps {
				keepVals = append(keepVals, out.Param(fmt.Sprintf("pad_keep%d", k), m.Type().Substitute(b)))
			}
			out.Param("pad_sizes", p.sizesType())
		},
		inputs: func(out *Builder, i int, ins []Value, loc Location) ([]Value, error) {
			if k, ok := p.masked[i]; ok {
				v, err := sel(out, maskVals[k], ins[0], math.Inf(-1), loc)
				if err != nil {
					return nil, err
				}
				ins[0] = v
			}
			if k, ok := p.keyMasked[i]; ok {
				keys := maskVals[k]
				if len(ins) == 4 { // the user's mask too: a float one is -inf where keys are dropped
					var err error
					if out.Type(ins[3]).DType == dtype.Bool {
						keys, err = out.Op("logical_and", []Value{ins[3], keys}, nil, loc)
					} else {
						keys, err = sel(out, keys, ins[3], math.Inf(-1), loc)
					}
					if err != nil {
						return nil, err
					}
					ins[3] = keys
				} else {
					ins = append(ins, keys)
				}
			}
			if z, ok := p.zeroed[i]; ok {
				v, err := sel(out, keepVals[z[1]], ins[z[0]], 0, loc)
				if err != nil {
					return nil, err
				}
				ins[z[0]] = v
			}
			return ins, nil
		},
	})
}
