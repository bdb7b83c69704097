package device

import (
	"fmt"

	"pypto/isa"
)

// Compile turns a PTO program into a machine program for chip, in four named stages:
//
//  1. check:    declarations and every instruction against the opcode table and the
//     chip (locations the core has, shapes, dtypes, GM windows inside their params);
//  2. route:    the pipe of each instruction (fixed, by operand location, or by the
//     flag / barrier operand);
//  3. allocate: byte addresses per buffer with reuse by liveness (backend_alloc.go);
//  4. sync:     SET_FLAG / WAIT_FLAG for cross-pipe hazards on the allocated
//     addresses (backend_sync.go).
//
// Stages 1 and 2 happen together in checkInstr. Manual flags and barriers in p are
// kept and count as synchronisation already present. Compile never panics: a panic
// from a bug surfaces as an error.
func Compile(chip *Chip, p *isa.Program) (mp *MachineProgram, err error) {
	defer recoverCompile(p, &mp, &err)
	if err := chip.Validate(); err != nil {
		return nil, err
	}
	pipes, err := checkAndRoute(chip, p)
	if err != nil {
		return nil, err
	}
	return build(chip, p, pipes)
}

// recoverCompile turns a panic of a compile of p into an error.
func recoverCompile(p *isa.Program, mp **MachineProgram, err *error) {
	if r := recover(); r != nil {
		name := ""
		if p != nil {
			name = p.Name
		}
		*mp, *err = nil, &CompileError{Program: name, PC: -1, Msg: fmt.Sprintf("internal error: %v", r)}
	}
}

// checkAndRoute is stages 1 and 2: it checks p against the chip and returns the pipe
// of every instruction.
func checkAndRoute(chip *Chip, p *isa.Program) ([]isa.Pipe, error) {
	if p == nil {
		return nil, &CompileError{PC: -1, Msg: "nil program"}
	}
	if err := checkProgram(chip, p); err != nil {
		return nil, err
	}
	pipes := make([]isa.Pipe, len(p.Body))
	for pc := range p.Body {
		var err error
		if pipes[pc], err = checkInstr(chip, p, pc); err != nil {
			return nil, err
		}
	}
	return pipes, nil
}

// build is stages 3 and 4 for a checked program.
func build(chip *Chip, p *isa.Program, pipes []isa.Pipe) (*MachineProgram, error) {
	allocs, high, err := allocate(chip, p)
	if err != nil {
		return nil, err
	}
	ins := resolveAll(p, allocs, pipes)
	if ins, err = insertSyncs(chip, p.Name, p.Core, ins); err != nil {
		return nil, err
	}
	return machineProgram(chip, p, allocs, high, ins), nil
}

// resolveAll resolves each instruction of p (resolve) on its pipe.
func resolveAll(p *isa.Program, allocs []Allocation, pipes []isa.Pipe) []Instr {
	ins := make([]Instr, len(p.Body))
	for pc, in := range p.Body {
		ins[pc] = resolve(p, allocs, in, pipes[pc], pc)
	}
	return ins
}

// machineProgram is p's machine program for chip, its tiles placed at allocs (each
// buffer used up to high) and its body ins.
func machineProgram(chip *Chip, p *isa.Program, allocs []Allocation, high map[isa.Location]int, ins []Instr) *MachineProgram {
	return &MachineProgram{
		Name:      p.Name,
		Chip:      chip.Name,
		Core:      p.Core,
		Params:    append([]isa.Param(nil), p.Params...),
		Regs:      append([]isa.RegDecl(nil), p.Regs...),
		Tiles:     allocs,
		Instrs:    ins,
		HighWater: high,
	}
}

// resolve replaces tile indices by placements and attaches dtypes to GM views.
func resolve(p *isa.Program, allocs []Allocation, in isa.Instr, pipe isa.Pipe, pc int) Instr {
	out := Instr{Op: in.Op, Mode: in.Mode, Pipe: pipe, Src: pc, Match: -1, Args: make([]Operand, len(in.Args))}
	for i, a := range in.Args {
		o := Operand{Kind: a.Kind, Tile: -1}
		switch a.Kind {
		case isa.KindTile:
			o = tileOperand(allocs, a.Tile)
		case isa.KindGM:
			o.GM, o.DType = a.GM, p.Params[a.GM.Param].DType
		case isa.KindImm:
			o.Imm = a.Imm
		case isa.KindPipe:
			o.Pipe = a.Pipe
		case isa.KindReg:
			o.Reg = a.Reg
		}
		out.Args[i] = o
	}
	return out
}

// tileOperand is the resolved operand of tile t: its placement, shape, layout and
// valid region (a static size of 0 means the whole dimension).
func tileOperand(allocs []Allocation, t int) Operand {
	al := allocs[t]
	d := al.Decl
	o := Operand{Kind: isa.KindTile, Tile: t, Loc: d.Loc, Addr: al.Addr, DType: d.DType, Rows: d.Rows, Cols: d.Cols, Layout: d.Layout,
		ValidRows: d.ValidRows, ValidCols: d.ValidCols, ValidRowsReg: d.ValidRowsReg, ValidColsReg: d.ValidColsReg}
	if o.ValidRows == 0 {
		o.ValidRows = d.Rows
	}
	if o.ValidCols == 0 {
		o.ValidCols = d.Cols
	}
	return o
}
