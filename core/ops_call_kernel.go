package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"pypto/dtype"
	"pypto/internal/interrupt"
	"pypto/isa"
)

// call_kernel runs a block-level kernel written by the user (p.block_kernel): one PTO
// program per block of its grid, or for a mixed kernel one cube program and "vectors"
// vector programs per block, exchanging tiles through TPUSH/TPOP queues. Every program
// takes the op's inputs as its first params, in order, and the output as its last. The
// attributes carry the programs' text, so a graph holding the op stays self-contained
// and the reference interpreter runs it with the ISA's reference semantics
// (isa.Interpret), block after block, as the device runs the same programs.
//
// "sources" maps the programs' declarations and instructions back to the lines of the
// kernel's Python function (JSON, see KernelSources), so that errors found after
// tracing (a tile too big for the chip's buffer, a GM window moved out of range at run
// time) name the user's line.

func init() {
	Register(&OpDef{Name: "call_kernel", Arity: 0, MaxArity: Variadic,
		Attrs: []AttrSpec{{"name", ""}, {"programs", ""}, {"grid", int64(1)}, {"vectors", int64(0)}, {"out_type", ""}, {"sources", ""}},
		Doc:   "a block-level kernel (p.block_kernel): PTO programs, one per block of grid (a cube program and vectors vector programs per block for a mixed kernel), reading the inputs and writing the output of type out_type",
		Infer: inferCallKernel, Eval: evalCallKernel})
	concreteOnly["call_kernel"] = true
}

// Kernel is a parsed call_kernel: its programs in block order and where each part of
// them came from.
type Kernel struct {
	Name     string
	Grid     int
	Vectors  int            // vector programs per block of a mixed kernel; 0 for one core kind
	Programs []*isa.Program // block after block, GroupSize programs each
	Sources  KernelSources
	Out      TensorType
}

// GroupSize is the number of programs each block runs.
func (k *Kernel) GroupSize() int { return 1 + k.Vectors }

// Group is block b's programs.
func (k *Kernel) Group(b int) []*isa.Program {
	n := k.GroupSize()
	return k.Programs[b*n : (b+1)*n]
}

// KernelSources locates the programs' parts in the user's code: Locs is a table of
// locations, and for each program Tiles[i] and Instrs[i] index it (-1: unknown).
type KernelSources struct {
	Locs     []Location       `json:"locs"`
	Programs []ProgramSources `json:"programs"`
}

// ProgramSources indexes KernelSources.Locs per tile declaration and instruction.
type ProgramSources struct {
	Tiles  []int `json:"tiles"`
	Instrs []int `json:"instrs"`
}

// Locate gives the user's location of what a verifier or interpreter error names: an
// instruction (index >= 0) or a tile declaration (by name) of program p.
func (s KernelSources) Locate(p int, prog *isa.Program, instr int, where string) Location {
	if p < 0 || p >= len(s.Programs) {
		return Location{}
	}
	ps := s.Programs[p]
	pick := func(i int) Location {
		if i >= 0 && i < len(s.Locs) {
			return s.Locs[i]
		}
		return Location{}
	}
	if instr >= 0 && instr < len(ps.Instrs) {
		return pick(ps.Instrs[instr])
	}
	for t, decl := range prog.Tiles {
		if t < len(ps.Tiles) && strings.HasPrefix(where, "tile %"+decl.Name+":") {
			return pick(ps.Tiles[t])
		}
	}
	return Location{}
}

// kernels caches parsed kernels by their attributes: a compiled graph asks for the
// same kernel in inference, verification, evaluation and lowering.
var kernels sync.Map // string -> *Kernel

// KernelOf parses (once) the kernel of a call_kernel op's attributes.
func KernelOf(attrs Attrs) (*Kernel, *Error) {
	key := attrs.String()
	if k, ok := kernels.Load(key); ok {
		return k.(*Kernel), nil
	}
	name := attrs.Str("name", "")
	k := &Kernel{Name: name, Grid: attrs.Int("grid", 1), Vectors: attrs.Int("vectors", 0)}
	if k.Grid < 1 || k.Vectors < 0 {
		return nil, Errorf(ValueError, "call_kernel %s: grid %d and vectors %d must be at least 1 and 0", name, k.Grid, k.Vectors)
	}
	out, err := ParseTensorType(attrs.Str("out_type", ""))
	if err != nil {
		return nil, Errorf(ValueError, "call_kernel %s: bad out_type: %v", name, err)
	}
	k.Out = out
	if src := attrs.Str("sources", ""); src != "" {
		if err := json.Unmarshal([]byte(src), &k.Sources); err != nil {
			return nil, Errorf(ValueError, "call_kernel %s: bad sources: %v", name, err)
		}
	}
	for i, text := range splitPrograms(attrs.Str("programs", "")) {
		p, err := isa.Parse(text)
		if err != nil {
			return nil, Errorf(ValueError, "call_kernel %s: program %d does not parse: %v", name, i, err)
		}
		k.Programs = append(k.Programs, p)
	}
	if want := k.Grid * k.GroupSize(); len(k.Programs) != want {
		return nil, Errorf(ValueError, "call_kernel %s: %d programs for a grid of %d blocks of %d programs", name, len(k.Programs), k.Grid, k.GroupSize())
	}
	for i, p := range k.Programs {
		want := isa.Vector
		if k.Vectors > 0 && i%k.GroupSize() == 0 {
			want = isa.Cube
		} else if k.Vectors == 0 {
			want = k.Programs[0].Core
		}
		if p.Core != want {
			return nil, Errorf(ValueError, "call_kernel %s: program %d runs on a %s core, want %s", name, i, p.Core, want)
		}
		if err := isa.Verify(p, nil); err != nil {
			return nil, k.errorAt(i, err)
		}
	}
	kernels.Store(key, k)
	return k, nil
}

// errorAt turns an ISA verifier or interpreter error of program p into a user error at
// the kernel line it comes from.
func (k *Kernel) errorAt(p int, err error) *Error {
	instr, where := -1, ""
	switch e := err.(type) {
	case *isa.VerifyError:
		instr, where = e.Index, e.Where
	case *isa.InterpError:
		instr = e.Index
	}
	e := Errorf(ValueError, "kernel %s, block %d: %v", k.Name, p/k.GroupSize(), err)
	e.Loc = k.Sources.Locate(p, k.Programs[p], instr, where)
	return e
}

// ErrorAt is errorAt for other packages (the lowering's chip checks).
func (k *Kernel) ErrorAt(p int, err error) *Error { return k.errorAt(p, err) }

// splitPrograms cuts concatenated PTO texts after each line that is "end".
func splitPrograms(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		cur.WriteString(line)
		if strings.TrimSpace(line) == "end" {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	return out
}

func inferCallKernel(in []TensorType, attrs Attrs) (TensorType, *Error) {
	k, err := KernelOf(attrs)
	if err != nil {
		return TensorType{}, err
	}
	for i, p := range k.Programs {
		if len(p.Params) != len(in)+1 {
			return TensorType{}, Errorf(ValueError, "call_kernel %s: program %d takes %d tensors, the call passes %d inputs and 1 output", k.Name, i, len(p.Params), len(in))
		}
		for j, prm := range p.Params {
			t := k.Out
			if j < len(in) {
				t = in[j]
			}
			if prm.DType != t.DType || prm.Elems != t.Shape.NumElements() {
				return TensorType{}, Errorf(ValueError, "call_kernel %s: param %s of program %d is %s[%d], the tensor bound to it is %s", k.Name, prm.Name, i, prm.DType, prm.Elems, t).
					Suggest("call the kernel with tensors of the shapes and dtypes it was traced for")
			}
		}
	}
	return k.Out, nil
}

// evalCallKernel runs the blocks one after another on shared GM bytes: blocks of one
// launch must not depend on each other's writes, so any order computes the same.
func evalCallKernel(in []*Array, attrs Attrs, out *Array) {
	k, err := KernelOf(attrs)
	if err != nil {
		panic(err)
	}
	gm := make([][]byte, len(in)+1)
	for i, a := range in {
		gm[i] = a.Bytes()
	}
	gm[len(in)] = make([]byte, out.Type.Bytes())
	stop := interrupt.Current() // one for the launch, so Ctrl-C between blocks stops it too
	for b := 0; b < k.Grid; b++ {
		group := k.Group(b)
		cores := make([]isa.Core, len(group))
		for i, p := range group {
			cores[i] = isa.Core{Prog: p, Params: gm}
		}
		if err := isa.InterpretCores(cores, isa.InterpOptions{Interrupt: stop}); err != nil {
			p := b * k.GroupSize()
			if ie, ok := err.(*isa.InterpError); ok {
				for i, q := range group {
					if q.Name == ie.Kernel {
						p += i
					}
				}
			}
			panic(k.errorAt(p, err))
		}
	}
	copy(out.Data, dtype.Decode(out.Type.DType, gm[len(in)], len(out.Data)))
}

// String names the kernel in dumps.
func (k *Kernel) String() string {
	return fmt.Sprintf("kernel %s: %d blocks x %d programs -> %s", k.Name, k.Grid, k.GroupSize(), k.Out)
}
