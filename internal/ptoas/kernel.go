package ptoas

import (
	"fmt"

	"pypto/device"
	"pypto/isa"
)

// Form is what a kernel's PTO-AS says about placement and synchronisation.
type Form uint8

const (
	// Auto is the PTO program: tiles not placed, no flags.
	Auto Form = iota
	// Manual is the machine program: tile addresses and every flag.
	Manual
)

func (f Form) String() string {
	if f == Manual {
		return "manual"
	}
	return "auto"
}

// Task is one kernel of a compiled program: the PTO programs of its blocks, as the
// execution graph has them. A mixed task's block is a group of programs: the cube
// program, then Vectors vector programs, which exchange tiles through TPUSH / TPOP
// queues.
type Task struct {
	Name     string
	Programs []*isa.Program
	Vectors  int
	// Addrs, for the manual form, gives each program's tile addresses (-1: unused);
	// nil writes the auto form.
	Addrs [][]int
}

// Blocks is the number of blocks (groups of a mixed task).
func (t Task) Blocks() int { return len(t.Programs) / (1 + t.Vectors) }

// ManualTask is the task of machine programs ms (a mixed task's as Task.Programs
// orders them), for the manual form.
func ManualTask(name string, ms []*device.MachineProgram, vectors int) Task {
	t := Task{Name: name, Vectors: vectors}
	for _, m := range ms {
		p, addrs := fromMachine(m)
		t.Programs = append(t.Programs, p)
		t.Addrs = append(t.Addrs, addrs)
	}
	return t
}

// Module is a task written as PTO-AS: one function, or for a mixed task one for the
// cube cores and one for the vector cores.
type Module struct {
	Form      Form
	Text      string
	Functions []Function
	// Queues are the GM buffers a mixed task's queues became: the device runtime
	// allocates each and passes it to both functions.
	Queues []Queue
	// Flags counts the set_flag ops (the manual form's synchronisation).
	Flags int
}

// Function is one function of a module.
type Function struct {
	Name string
	Core isa.CoreKind
	// Args are the function's arguments in order: a pointer per param of the programs,
	// a pointer per queue buffer (mixed tasks), then a scalar per integer the programs
	// read from GM with SLD.
	Args []Arg
}

// Arg is one argument of a kernel function.
type Arg struct {
	Name string
	// Param is the programs' param a pointer argument binds (-1 for the others).
	Param int
	// Queue is the queue whose buffer a pointer argument is (-1 for the others).
	Queue int
	// Scalar arguments stand for the integer an SLD reads: element Elem of param
	// Source. A device runtime passes that integer (a dynamic size).
	Source, Elem int
}

// Scalar reports whether the argument is an index rather than a GM pointer.
func (a Arg) Scalar() bool { return a.Param < 0 && a.Queue < 0 }

// Queue is the GM buffer of one queue of a mixed task: for each block, two slots
// (the queue's depth) of one entry each, used in turn.
type Queue struct {
	ID         int
	DType      string // the element type of an entry (the popping tile's)
	Rows, Cols int    // an entry's shape
	Elems      int    // the buffer's elements: blocks x 2 x rows x cols
	Bytes      int
	Producer   isa.CoreKind
	FullEvent  int // the cross-core event the producer sets when a slot is full
	FreeEvent  int // the event the consumer sets when it has freed a slot
}

// Error is a program the dialect cannot say: the kernel, the instruction (or -1 for a
// declaration) and the construct.
type Error struct {
	Kernel string
	Instr  int
	Text   string // the instruction in our text form
	Msg    string
}

func (e *Error) Error() string {
	if e.Instr >= 0 {
		return fmt.Sprintf("PTO-AS export of kernel %s: instr %d `%s`: %s", e.Kernel, e.Instr, e.Text, e.Msg)
	}
	return fmt.Sprintf("PTO-AS export of kernel %s: %s", e.Kernel, e.Msg)
}

// fromMachine is the PTO program of m's instructions (flags and barriers included)
// and the address of each tile (-1 for a tile no instruction uses).
func fromMachine(m *device.MachineProgram) (*isa.Program, []int) {
	p := &isa.Program{Name: m.Name, Core: m.Core, Params: m.Params, Regs: m.Regs}
	addrs := make([]int, len(m.Tiles))
	for i, a := range m.Tiles {
		p.Tiles = append(p.Tiles, a.Decl)
		addrs[i] = a.Addr
	}
	for _, in := range m.Instrs {
		out := isa.Instr{Op: in.Op, Mode: in.Mode, Args: make([]isa.Operand, len(in.Args))}
		for j, a := range in.Args {
			o := isa.Operand{Kind: a.Kind}
			switch a.Kind {
			case isa.KindTile:
				o.Tile = a.Tile
			case isa.KindGM:
				o.GM = a.GM
			case isa.KindImm:
				o.Imm = a.Imm
			case isa.KindPipe:
				o.Pipe = a.Pipe
			case isa.KindReg:
				o.Reg = a.Reg
			}
			out.Args[j] = o
		}
		p.Body = append(p.Body, out)
	}
	return p, addrs
}
