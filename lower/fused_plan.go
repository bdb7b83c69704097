package lower

import (
	"fmt"
	"sync"

	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// How the body of a fused op (or of a matmul epilogue) uses UB tiles. Two things keep
// a long elementwise chain, such as gelu's, small enough for wide tiles:
//   - a 0-d constant read by an add, sub, mul, div, maximum or minimum of floats is
//     the instruction's scalar operand (TADDS, TMULS, ...) instead of a tile filled
//     with it, which computes the same values (the immediate is the constant rounded
//     to its dtype, as the filled tile holds it);
//   - intermediates share tiles by liveness: a step's result takes a free slot of its
//     dtype, and the slots of its operands are free again once it has run (never
//     before, so no step writes over a tile it still reads). Every step runs on the
//     vector pipe, in order, so a reused slot needs no synchronisation.
//
// fusedBody emits the plan; fusedShape and epilogueBytes count the UB from it, so the
// tiling and the code cannot disagree.

// bodyPlan is the tile use of one body graph.
type bodyPlan struct {
	// scalar, for a step that takes a constant as its immediate, is the index of
	// that operand and its value; constImm marks the constants that need no tile
	// (every reader takes them as an immediate).
	scalar   map[core.Value]scalarOperand
	constImm map[core.Value]bool
	// slot is the scratch slot of each intermediate that is not the body's result;
	// cvtSlot the slot of each converted operand of a step (key: step, operand).
	slot    map[core.Value]bodySlot
	cvtSlot map[[2]int]bodySlot
	// slots counts the slots of each dtype.
	slots map[dtype.DType]int
}

// scalarOperand is the operand index of a step's constant and the instruction that
// takes it as an immediate.
type scalarOperand struct {
	index int
	op    isa.Opcode
	value float64
}

// bodySlot is slot k of tiles of one dtype.
type bodySlot struct {
	dt dtype.DType
	k  int
}

func (s bodySlot) name() string { return fmt.Sprintf("fused_slot_%s_%d", s.dt, s.k) }

// scalarForms are the instructions that take a step's constant as an immediate:
// with the constant second (x op c), and for commutative steps first too.
var scalarForms = map[string]isa.Opcode{
	"add": isa.TADDS, "sub": isa.TSUBS, "mul": isa.TMULS, "div": isa.TDIVS, "maximum": isa.TMAXS, "minimum": isa.TMINS,
}

var bodyPlans sync.Map // body text -> *bodyPlan

// planBody returns the plan of a fused op's body (made once per body text).
func planBody(attrs core.Attrs) (*bodyPlan, *core.Graph, error) {
	body, err := core.FusedBody(attrs)
	if err != nil {
		return nil, nil, err
	}
	key := attrs.Str("body", "")
	if p, ok := bodyPlans.Load(key); ok {
		return p.(*bodyPlan), body, nil
	}
	p := makeBodyPlan(body)
	bodyPlans.Store(key, p)
	return p, body, nil
}

// constantValue reports whether v is a 0-d full of a float dtype, and its value as
// the tile it fills would hold it.
func constantValue(body *core.Graph, v core.Value) (float64, bool) {
	n := body.Nodes[v]
	if n.Op != "full" || len(n.Type.Shape) != 0 || !n.Type.DType.IsFloat() {
		return 0, false
	}
	return dtype.Round(n.Type.DType, n.Attrs.Float("value", 0)), true
}

func makeBodyPlan(body *core.Graph) *bodyPlan {
	p := &bodyPlan{scalar: map[core.Value]scalarOperand{}, constImm: map[core.Value]bool{},
		slot: map[core.Value]bodySlot{}, cvtSlot: map[[2]int]bodySlot{}, slots: map[dtype.DType]int{}}
	out := body.Outputs[0]
	// Steps that take a constant as an immediate: a float step whose operands need no
	// conversion (the constant has the step's dtype).
	tileReads := map[core.Value]int{} // reads of each value as a tile
	for i, n := range body.Nodes {
		v := core.Value(i)
		if n.Op == core.OpParam {
			continue
		}
		op, ok := scalarForms[n.Op]
		if ok && len(n.Inputs) == 2 && n.Type.DType.IsFloat() && body.Type(n.Inputs[0]).DType == n.Type.DType && body.Type(n.Inputs[1]).DType == n.Type.DType {
			for _, j := range []int{1, 0} {
				if j == 0 && !commutative[n.Op] {
					continue
				}
				if c, isConst := constantValue(body, n.Inputs[j]); isConst && n.Inputs[0] != n.Inputs[1] {
					p.scalar[v] = scalarOperand{index: j, op: op, value: c}
					break
				}
			}
		}
		for j, x := range n.Inputs {
			if s, ok := p.scalar[v]; !ok || s.index != j {
				tileReads[x]++
			}
		}
	}
	for i, n := range body.Nodes {
		if _, isConst := constantValue(body, core.Value(i)); isConst && n.Op == "full" && tileReads[core.Value(i)] == 0 && core.Value(i) != out {
			p.constImm[core.Value(i)] = true
		}
	}
	// Slots by liveness, in step order.
	last := map[core.Value]int{}
	for i, n := range body.Nodes {
		for j, x := range n.Inputs {
			if s, ok := p.scalar[core.Value(i)]; !ok || s.index != j {
				last[x] = i
			}
		}
	}
	free := map[dtype.DType][]int{}
	take := func(dt dtype.DType) bodySlot {
		if f := free[dt]; len(f) > 0 {
			free[dt] = f[:len(f)-1]
			return bodySlot{dt, f[len(f)-1]}
		}
		p.slots[dt]++
		return bodySlot{dt, p.slots[dt] - 1}
	}
	give := func(s bodySlot) { free[s.dt] = append(free[s.dt], s.k) }
	for i, n := range body.Nodes {
		v := core.Value(i)
		if n.Op == core.OpParam || p.constImm[v] {
			continue
		}
		argTypes := make([]dtype.DType, len(n.Inputs))
		for j, x := range n.Inputs {
			argTypes[j] = body.Type(x).DType
		}
		var temps []bodySlot
		for j, want := range lowerings[n.Op].operandTypes(argTypes, n.Type.DType) {
			if s, ok := p.scalar[v]; ok && s.index == j {
				continue
			}
			if want != argTypes[j] {
				s := take(want)
				p.cvtSlot[[2]int{i, j}] = s
				temps = append(temps, s)
			}
		}
		if v != out {
			p.slot[v] = take(n.Type.DType)
		}
		for _, s := range temps {
			give(s)
		}
		given := map[core.Value]bool{}
		for _, x := range n.Inputs {
			if s, ok := p.slot[x]; ok && last[x] == i && !given[x] {
				given[x] = true
				give(s)
			}
		}
	}
	return p
}

// slotBytes is the UB the plan's slots take per element of the tile.
func (p *bodyPlan) slotBytes() int {
	n := 0
	for dt, k := range p.slots {
		n += k * dt.Size()
	}
	return n
}

// slotCount is the number of the plan's slots.
func (p *bodyPlan) slotCount() int {
	n := 0
	for _, k := range p.slots {
		n += k
	}
	return n
}
