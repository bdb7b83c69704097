package core

// VJP rules of the ops that move data: each sends the cotangent back to where the
// element came from. A slice's cotangent is padded with zeros (interleaved for steps
// above 1, reversed for negative steps); concat's is sliced apart.

var shapeVJPs = map[string]VJPFunc{
	"reshape": func(c *VJPContext) []Value {
		return []Value{c.op("reshape", Attrs{"shape": int64s(c.typ(c.x(0)).Shape)}, c.G)}
	},
	"transpose": func(c *VJPContext) []Value {
		perm, _ := transposePerm(c.typ(c.x(0)).Shape, c.Attrs.Ints("perm"))
		inv := make([]int, len(perm))
		for i, p := range perm {
			inv[p] = i
		}
		return []Value{c.op("transpose", Attrs{"perm": int64s(inv)}, c.G)}
	},
	"broadcast_to": func(c *VJPContext) []Value { return []Value{c.to(c.G, 0)} },
	"slice":        vjpSlice,
	"pad": func(c *VJPContext) []Value {
		x := c.typ(c.x(0)).Shape
		pads := c.Attrs.Ints("pads")
		starts, stops, steps := make([]int, len(x)), make([]int, len(x)), make([]int, len(x))
		for i, d := range x {
			starts[i], stops[i], steps[i] = pads[2*i], pads[2*i]+d, 1
		}
		return []Value{c.slice(c.G, starts, stops, steps)}
	},
	"concat": func(c *VJPContext) []Value {
		gs := c.typ(c.G).Shape
		ax, _ := normAxis("", c.Attrs.Int("axis", 0), len(gs))
		out := make([]Value, len(c.In))
		at := 0
		for k, in := range c.In {
			d := c.typ(in).Shape[ax]
			starts, stops, steps := make([]int, len(gs)), gs.Clone(), make([]int, len(gs))
			for i := range steps {
				steps[i] = 1
			}
			starts[ax], stops[ax] = at, at+d
			out[k] = c.slice(c.G, starts, stops, steps)
			at += d
		}
		return out
	},
}

func (c *VJPContext) slice(v Value, starts, stops, steps []int) Value {
	return c.op("slice", Attrs{"starts": int64s(starts), "stops": int64s(stops), "steps": int64s(steps)}, v)
}

func vjpSlice(c *VJPContext) []Value {
	x := c.typ(c.x(0)).Shape
	starts, steps := c.Attrs.Ints("starts"), c.Attrs.Ints("steps")
	g := c.G
	gs := c.typ(g).Shape
	if gs.NumElements() == 0 {
		return []Value{c.op("broadcast_to", Attrs{"shape": int64s(x)}, c.constLike(g, 0))}
	}
	pads := make([]int64, 2*len(x))
	for ax, d := range x {
		m, start, step := gs[ax], starts[ax], steps[ax]
		if step < 0 { // the same elements, walked the other way
			g = c.flip(g, ax)
			start, step = start+(m-1)*step, -step
		}
		if step > 1 { // each element followed by step-1 zeros, then the last zeros cut
			cur := c.typ(g).Shape
			g = c.op("unsqueeze", Attrs{"axis": []int64{int64(ax + 1)}}, g)
			p := make([]int64, 2*(len(cur)+1))
			p[2*(ax+1)+1] = int64(step - 1)
			g = c.op("pad", Attrs{"pads": p, "value": 0.0}, g)
			wide := cur.Clone()
			wide[ax] = m * step
			g = c.op("reshape", Attrs{"shape": int64s(wide)}, g)
			keep := c.typ(g).Shape.Clone()
			keep[ax] = (m-1)*step + 1
			st, sp := make([]int, len(keep)), make([]int, len(keep))
			for i := range sp {
				sp[i] = 1
			}
			g = c.slice(g, st, keep, sp)
		}
		pads[2*ax], pads[2*ax+1] = int64(start), int64(d-start-((m-1)*step+1))
	}
	return []Value{c.op("pad", Attrs{"pads": pads, "value": 0.0}, g)}
}
