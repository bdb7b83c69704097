package core

import (
	"fmt"
	"strings"

	"pypto/dtype"
)

// OpsMarkdown renders the registry as the table of docs/ops.md: each op's inputs,
// attributes with defaults, the dtypes it accepts (found by asking its Infer, so the
// table cannot drift from the code), whether it is a composite, how gradients flow
// through it (its VJP rule, its decomposition, or why none does), and its doc line.
func OpsMarkdown() string {
	var b strings.Builder
	b.WriteString("# Tensor ops\n\nGenerated from the op registry (core/) by `go test ./core -run TestOpsDoc -update`;\n")
	b.WriteString("a test fails when this file is out of date. Composite ops are decomposed into the\n")
	b.WriteString("others by the compiler. Semantics and dtype rules: docs/api.md. The gradient column\n")
	b.WriteString("says how p.grad and backward() differentiate the op: by its VJP rule (core/vjp*.go),\n")
	b.WriteString("through its decomposition, or not at all (and why). The int64 column says how the chip\n")
	b.WriteString("runs the op on int64 tensors: no op runs natively in int64; every one runs in int32\n")
	b.WriteString("(core.NarrowInt64), the int64 inputs of a run checked to fit int32 (else a ValueError\n")
	b.WriteString("naming the op and the line), the int64 results widened back: \"int32\" ops then give what\n")
	b.WriteString("they give int32 tensors of the same values, which fit int32; \"int32, checked\" ops (sums,\n")
	b.WriteString("products, conversions from float), whose results can leave int32, give numpy's int64\n")
	b.WriteString("result, and a ValueError naming the op and the line when it leaves int32 (each is\n")
	b.WriteString("recomputed in float32 and compared, core/narrow_int64_check.go; cast to float32 first\n")
	b.WriteString("for larger results); \"-\" ops do not take int64.\n\n")
	b.WriteString("| op | inputs | attributes | dtypes | int64 | composite | gradient | notes |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, name := range OpNames() {
		if strings.Contains(name, "test") {
			continue // ops registered by other packages' tests
		}
		d, _ := LookupOp(name)
		attrs := make([]string, len(d.Attrs))
		for i, a := range d.Attrs {
			attrs[i] = a.Name + "=" + formatAttr(a.Default)
		}
		comp := ""
		if d.Decompose != nil {
			comp = "yes"
		}
		dts := acceptedDTypes(d)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", name, d.ArityString(), strings.Join(attrs, ", "),
			dts, int64Note(d, dts), comp, gradientNote(d), strings.ReplaceAll(d.Doc, "|", "\\|"))
	}
	b.WriteString(OpsDocPythonMarker)
	return b.String()
}

// OpsDocPythonMarker ends the registry's part of docs/ops.md: what follows it, the
// Python functions that compose registry ops, is generated on the Python side.
const OpsDocPythonMarker = "\n<!-- end of the registry's table; below: python tests/tensor_level/test_ops_doc.py --update -->\n"

// int64Note says how the chip runs d on int64 tensors, for the int64 column.
func int64Note(d *OpDef, accepted string) string {
	switch {
	case d.Arity > 0 && !strings.Contains(" "+accepted+" ", " i64 "):
		return "-"
	case Int64Checked(d.Name):
		return "int32, checked"
	}
	return "int32"
}

// gradientNote says how gradients flow through d, for the gradient column.
func gradientNote(d *OpDef) string {
	switch {
	case d.VJP != nil:
		return "rule"
	case d.NoGrad != "":
		return "none: " + d.NoGrad
	case d.Decompose != nil:
		return "decomposition"
	}
	return "missing"
}

// probeAttrs are attributes that make an op accept 2x2 inputs when its defaults do not.
var probeAttrs = map[string]Attrs{
	"reshape":          {"shape": []int64{4}},
	"broadcast_to":     {"shape": []int64{2, 2}},
	"unsqueeze":        {"axis": []int64{0}},
	"pad":              {"pads": []int64{0, 0, 0, 0}},
	"slice":            {"starts": []int64{0, 0}, "stops": []int64{2, 2}, "steps": []int64{1, 1}},
	"layout_transform": {"layout": "NZ"},
}

// probeInputs give the inputs of ops whose operands differ in shape or dtype from the
// first, for a first input of dtype dt.
var probeInputs = map[string]func(dt dtype.DType) []TensorType{
	"index_put": func(dt dtype.DType) []TensorType {
		return []TensorType{{DType: dt, Shape: Shape{2, 2}}, {DType: dt, Shape: Shape{2, 2}}, {DType: dtype.Int32, Shape: Shape{2}}}
	},
	"scatter": func(dt dtype.DType) []TensorType {
		return []TensorType{{DType: dt, Shape: Shape{2, 2}}, {DType: dtype.Int32, Shape: Shape{2, 2}}, {DType: dt, Shape: Shape{2, 2}}}
	},
}

// indexOperands are the ops whose later inputs are int32 indices.
var indexOperands = map[string]bool{"take_along_axis": true, "index_select": true}

// acceptedDTypes lists the dtypes d's first input may have, probing Infer with 2x2
// inputs (later inputs of the same dtype, or int32 for index operands).
func acceptedDTypes(d *OpDef) string {
	if d.Arity == 0 {
		return "any (dtype attribute)"
	}
	var ok []string
	for _, dt := range dtype.All {
		rest := dt
		if indexOperands[d.Name] {
			rest = dtype.Int32
		}
		if probe := probeInputs[d.Name]; probe != nil {
			if _, _, err := InferOp(d.Name, probe(dt), probeAttrs[d.Name]); err == nil {
				ok = append(ok, dt.String())
			}
			continue
		}
		{
			in := []TensorType{{DType: dt, Shape: Shape{2, 2}}}
			if d.Name == "where" {
				in[0].DType = dtype.Bool
				in = append(in, TensorType{DType: dt, Shape: Shape{2, 2}}, TensorType{DType: dt, Shape: Shape{2, 2}})
			}
			for len(in) < d.Arity {
				in = append(in, TensorType{DType: rest, Shape: Shape{2, 2}})
			}
			if _, _, err := InferOp(d.Name, in, probeAttrs[d.Name]); err == nil {
				ok = append(ok, dt.String())
			}
		}
	}
	return strings.Join(ok, " ")
}
