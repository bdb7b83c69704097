package core

import (
	"encoding/binary"
	"math"

	"pypto/dtype"
)

// int64 is a dtype of the Tensor Graph (numpy's default integer: inputs, indices,
// argmax results), but the chip computes integers in at most 32 bits. NarrowInt64
// rebuilds a graph with every int64 value computed in int32; the session checks that
// the int64 inputs of a run fit int32 (Int64Plan.Narrow) and widens the int64 results
// back (Int64Plan.Widen), so the compilers below it never see an int64.

// Int64Input is a graph input that was int64: its position among the params and the
// first op that reads it, which range errors name. An input that only casts read
// (x.astype(p.float32)) is cast on the host instead, to HostCast, so that int64
// values past int32 can still be converted.
type Int64Input struct {
	Param    int
	Op       string
	Node     Value // of the op, -1 for none (see Error.Node)
	Loc      Location
	HostCast dtype.DType // Invalid: narrowed to int32 with a range check
}

// Int64Plan says which inputs of a narrowed graph to narrow, which outputs to widen and
// which extra outputs check the int64 results (narrow_int64_check.go).
type Int64Plan struct {
	Inputs  []Int64Input
	Outputs []bool // per output of the graph: int64 in the original
	Checks  []Int64Check
}

// HasInt64 reports whether any value of g is int64.
func HasInt64(g *Graph) bool {
	for _, n := range g.Nodes {
		if n.Type.DType == dtype.Int64 {
			return true
		}
	}
	return false
}

// NarrowInt64 returns g with its int64 values in int32 (see above). A constant that
// does not fit int32 is a ValueError naming its op; an int64 result that can leave
// int32 while computing is checked when the program runs (docs/ops.md's int64 column):
// the narrowed graph has an extra output per check, after g's.
func NarrowInt64(g *Graph) (*Graph, Int64Plan, error) {
	var plan Int64Plan
	out := NewBuilder(g.Name)
	vals := make([]Value, len(g.Nodes))
	users := g.Users()
	hostCast := map[Value]bool{} // casts done on the host: their param stands for them
	var flags []Value            // the checks' outputs, in plan.Checks' order
	outputs := g.OutputSet()
	for k, p := range g.Params {
		n := g.Nodes[p]
		t := n.Type.clone()
		if t.DType == dtype.Int64 {
			t.DType = dtype.Int32
			in := Int64Input{Param: k, Op: "the program's result", Node: -1}
			if u := users[p]; len(u) > 0 {
				in.Op, in.Node, in.Loc = g.Nodes[u[0]].Op, u[0], g.Nodes[u[0]].Loc
				if d := onlyCast(g, users[p]); d != dtype.Invalid && !outputs[p] {
					t.DType, in.HostCast = d, d
					for _, c := range users[p] {
						hostCast[c] = true
					}
				}
			}
			plan.Inputs = append(plan.Inputs, in)
		}
		vals[p] = out.Param(n.Name, t)
	}
	for i, n := range g.Nodes {
		if n.Op == OpParam {
			continue
		}
		if hostCast[Value(i)] {
			vals[i] = vals[n.Inputs[0]]
			continue
		}
		attrs, aerr := narrowAttrs(n)
		if aerr != nil {
			return nil, plan, aerr
		}
		v, err := out.Op(n.Op, n.mapInputs(vals), attrs, n.Loc)
		if err != nil {
			return nil, plan, err
		}
		want := n.Type.clone()
		if want.DType == dtype.Int64 {
			want.DType = dtype.Int32
		}
		if !out.Type(v).Equal(want) {
			return nil, plan, Errorf(InternalError, "graph %s: narrowing int64: %s gives %s, not %s", quoteName(g.Name), n.Op, out.Type(v), want)
		}
		vals[i] = v
		flag, cerr := addInt64Check(out, n, n.mapInputs(vals), v)
		if cerr != nil {
			return nil, plan, AsInternal(cerr, "checking the int64 result of %s", n.Op)
		}
		if flag >= 0 {
			flags = append(flags, flag)
			plan.Checks = append(plan.Checks, Int64Check{Op: n.Op, Node: Value(i), Loc: n.Loc})
		}
	}
	for _, o := range g.Outputs {
		out.Output(vals[o])
		plan.Outputs = append(plan.Outputs, g.Nodes[o].Type.DType == dtype.Int64)
	}
	for k, f := range flags {
		plan.Checks[k].Output = len(g.Outputs) + k
		out.Output(f)
	}
	return out.Graph(), plan, nil
}

// onlyCast is the dtype (not int64) that every one of users casts to, or Invalid.
func onlyCast(g *Graph, users []Value) dtype.DType {
	d := dtype.Invalid
	for _, u := range users {
		n := g.Nodes[u]
		if n.Op != "cast" || n.Type.DType == dtype.Int64 || d != dtype.Invalid && n.Type.DType != d {
			return dtype.Invalid
		}
		d = n.Type.DType
	}
	return d
}

// narrowAttrs turns a node's int64 dtype attribute (cast, full, the index ops) into
// int32, checking that a full's value fits.
func narrowAttrs(n *Node) (Attrs, *Error) {
	s, ok := n.Attrs["dtype"].(string)
	if !ok {
		return n.Attrs, nil
	}
	if d, err := dtype.Parse(s); err != nil || d != dtype.Int64 {
		return n.Attrs, nil
	}
	if n.Op == "full" {
		if v := n.Attrs.Float("value", 0); v < math.MinInt32 || v > math.MaxInt32 {
			return nil, Errorf(ValueError, "%s: the int64 value %.0f does not fit int32, which the chip computes int64 in", n.Op, v).
				WithLoc(n.Loc).Suggest("keep int64 values in [-2**31, 2**31 - 1], or use float32")
		}
	}
	a := make(Attrs, len(n.Attrs))
	for k, v := range n.Attrs {
		a[k] = v
	}
	a["dtype"] = "int32"
	return a, nil
}

// Int64Checked reports whether op's int64 results are checked to fit int32 when the
// program runs (the ops whose results can leave it: see narrow_int64_check.go).
func Int64Checked(op string) bool { _, ok := int64Checks[op]; return ok }

// Narrow converts the int64 inputs of a run (little-endian bytes, one buffer per
// param) to int32, checking every value; the other buffers are passed through.
func (p Int64Plan) Narrow(inputs [][]byte) ([][]byte, *Error) {
	if len(p.Inputs) == 0 {
		return inputs, nil
	}
	out := append([][]byte(nil), inputs...)
	for _, in := range p.Inputs {
		b, err := narrowBytes(inputs[in.Param], in)
		if err != nil {
			return nil, err
		}
		out[in.Param] = b
	}
	return out, nil
}

// NarrowInput is what Narrow makes of input i alone: b itself, or b narrowed when
// input i is int64.
func (p Int64Plan) NarrowInput(i int, b []byte) ([]byte, *Error) {
	for _, in := range p.Inputs {
		if in.Param == i {
			return narrowBytes(b, in)
		}
	}
	return b, nil
}

func narrowBytes(b []byte, in Int64Input) ([]byte, *Error) {
	n := len(b) / 8
	if in.HostCast != dtype.Invalid {
		return castBytes(b, in.HostCast), nil
	}
	out := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		v := int64(binary.LittleEndian.Uint64(b[8*i:]))
		if v < math.MinInt32 || v > math.MaxInt32 {
			e := Errorf(ValueError, "%s: an int64 input holds the value %d (at flat index %d), which does not fit int32: the chip computes int64 in int32", in.Op, v, i)
			e.Node = int(in.Node) + 1
			return nil, e.WithLoc(in.Loc).
				Suggest("keep int64 values in [-2**31, 2**31 - 1], or convert the input first: x.astype(p.float32) (exact to 2**24) or x.astype(p.int32) (wraps)")
		}
		binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(v)))
	}
	return out, nil
}

// castBytes is cast's conversion of int64 values to d (round to nearest even; integers
// wrap), on the host.
func castBytes(b []byte, d dtype.DType) []byte {
	n := len(b) / 8
	out := make([]byte, n*d.Size())
	for i := 0; i < n; i++ {
		v := int64(binary.LittleEndian.Uint64(b[8*i:]))
		switch d {
		case dtype.Float32: // rounded once, from the exact value
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v)))
		case dtype.Int32:
			binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
		case dtype.Int8:
			out[i] = byte(v)
		default:
			dtype.Store(d, out, i, float64(v))
		}
	}
	return out
}

// Widen converts the int32 results of a narrowed run that were int64 back to int64,
// after the checks: the first (in graph order) whose result left int32 is the error.
// It returns the graph's own outputs, without the checks'.
func (p Int64Plan) Widen(outs [][]byte) ([][]byte, *Error) {
	for _, c := range p.Checks {
		if c.Output < len(outs) && len(outs[c.Output]) > 0 && outs[c.Output][0] != 0 {
			return nil, int64Overflow(c)
		}
	}
	if len(p.Checks) > 0 && len(outs) > len(p.Outputs) {
		outs = outs[:len(p.Outputs)]
	}
	for k, wide := range p.Outputs {
		if !wide || k >= len(outs) {
			continue
		}
		src := outs[k]
		b := make([]byte, 2*len(src))
		for i := 0; i+4 <= len(src); i += 4 {
			v := int32(binary.LittleEndian.Uint32(src[i:]))
			binary.LittleEndian.PutUint64(b[2*i:], uint64(int64(v)))
		}
		outs[k] = b
	}
	return outs, nil
}
