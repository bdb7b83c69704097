package core

import "fmt"

// How layouts flow through ops. Tensors of different layouts never meet silently: an op
// given two operands of different non-ND layouts is an error that names the conversion
// to insert. ND operands (no claim) may meet a 4-D layout, whose axes they then share;
// beside NZ, only 0-d operands (scalars) are accepted, as an NZ tensor's axes are
// fractal positions, not matrix axes.
//
//   - elementwise ops keep their operands' layout (when the result still fits it);
//   - softmax, log_softmax, cumsum, sort, argsort, layer_norm and rms_norm keep the
//     layout of x (not NZ: their axis would cut across fractals);
//   - slice, pad and concat keep a 4-D layout;
//   - every other op gives ND (its axes no longer mean N, C, H, W, or no longer hold
//     fractals); compute ops refuse NZ, while the view ops (reshape, transpose, slice,
//     broadcast_to, squeeze, unsqueeze) take it as the plain array of its fractals;
//   - layout_transform says its result's layout itself.

// layoutKeepingAlongAxis are the ops that keep x's shape and act along axes of it.
var layoutKeepingAlongAxis = map[string]bool{
	"softmax": true, "log_softmax": true, "cumsum": true, "sort": true, "argsort": true,
	"layer_norm": true, "rms_norm": true,
}

// viewOps move data without computing; on an NZ tensor they see its stored array.
var viewOps = map[string]bool{"reshape": true, "transpose": true, "slice": true, "broadcast_to": true, "squeeze": true, "unsqueeze": true}

// layoutKeepingWindows are the ops that keep the meaning of every axis of a 4-D layout.
var layoutKeepingWindows = map[string]bool{"slice": true, "pad": true, "concat": true}

// checkLayouts refuses operands whose layouts cannot meet in op; it runs before type
// inference, as a layout mismatch explains a shape mismatch better than the shapes do.
func checkLayouts(op string, in []TensorType) *Error {
	if op == "layout_transform" {
		return nil
	}
	tagged, at := taggedOperand(in)
	if tagged == nil {
		return nil
	}
	l := tagged.Layout
	for i := range in {
		if in[i].Layout.IsND() || len(in[i].Shape) == 0 || in[i].Layout == l {
			continue
		}
		return Errorf(ShapeError, "%s: operand %d has layout %s but operand %d has layout %s", op, i, in[i].Layout, at, l).
			Because("tensors of different layouts hold their axes (or fractals) in different orders").
			Suggest("convert one first, e.g. p.layout_transform(operand_%d, p.%s)", i, l.Kind)
	}
	if l.Kind != NZ {
		if layoutKeepingAlongAxis[op] && at != 0 {
			return Errorf(ShapeError, "%s: operand %d has layout %s but x (operand 0) is ND", op, at, l).
				Suggest("convert x first: p.layout_transform(x, p.%s)", l.Kind)
		}
		return nil
	}
	switch {
	case isBroadcastOp(op):
		for i := range in {
			if in[i].Layout.IsND() && len(in[i].Shape) > 0 {
				return Errorf(ShapeError, "%s: operand %d is ND and operand %d is %s", op, i, at, l).
					Because("an NZ tensor's axes are fractal positions, so a plain array does not line up with them").
					Suggest("convert operand %d to NZ (p.layout_transform(operand_%d, p.NZ)) or operand %d to ND", i, i, at)
			}
		}
	case viewOps[op]:
	default:
		return nzError(op, fmt.Sprintf("operand %d has layout %s", at, l))
	}
	return nil
}

// taggedOperand is the first operand (not 0-d) with a layout other than ND.
func taggedOperand(in []TensorType) (*TensorType, int) {
	for i := range in {
		if !in[i].Layout.IsND() && len(in[i].Shape) > 0 {
			return &in[i], i
		}
	}
	return nil, -1
}

// resultLayout decides the layout of an op's result t from its inputs, which
// checkLayouts has accepted.
func resultLayout(op string, in []TensorType, t TensorType, attrs Attrs) (Layout, *Error) {
	if op == "layout_transform" {
		lt, err := layoutTransformType(in[0], attrs)
		return lt.Layout, err
	}
	tagged, _ := taggedOperand(in)
	if tagged == nil {
		return Layout{}, nil
	}
	l := tagged.Layout
	keeps := isBroadcastOp(op) || layoutKeepingAlongAxis[op] || (layoutKeepingWindows[op] && l.Kind != NZ)
	if !keeps || checkLayout(TensorType{DType: t.DType, Shape: t.Shape, Dims: t.Dims, Layout: l}) != "" {
		return Layout{}, nil // another meaning of the axes, or a result that no longer fits (5-D)
	}
	return l, nil
}

func nzError(op, what string) *Error {
	return Errorf(ShapeError, "%s: %s, which this op cannot take", op, what).
		Because("an NZ tensor's axes are fractal positions [..., K1, M1, 16, C0], not the matrix's rows and columns").
		Suggest("convert it to the plain matrix first: p.layout_transform(x, p.ND)")
}

// isBroadcastOp reports whether op's symbolic rule is plain broadcasting, which is
// what makes it elementwise.
func isBroadcastOp(op string) bool { return broadcastOps[op] }

var broadcastOps = map[string]bool{}

// IsElementwise reports whether op is elementwise: its result has the broadcast shape of
// its inputs and each element depends on the elements at the same position.
func IsElementwise(op string) bool { return broadcastOps[op] }
