package ptoas

import "strings"

// Custom (pretty-printed) forms of the ops PTO-AS programs commonly write by hand.

// custom dispatches on the op name.
func (p *parser) custom(o *mop) error {
	switch {
	case o.name == "arith.constant":
		return p.arithConstant(o)
	case o.name == "arith.cmpi":
		return p.arithCmp(o)
	case o.name == "arith.index_cast" || o.name == "arith.index_castui" || o.name == "emitc.cast":
		return p.cast(o)
	case strings.HasPrefix(o.name, "arith."):
		return p.arithBinary(o)
	case o.name == "emitc.assign":
		return p.emitcAssign(o)
	case strings.HasPrefix(o.name, "emitc."):
		return p.emitcBinary(o)
	case o.name == "pto.make_tensor_view":
		return p.makeTensorView(o)
	case o.name == "pto.subview":
		return p.subview(o)
	case o.name == "pto.alloc_tile":
		return p.allocTile(o)
	case o.name == "pto.set_flag" || o.name == "pto.wait_flag":
		return p.flag(o)
	case o.name == "pto.barrier":
		return p.barrier(o)
	case o.name == "scf.for":
		return p.scfFor(o)
	case o.name == "scf.if":
		return p.scfIf(o)
	case o.name == "scf.yield" || o.name == "return" || o.name == "func.return":
		if p.peek().kind == tValue {
			return p.errorf(p.peek().pos, "%s with values: kernels and their regions return nothing", o.name)
		}
		return nil
	case strings.HasPrefix(o.name, "pto.") && p.is("ins"):
		return p.insOuts(o)
	}
	return p.errorf(o.pos, "op %s is not in a form this reader knows; write it in MLIR's generic form (\"%s\"(...) : (...) -> (...))", o.name, o.name)
}

func (p *parser) trailingAttrs(o *mop) error {
	if p.is("{") {
		d, err := p.attrDict()
		if err != nil {
			return err
		}
		for k, v := range d {
			o.attrs[k] = v
		}
	}
	return nil
}

// arith.constant [dict] value : type
func (p *parser) arithConstant(o *mop) error {
	if err := p.trailingAttrs(o); err != nil {
		return err
	}
	v, err := p.attrValue()
	if err != nil {
		return err
	}
	if v.typ == "" {
		if err := p.expect(":", " after the constant"); err != nil {
			return err
		}
		if v.typ, err = p.typ(" of the constant"); err != nil {
			return err
		}
		if v.isInt && v.kind == aNumber && isFloatType(v.typ) && !strings.HasPrefix(p.toks[p.at-3].text, "0x") {
			v.isInt = false
		}
	}
	o.props["value"] = v
	o.resTypes = []string{v.typ}
	return nil
}

// arith.cmpi pred, %a, %b : type
func (p *parser) arithCmp(o *mop) error {
	t := p.next()
	if t.kind != tIdent {
		return p.errorf(t.pos, "expected a predicate (slt, sle, ...), found %s", describe(t))
	}
	o.props["predicate"] = attr{kind: aRaw, s: t.text, pos: t.pos}
	if err := p.expect(",", " after the predicate"); err != nil {
		return err
	}
	return p.arithBinary(o)
}

// arith.op %a, %b [, %c] : type
func (p *parser) arithBinary(o *mop) error {
	for {
		v, err := p.value(" (an operand of " + o.name + ")")
		if err != nil {
			return err
		}
		o.operands = append(o.operands, v)
		if !p.accept(",") {
			break
		}
	}
	if err := p.trailingAttrs(o); err != nil {
		return err
	}
	if err := p.expect(":", " before the type"); err != nil {
		return err
	}
	ty, err := p.typ("")
	if err != nil {
		return err
	}
	for range o.operands {
		o.types = append(o.types, ty)
	}
	if o.name == "arith.select" && len(o.types) > 0 {
		o.types[0] = "i1"
	}
	o.resTypes = []string{ty}
	if o.name == "arith.cmpi" {
		o.resTypes = []string{"i1"}
	}
	return nil
}

// cast %x [dict] : from to to
func (p *parser) cast(o *mop) error {
	v, err := p.value(" (the cast's operand)")
	if err != nil {
		return err
	}
	o.operands = []string{v}
	if err := p.trailingAttrs(o); err != nil {
		return err
	}
	return p.typePair(o, "to", "the cast's")
}

// typePair reads `: from sep to`, the operand's type and the result's.
func (p *parser) typePair(o *mop, sep, whose string) error {
	if err := p.expect(":", " before "+whose+" types"); err != nil {
		return err
	}
	from, err := p.typ("")
	if err != nil {
		return err
	}
	if err := p.expect(sep, " between "+whose+" types"); err != nil {
		return err
	}
	to, err := p.typ("")
	if err != nil {
		return err
	}
	o.types, o.resTypes = []string{from}, []string{to}
	return nil
}

// emitc.assign %value : type to %var : type
func (p *parser) emitcAssign(o *mop) error {
	v, err := p.value(" (the assigned value)")
	if err != nil {
		return err
	}
	if err := p.expect(":", ""); err != nil {
		return err
	}
	ty, err := p.typ("")
	if err != nil {
		return err
	}
	if err := p.expect("to", " after the assigned value"); err != nil {
		return err
	}
	r, err := p.value(" (the variable)")
	if err != nil {
		return err
	}
	if err := p.expect(":", ""); err != nil {
		return err
	}
	if _, err := p.typ(""); err != nil {
		return err
	}
	o.operands, o.types = []string{r, v}, []string{ty, ty}
	return p.trailingAttrs(o)
}

// emitc.op %a, %b [dict] : (types) -> type
func (p *parser) emitcBinary(o *mop) error {
	ops, err := p.valueListUntil(":")
	if err != nil {
		return err
	}
	o.operands = ops
	if err := p.trailingAttrs(o); err != nil {
		return err
	}
	if err := p.expect(":", " before the op's type"); err != nil {
		return err
	}
	if err := p.expect("(", ""); err != nil {
		return err
	}
	if o.types, err = p.typeList(")"); err != nil {
		return err
	}
	if err := p.expect("->", ""); err != nil {
		return err
	}
	ty, err := p.typ("")
	if err != nil {
		return err
	}
	o.resTypes = []string{ty}
	return nil
}

func (p *parser) valueListUntil(stop string) ([]string, error) {
	var out []string
	for p.peek().kind == tValue {
		v, _ := p.value("")
		out = append(out, v)
		if !p.accept(",") {
			break
		}
	}
	return out, nil
}

// list := '[' values ']'
func (p *parser) list(context string) ([]string, error) {
	if err := p.expect("[", context); err != nil {
		return nil, err
	}
	return p.valueList("]")
}

// pto.make_tensor_view %ptr, shape = [...] strides = [...] : type
func (p *parser) makeTensorView(o *mop) error {
	v, err := p.value(" (the pointer)")
	if err != nil {
		return err
	}
	o.operands = []string{v}
	p.accept(",")
	if err := p.expect("shape", " after the pointer"); err != nil {
		return err
	}
	if err := p.expect("=", ""); err != nil {
		return err
	}
	shape, err := p.list(" for the shape")
	if err != nil {
		return err
	}
	p.accept(",")
	if err := p.expect("strides", " after the shape"); err != nil {
		return err
	}
	if err := p.expect("=", ""); err != nil {
		return err
	}
	strides, err := p.list(" for the strides")
	if err != nil {
		return err
	}
	o.lists = [][]string{shape, strides}
	return p.attrsThenType(o, "the tensor view's")
}

// attrsThenType reads an op's trailing attribute dict and its result's type (": type").
func (p *parser) attrsThenType(o *mop, whose string) error {
	if err := p.trailingAttrs(o); err != nil {
		return err
	}
	if err := p.expect(":", " before "+whose+" type"); err != nil {
		return err
	}
	ty, err := p.typ("")
	if err != nil {
		return err
	}
	o.resTypes = []string{ty}
	return nil
}

// pto.subview %tv, offsets = [...], sizes = [...] : type -> type
func (p *parser) subview(o *mop) error {
	v, err := p.value(" (the tensor view)")
	if err != nil {
		return err
	}
	o.operands = []string{v}
	var lists [2][]string
	for i, key := range []string{"offsets", "sizes"} {
		p.accept(",")
		if err := p.expect(key, ""); err != nil {
			return err
		}
		if err := p.expect("=", ""); err != nil {
			return err
		}
		if lists[i], err = p.list(" for the " + key); err != nil {
			return err
		}
	}
	o.lists = lists[:]
	if err := p.trailingAttrs(o); err != nil {
		return err
	}
	return p.typePair(o, "->", "the subview's")
}

// pto.alloc_tile [valid_row = %v] [valid_col = %v] [dict] : type
func (p *parser) allocTile(o *mop) error {
	o.namedOps = map[string]string{}
	for p.is("valid_row") || p.is("valid_col") {
		key := p.next().text
		if err := p.expect("=", ""); err != nil {
			return err
		}
		v, err := p.value("")
		if err != nil {
			return err
		}
		o.namedOps[key] = v
	}
	return p.attrsThenType(o, "the tile's")
}

// pto.set_flag[<PIPE_A>, <PIPE_B>, <EVENT_IDn>] [dict]
func (p *parser) flag(o *mop) error {
	if err := p.expect("[", " after "+o.name); err != nil {
		return err
	}
	for i := range 3 {
		if i > 0 {
			if err := p.expect(",", ""); err != nil {
				return err
			}
		}
		if err := p.expect("<", ""); err != nil {
			return err
		}
		t := p.next()
		if t.kind != tIdent {
			return p.errorf(t.pos, "expected a pipe or event name, found %s", describe(t))
		}
		o.pipes = append(o.pipes, t.text)
		if err := p.expect(">", ""); err != nil {
			return err
		}
	}
	if err := p.expect("]", ""); err != nil {
		return err
	}
	return p.trailingAttrs(o)
}

// pto.barrier <PIPE_X> [dict]
func (p *parser) barrier(o *mop) error {
	if err := p.expect("<", " after pto.barrier"); err != nil {
		return err
	}
	t := p.next()
	if t.kind != tIdent {
		return p.errorf(t.pos, "expected a pipe name, found %s", describe(t))
	}
	o.pipes = []string{t.text}
	if err := p.expect(">", ""); err != nil {
		return err
	}
	return p.trailingAttrs(o)
}

// scf.for %iv = %lb to %ub step %step [: type] region
func (p *parser) scfFor(o *mop) error {
	iv, err := p.value(" (the induction variable)")
	if err != nil {
		return err
	}
	o.iv = iv
	if err := p.expect("=", ""); err != nil {
		return err
	}
	var bounds []string
	for i, kw := range []string{"", "to", "step"} {
		if i > 0 {
			if err := p.expect(kw, ""); err != nil {
				return err
			}
		}
		v, err := p.value("")
		if err != nil {
			return err
		}
		bounds = append(bounds, v)
	}
	o.operands = bounds
	if p.is("iter_args") {
		return p.errorf(p.peek().pos, "scf.for with iter_args: loop-carried values are not supported (ptoas 0.1.1 miscompiles them); keep such values in emitc variables")
	}
	if p.accept(":") {
		if _, err := p.typ(""); err != nil {
			return err
		}
	}
	body, err := p.region()
	if err != nil {
		return err
	}
	o.regions = [][]*mop{body}
	return p.trailingAttrs(o)
}

// scf.if %cond region [else region] [dict]
func (p *parser) scfIf(o *mop) error {
	c, err := p.value(" (the condition)")
	if err != nil {
		return err
	}
	o.operands = []string{c}
	if p.is("->") {
		return p.errorf(p.peek().pos, "scf.if with results is not supported; assign values to emitc variables in the branches")
	}
	then, err := p.region()
	if err != nil {
		return err
	}
	o.regions = [][]*mop{then}
	if p.accept("else") {
		els, err := p.region()
		if err != nil {
			return err
		}
		o.regions = append(o.regions, els)
		o.elseRegion = true
	}
	return p.trailingAttrs(o)
}

// pto.op ins(%a, ... [dict] : types) outs(%d : type) [dict]
func (p *parser) insOuts(o *mop) error {
	for _, kw := range []string{"ins", "outs"} {
		if kw == "outs" && !p.is("outs") {
			break
		}
		if err := p.expect(kw, ""); err != nil {
			return err
		}
		if err := p.expect("(", ""); err != nil {
			return err
		}
		ops, _ := p.valueListUntil(":")
		if err := p.trailingAttrs(o); err != nil {
			return err
		}
		if err := p.expect(":", " before the operand types"); err != nil {
			return err
		}
		tys, err := p.typeList(")")
		if err != nil {
			return err
		}
		if len(tys) != len(ops) {
			return p.errorf(o.pos, "%s has %d %s operands and %d types", o.name, len(ops), kw, len(tys))
		}
		o.operands = append(o.operands, ops...)
		o.types = append(o.types, tys...)
		if kw == "ins" {
			o.insCount = len(ops)
		}
	}
	return p.trailingAttrs(o)
}
